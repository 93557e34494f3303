// SPDX-License-Identifier: Apache-2.0
// Caps of ehbt::Limits that no other test reaches, hit with real inputs: max_modules on a
// fixture core (the module set stops growing at the cap, the walk still runs) and max_frames
// on a fixture core (the walk stops there with MaxFrames and the frames it has are the
// expected ones, from GDB's record in <core>.expected.json).
// Already covered elsewhere (grep tests/unit for max_): the CFI, expression, record, index,
// search-probe, image-byte and symbol caps, and max_frames on synthetic stacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"

namespace {

namespace fs = std::filesystem;

fs::path x86_cores() {
  if (const char* env = std::getenv("EHBT_CORES_DIR")) return fs::path(env) / "x86_64";
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "cores" / "out" / "x86_64";
}

// The "pc" values of the first thread of an expected.json, in order (GDB's frames).
std::vector<uint64_t> expected_pcs(const fs::path& json) {
  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<uint64_t> pcs;
  const auto second_thread = text.find("\"tid\"", text.find("\"tid\"") + 1);
  for (auto at = text.find("\"pc\": \""); at != std::string::npos && at < second_thread;
       at = text.find("\"pc\": \"", at + 1)) {
    pcs.push_back(std::stoull(text.substr(at + 7, 18), nullptr, 16));
  }
  return pcs;
}

TEST(RobustLimits, MaxFramesStopsAFixtureCoreWalk) {
  const fs::path dir = x86_cores();
  ASSERT_TRUE(fs::is_directory(dir))
      << "fixture cores missing: " << dir << " (run cores/make-cores.sh x86_64)";
  const std::vector<uint64_t> gdb = expected_pcs(dir / "chain.expected.json");
  ASSERT_GE(gdb.size(), 4u) << "chain.expected.json: expected at least 4 frames";
  for (uint32_t cap : {1u, 2u, 3u}) {
    ehbt::TargetOptions options;
    options.limits.max_frames = cap;
    auto target = ehbt::open_core((dir / "chain.core").string(), options);
    ASSERT_TRUE(target.has_value()) << target.error();
    const ehbt::Target& t = **target;
    const ehbt::ThreadState& th = t.threads()[t.crashing_thread()];
    ehbt::Unwinder unwinder(options.limits);
    const ehbt::Backtrace bt = unwinder.unwind(th.regs, (*target)->memory(), t.modules());
    EXPECT_EQ(bt.stop, ehbt::StopReason::MaxFrames) << "cap " << cap << ": " << bt.detail;
    ASSERT_EQ(bt.frames.size(), cap);
    for (uint32_t i = 0; i < cap; ++i) EXPECT_EQ(bt.frames[i].pc, gdb[i]) << "frame " << i;
  }
  // Without the cap the same walk goes past it.
  auto target = ehbt::open_core((dir / "chain.core").string());
  ASSERT_TRUE(target.has_value());
  const ehbt::ThreadState& th = (*target)->threads()[(*target)->crashing_thread()];
  const ehbt::Backtrace full =
      ehbt::Unwinder().unwind(th.regs, (*target)->memory(), (*target)->modules());
  EXPECT_GT(full.frames.size(), 3u);
  EXPECT_NE(full.stop, ehbt::StopReason::MaxFrames);
}

TEST(RobustLimits, MaxModulesCapsTheModuleSetOfAFixtureCore) {
  const fs::path dir = x86_cores();
  ASSERT_TRUE(fs::is_directory(dir))
      << "fixture cores missing: " << dir << " (run cores/make-cores.sh x86_64)";
  const std::string core = (dir / "chain.core").string();
  auto full = ehbt::open_core(core);
  ASSERT_TRUE(full.has_value()) << full.error();
  // chain is a dynamically linked PIE: itself, ld.so, libc and the vdso at least.
  const size_t all = (*full)->modules().modules().size();
  ASSERT_GE(all, 3u);
  for (uint32_t cap : {1u, 2u}) {
    ehbt::TargetOptions options;
    options.limits.max_modules = cap;
    auto capped = ehbt::open_core(core, options);
    ASSERT_TRUE(capped.has_value()) << "cap " << cap << ": " << capped.error();
    EXPECT_LE((*capped)->modules().modules().size(), cap) << "cap " << cap;
    // The walk still works with what it has: frame 0 and a typed stop, no crash.
    const ehbt::Target& t = **capped;
    const ehbt::Backtrace bt =
        ehbt::Unwinder(options.limits)
            .unwind(t.threads()[t.crashing_thread()].regs, (*capped)->memory(), t.modules());
    ASSERT_FALSE(bt.frames.empty());
    EXPECT_EQ(bt.frames[0].pc, t.threads()[t.crashing_thread()].regs.pc());
  }
}

}  // namespace
