// SPDX-License-Identifier: Apache-2.0
// Fault injection over the fixture cores (cores/out/<arch>/*.core, made by
// cores/make-cores.sh): every thread of every core is unwound through FaultyMemory, failing
// every Nth read (N Fibonacci up to 89) or making every read short. Each walk must end with a
// typed stop reason, and every frame produced before the first failed read must equal the
// fault-free walk's frame (pc, and the CFA once the next step has finished).
//
// Where the first failure falls is known from a fault-free walk done step by step through a
// read-counting memory: the step loop makes the same reads in the same order as unwind(), so
// frame i is settled once reads_after[i] reads have been made.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"

namespace {

namespace fs = std::filesystem;

fs::path cores_dir() {
  if (const char* env = std::getenv("EHBT_CORES_DIR")) return env;
  return fs::path(EHBT_SOURCE_DIR) / "cores" / "out";
}

// The value of a top-level "key": "string" in an expected.json (null or absent -> "").
std::string json_string(const std::string& text, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  auto at = text.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  if (text.compare(at, 1, "\"") != 0) return "";
  auto end = text.find('"', at + 1);
  return end == std::string::npos ? "" : text.substr(at + 1, end - at - 1);
}

struct Fixture {
  fs::path core;
  ehbt::TargetOptions options;
};

std::vector<Fixture> fixture_cores() {
  std::vector<Fixture> out;
  std::error_code ec;
  for (const auto& arch_dir : fs::directory_iterator(cores_dir(), ec)) {
    for (const auto& entry : fs::directory_iterator(arch_dir.path(), ec)) {
      if (entry.path().extension() != ".core") continue;
      Fixture f;
      f.core = entry.path();
      fs::path expected = entry.path();
      expected.replace_extension(".expected.json");
      std::ifstream in(expected);
      std::stringstream text;
      text << in.rdbuf();
      // As cores_expect.default_args: the sysroot, and --exe only for a moved executable.
      const std::string sysroot = json_string(text.str(), "sysroot");
      if (!sysroot.empty()) f.options.sysroots.push_back(sysroot);
      const std::string exe = json_string(text.str(), "exe"),
                        file = json_string(text.str(), "exe_file");
      if (!file.empty() && file != exe) f.options.exe = file;
      out.push_back(std::move(f));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Fixture& a, const Fixture& b) { return a.core < b.core; });
  return out;
}

// Counts reads; never fails one.
class CountingMemory final : public ehbt::Memory {
 public:
  explicit CountingMemory(ehbt::Memory& inner) : inner_(inner) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    ++reads_;
    return inner_.read(addr, out);
  }
  uint64_t reads() const { return reads_; }

 private:
  ehbt::Memory& inner_;
  uint64_t reads_ = 0;
};

bool typed(ehbt::StopReason r) {
  switch (r) {
    case ehbt::StopReason::Outermost:
    case ehbt::StopReason::MaxFrames:
    case ehbt::StopReason::NoModule:
    case ehbt::StopReason::NoUnwindInfo:
    case ehbt::StopReason::MemoryFault:
    case ehbt::StopReason::BadUnwindInfo:
    case ehbt::StopReason::Unsupported:
    case ehbt::StopReason::NoProgress:
    case ehbt::StopReason::BadPc:
      return true;
  }
  return false;
}

constexpr uint32_t kMaxFrames = 256;  // the overflow core recurses deeply

TEST(RobustFaultInjection, EveryFixtureCoreEveryThreadEveryFaultRate) {
  const fs::path x86 = cores_dir() / "x86_64";
  ASSERT_TRUE(fs::is_directory(x86))
      << "fixture cores missing: " << x86 << " does not exist; run cores/make-cores.sh x86_64";
  const std::vector<Fixture> fixtures = fixture_cores();
  ASSERT_FALSE(fixtures.empty()) << "no *.core under " << cores_dir();

  const uint64_t rates[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
  ehbt::Limits limits;
  limits.max_frames = kMaxFrames;
  const ehbt::Unwinder unwinder(limits);
  size_t walks = 0, threads = 0, checked_frames = 0;
  for (const Fixture& fx : fixtures) {
    SCOPED_TRACE(fx.core.string());
    auto target = ehbt::open_core(fx.core.string(), fx.options);
    ASSERT_TRUE(target.has_value()) << target.error();
    ehbt::Target& t = **target;
    for (const ehbt::ThreadState& th : t.threads()) {
      SCOPED_TRACE("tid " + std::to_string(th.tid));
      ++threads;
      // Fault-free, step by step, counting reads.
      CountingMemory counting(t.memory());
      std::vector<ehbt::Frame> ref{unwinder.first_frame(th.regs, t.modules())};
      std::vector<uint64_t> reads_after{0};
      while (ref.size() < kMaxFrames) {
        auto step = unwinder.step(ref.back(), counting, t.modules());
        if (!step) break;
        ref.back().cfa = step->cfa;
        ref.push_back(step->caller);
        reads_after.push_back(counting.reads());
      }
      // The step loop and unwind() agree when nothing fails (unwind() may stop earlier on a
      // CFA that does not increase; the prefix must match).
      const ehbt::Backtrace clean = unwinder.unwind(th.regs, t.memory(), t.modules());
      ASSERT_TRUE(typed(clean.stop));
      ASSERT_LE(clean.frames.size(), ref.size());
      for (size_t i = 0; i < clean.frames.size(); ++i)
        ASSERT_EQ(clean.frames[i].pc, ref[i].pc) << i;

      for (bool short_reads : {false, true}) {
        for (uint64_t n : short_reads ? std::vector<uint64_t>{0}
                                      : std::vector<uint64_t>(std::begin(rates), std::end(rates))) {
          SCOPED_TRACE((short_reads ? "short reads" : "fail every " + std::to_string(n)));
          ehbt::FaultyMemory faulty(t.memory(), n, short_reads);
          const ehbt::Backtrace bt = unwinder.unwind(th.regs, faulty, t.modules());
          ++walks;
          EXPECT_TRUE(typed(bt.stop)) << static_cast<int>(bt.stop);
          ASSERT_FALSE(bt.frames.empty());
          // Frames settled before the first failed (or short) read: read #n, or #1.
          const uint64_t first_bad = short_reads ? 1 : n;
          size_t settled = 0;  // frames [0, settled] have their pc; [0, settled) their CFA
          while (settled + 1 < reads_after.size() && settled + 1 < clean.frames.size() &&
                 reads_after[settled + 1] < first_bad)
            ++settled;
          ASSERT_GT(bt.frames.size(), settled) << "stopped (" << ehbt::to_string(bt.stop) << ": "
                                               << bt.detail << ") before the first failed read";
          for (size_t i = 0; i <= settled; ++i) {
            EXPECT_EQ(bt.frames[i].pc, clean.frames[i].pc) << "frame " << i;
            if (i < settled) {
              EXPECT_EQ(bt.frames[i].cfa, clean.frames[i].cfa) << "frame " << i;
            }
            ++checked_frames;
          }
        }
      }
    }
  }
  std::printf("fault injection: %zu cores, %zu threads, %zu faulty walks, %zu frames compared\n",
              fixtures.size(), threads, walks, checked_frames);
}

}  // namespace
