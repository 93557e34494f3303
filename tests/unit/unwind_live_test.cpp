// SPDX-License-Identifier: Apache-2.0
// Live, in-process unwinding on x86-64, checked against glibc's backtrace() (libgcc's
// unwinder) taken at the same point: the chain of tests/support/unwind_live_chain.* (C and
// C++, -O2 -fomit-frame-pointer, one DRAP function), plain and through a signal handler.
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"
#include "support/unwind_live_chain.hpp"
#include "support/unwind_live_self.hpp"
#include "support/unwind_toolchain.hpp"

namespace ehbt {
namespace {

// Refuses reads that touch [start, start + size): hides a trampoline's code bytes.
class HidingMemory final : public Memory {
 public:
  HidingMemory(Memory& inner, uint64_t start, uint64_t size)
      : inner_(inner), start_(start), size_(size) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    if (addr < start_ + size_ && addr + out.size() > start_) return 0;
    return inner_.read(addr, out);
  }

 private:
  Memory& inner_;
  uint64_t start_, size_;
};

struct Capture {
  const ModuleSet* modules = nullptr;
  std::vector<uint64_t> expected;  // glibc backtrace()
  Backtrace bt;
  Backtrace bt_fde;  // the signal case again, with the trampoline's bytes hidden
};

// Everything happens here, while the frames above are still live.
__attribute__((noinline)) void capture_here(void* arg) {
  Capture* c = static_cast<Capture*>(arg);
  ucontext_t uc;
  getcontext(&uc);
  void* pcs[256];
  int n = backtrace(pcs, 256);
  c->expected.clear();
  for (int i = 0; i < n; ++i) c->expected.push_back(reinterpret_cast<uint64_t>(pcs[i]));
  SelfMemory self;
  Unwinder unwinder;
  const RegisterSet regs = test::regs_from(uc);
  c->bt = unwinder.unwind(regs, self, *c->modules);
  for (const Frame& f : c->bt.frames) {
    if (!f.signal_trampoline) continue;
    HidingMemory hidden(self, f.pc, 16);
    c->bt_fde = unwinder.unwind(regs, hidden, *c->modules);
  }
  asm volatile("" : : : "memory");
}

using Live = test::LiveChainTest<Capture>;

TEST_F(Live, ChainMatchesGlibcBacktrace) {
  test::capture_in_chain(capture_here, &capture_);
  expect_same_as_backtrace(capture_.bt);
  for (std::size_t i = 1; i < capture_.bt.frames.size(); ++i) {
    EXPECT_EQ(capture_.bt.frames[i].source, FrameSource::EhFrame) << "frame " << i;
    EXPECT_FALSE(capture_.bt.frames[i].exact_pc);
  }
  // CFAs strictly increase along the walk.
  for (std::size_t i = 1; i < capture_.bt.frames.size(); ++i) {
    EXPECT_GT(capture_.bt.frames[i].cfa, capture_.bt.frames[i - 1].cfa) << "frame " << i;
  }
}

TEST_F(Live, ThroughSignalHandler) {
  ASSERT_TRUE(test::capture_in_chain_through_signal(capture_here, &capture_));

  expect_same_as_backtrace(capture_.bt);
  std::size_t tramp = 0;
  for (std::size_t i = 0; i < capture_.bt.frames.size(); ++i) {
    if (capture_.bt.frames[i].signal_trampoline) {
      EXPECT_EQ(tramp, 0u) << "two trampolines";
      tramp = i;
    }
  }
  ASSERT_GT(tramp, 0u) << "no frame was recognised as the sigreturn trampoline";
  const Frame& interrupted = capture_.bt.frames[tramp + 1];
  EXPECT_EQ(interrupted.source, FrameSource::Signal);
  EXPECT_TRUE(interrupted.exact_pc);

  // The same walk when the trampoline's bytes cannot be read: glibc's FDE for __restore_rt
  // (CFA = [rsp + 160], registers by expression) must give the same frames.
  expect_same_as_backtrace(capture_.bt_fde);
  ASSERT_GT(capture_.bt_fde.frames.size(), tramp + 1);
  EXPECT_TRUE(capture_.bt_fde.frames[tramp].signal_trampoline);
  EXPECT_EQ(capture_.bt_fde.frames[tramp + 1].source, FrameSource::EhFrame);
  EXPECT_TRUE(capture_.bt_fde.frames[tramp + 1].exact_pc);
  EXPECT_EQ(capture_.bt_fde.frames[tramp].cfa, capture_.bt.frames[tramp].cfa);
}

TEST_F(Live, DrapFunctionIsRealignedThroughR10) {
  // Guards the chain: ehbt_live_c_drap must really use a DRAP register, or the walk above
  // proves nothing about def_cfa_expression.
  auto dis =
      test::run_capture("objdump -d --no-show-raw-insn --disassemble=ehbt_live_c_drap /proc/" +
                        std::to_string(getpid()) + "/exe 2>/dev/null");
  if (!dis) GTEST_FAIL() << "objdump not available";
  EXPECT_NE(dis->find("and    $0xffffffffffffffc0,%rsp"), std::string::npos) << *dis;
  if (!ehbt_live_chain_uses_drap) GTEST_SKIP() << "the C half was not built by gcc: no DRAP";
  EXPECT_NE(dis->find("lea    0x8(%rsp),%r10"), std::string::npos) << *dis;
  auto frames = test::run_capture("readelf --debug-dump=frames /proc/" + std::to_string(getpid()) +
                                  "/exe 2>/dev/null");
  if (!frames) GTEST_FAIL() << "readelf not available";
  EXPECT_NE(frames->find("DW_CFA_def_cfa_expression"), std::string::npos);
}

}  // namespace
}  // namespace ehbt

#else
TEST(Live, OnlyOnX86_64) {
  GTEST_SKIP() << "live unwinding tests run on x86-64 Linux";
}
#endif
