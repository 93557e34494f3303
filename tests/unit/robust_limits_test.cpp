// SPDX-License-Identifier: Apache-2.0
// Caps of ehbt::Limits that no other test reaches, hit with real inputs: max_modules on a
// fixture core (the module set stops growing at the cap, the walk still runs), max_frames
// on a fixture core (the walk stops there with MaxFrames and the frames it has are the
// expected ones, from GDB's record in <core>.expected.json), max_threads and
// max_file_mappings on fixture cores, and max_program_headers on ELF headers in target
// memory (including one claiming 4 GiB of them).
// Already covered elsewhere (grep tests/unit for max_): the CFI, expression, record, index,
// search-probe, image-byte and symbol caps, and max_frames on synthetic stacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/target_elf.hpp"
#include "ehbt/core.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/unwinder.hpp"

namespace {

namespace fs = std::filesystem;

fs::path x86_cores() {
  if (const char* env = std::getenv("EHBT_CORES_DIR")) return fs::path(env) / "x86_64";
  return fs::path(EHBT_SOURCE_DIR) / "cores" / "out" / "x86_64";
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

TEST(RobustLimits, MaxThreadsKeepsTheFirstThreadsOfAFixtureCore) {
  const fs::path dir = x86_cores();
  ASSERT_TRUE(fs::is_directory(dir))
      << "fixture cores missing: " << dir << " (run cores/make-cores.sh x86_64)";
  const std::string core = (dir / "threads.core").string();
  auto full = ehbt::open_core(core);
  ASSERT_TRUE(full.has_value()) << full.error();
  const auto& all = (*full)->threads();
  ASSERT_GE(all.size(), 3u) << "the threads fixture has a crashing thread and workers";
  for (uint32_t cap : {1u, 2u}) {
    ehbt::TargetOptions options;
    options.limits.max_threads = cap;
    auto capped = ehbt::open_core(core, options);
    ASSERT_TRUE(capped.has_value()) << "cap " << cap << ": " << capped.error();
    const auto& kept = (*capped)->threads();
    ASSERT_EQ(kept.size(), cap);
    for (uint32_t i = 0; i < cap; ++i) EXPECT_EQ(kept[i].tid, all[i].tid) << "thread " << i;
  }
}

TEST(RobustLimits, MaxFileMappingsBoundsWhatNtFileGives) {
  const fs::path dir = x86_cores();
  ASSERT_TRUE(fs::is_directory(dir))
      << "fixture cores missing: " << dir << " (run cores/make-cores.sh x86_64)";
  const std::string core = (dir / "chain.core").string();
  auto full = ehbt::open_core(core);
  ASSERT_TRUE(full.has_value()) << full.error();
  ehbt::TargetOptions none;
  none.limits.max_file_mappings = 0;
  auto capped = ehbt::open_core(core, none);
  ASSERT_TRUE(capped.has_value()) << capped.error();
  // Without NT_FILE the link_map walk still finds the modules: the same pcs resolve.
  const ehbt::ThreadState& th = (*capped)->threads()[(*capped)->crashing_thread()];
  const ehbt::Module* m = (*capped)->modules().find(th.regs.pc());
  const ehbt::Module* want = (*full)->modules().find(th.regs.pc());
  ASSERT_NE(want, nullptr);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->bias, want->bias);
}

// A 64-byte ELF64 header at 0x1000 claiming `phnum` program headers of `entsize` bytes at
// 0x1040, followed by `real` PT_LOAD entries (the rest of what it claims is not there).
ehbt::BufferMemory elf_in_memory(uint16_t phnum, uint16_t entsize, unsigned real) {
  std::vector<std::byte> b(64 + size_t{real} * entsize);
  auto put = [&](size_t off, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) b[off + i] = std::byte((v >> (8 * i)) & 0xff);
  };
  put(0, 0x464c457f, 4);
  b[4] = std::byte{2};  // ELFCLASS64
  b[5] = std::byte{1};  // little-endian
  put(16, 3, 2);        // ET_DYN
  put(18, 62, 2);       // EM_X86_64
  put(32, 64, 8);       // e_phoff
  put(54, entsize, 2);  // e_phentsize
  put(56, phnum, 2);    // e_phnum
  for (unsigned i = 0; i < real; ++i) {
    const size_t p = 64 + size_t{i} * entsize;
    put(p, 1, 4);                // PT_LOAD
    put(p + 16, 0x1000 * i, 8);  // p_vaddr
    put(p + 40, 0x1000, 8);      // p_memsz
  }
  ehbt::BufferMemory mem;
  mem.add(0x1000, std::move(b));
  return mem;
}

TEST(RobustLimits, MaxProgramHeadersInTargetMemory) {
  using ehbt::core::read_target_elf;
  // Two real entries, 56 or 64 bytes apart: read at the stated stride, within the cap.
  for (uint16_t entsize : {56, 64}) {
    ehbt::BufferMemory mem = elf_in_memory(2, entsize, 2);
    auto elf = read_target_elf(mem, 0x1000, false, 8, 2);
    ASSERT_TRUE(elf.has_value()) << entsize;
    EXPECT_EQ(elf->loads.size(), 2u);
    EXPECT_FALSE(read_target_elf(mem, 0x1000, false, 8, 1).has_value()) << "over the cap";
  }
  // The fuzzer's find: 65534 headers of 65535 bytes claimed, two present. Refused by the cap,
  // and under a cap that allows it, by the first header that is not there -- either way
  // without ever holding more than one header.
  ehbt::BufferMemory bomb = elf_in_memory(0xfffe, 0xffff, 2);
  EXPECT_FALSE(read_target_elf(bomb, 0x1000, false, 8, ehbt::Limits{}.max_program_headers));
  EXPECT_FALSE(read_target_elf(bomb, 0x1000, false, 8, 0xffff));
}

}  // namespace
