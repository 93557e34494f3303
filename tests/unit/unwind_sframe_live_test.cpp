// SPDX-License-Identifier: Apache-2.0
// Live, in-process unwinding on x86-64 through SFrame tables converted in memory from every
// module's .eh_frame (UnwindOptions::sframe_from_eh_frame), checked against glibc's
// backtrace() (libgcc's DWARF unwinder) taken at the same point. The chain of
// tests/support/unwind_live_chain.* includes a function gcc realigns through a DRAP register:
// V3 expresses it, V2 cannot (an SFrame-only walk stops there, saying why; Auto falls back
// to .eh_frame for that one frame).
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <execinfo.h>
#include <ucontext.h>

#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"
#include "support/unwind_live_chain.hpp"
#include "support/unwind_live_self.hpp"

namespace ehbt {
namespace {

UnwindOptions converted(SourcePreference source, uint8_t version) {
  UnwindOptions o;
  o.source = source;
  o.sframe_from_eh_frame = true;
  o.sframe_version = version;
  return o;
}

struct Capture {
  const ModuleSet* modules = nullptr;
  std::vector<uint64_t> expected;  // glibc backtrace()
  Backtrace v3;                    // SFrame only, V3
  Backtrace v2;                    // SFrame only, V2
  Backtrace v2_auto;               // Auto, V2
};

// Everything happens here, while the frames above are still live.
__attribute__((noinline)) void capture_here(void* arg) {
  Capture* c = static_cast<Capture*>(arg);
  ucontext_t uc;
  getcontext(&uc);
  void* pcs[256];
  int n = backtrace(pcs, 256);
  c->expected.assign(n, 0);
  for (int i = 0; i < n; ++i) c->expected[i] = reinterpret_cast<uint64_t>(pcs[i]);
  SelfMemory self;
  Unwinder unwinder;
  const RegisterSet regs = test::regs_from(uc);
  c->v3 = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::SFrame, 3));
  c->v2 = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::SFrame, 2));
  c->v2_auto = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::Auto, 2));
  asm volatile("" : : : "memory");
}

class LiveSFrame : public test::LiveChainTest<Capture> {
 protected:
  // Every frame an SFrame-only walk found is tagged sframe, or signal for what the kernel's
  // signal frame gave.
  static void expect_sframe_tags(const Backtrace& bt) {
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      const FrameSource s = bt.frames[i].source;
      EXPECT_TRUE(s == FrameSource::SFrame || s == FrameSource::Signal)
          << "frame " << i << ": " << to_string(s);
    }
  }
  // V2 SFrame-only: the walk reaches the DRAP function (ehbt_live_c_drap) as backtrace()
  // does, and stops there because V2 cannot express its CFA (gcc builds only).
  void expect_v2_stops_at_drap(const Backtrace& bt) {
    if (!ehbt_live_chain_uses_drap) {
      // The C half was not built by gcc: no DRAP function, V2 expresses every frame.
      expect_same_as_backtrace(bt);
      return;
    }
    ASSERT_GE(bt.frames.size(), 2u) << test::dump(bt);
    const std::size_t shift = test::backtrace_shift(capture_.expected, bt);
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      ASSERT_LT(i + shift, capture_.expected.size());
      EXPECT_EQ(bt.frames[i].pc, capture_.expected[i + shift]) << "frame " << i;
    }
    EXPECT_EQ(test::symbol_of(bt.frames.back()), "ehbt_live_c_drap") << test::dump(bt);
    EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << test::dump(bt);
    EXPECT_NE(bt.detail.find("not expressible in SFrame V2"), std::string::npos) << bt.detail;
    EXPECT_LT(bt.frames.size() + shift, capture_.expected.size());
  }
};

TEST_F(LiveSFrame, ChainMatchesGlibcBacktrace) {
  test::capture_in_chain(capture_here, &capture_);
  {
    SCOPED_TRACE("V3, SFrame only");
    expect_same_as_backtrace(capture_.v3);
    expect_sframe_tags(capture_.v3);
    for (const Frame& f : capture_.v3.frames) EXPECT_FALSE(f.signal_trampoline);
  }
  {
    SCOPED_TRACE("V2, Auto");
    expect_same_as_backtrace(capture_.v2_auto);
    // The DRAP function's caller is the one frame .eh_frame gives.
    std::size_t eh = 0;
    for (std::size_t i = 1; i < capture_.v2_auto.frames.size(); ++i) {
      if (capture_.v2_auto.frames[i].source == FrameSource::EhFrame) {
        ++eh;
        if (ehbt_live_chain_uses_drap) {
          EXPECT_EQ(test::symbol_of(capture_.v2_auto.frames[i - 1]), "ehbt_live_c_drap");
        }
      } else {
        EXPECT_EQ(capture_.v2_auto.frames[i].source, FrameSource::SFrame) << "frame " << i;
      }
    }
    EXPECT_EQ(eh, ehbt_live_chain_uses_drap ? 1u : 0u) << test::dump(capture_.v2_auto);
  }
  {
    SCOPED_TRACE("V2, SFrame only");
    expect_sframe_tags(capture_.v2);
    expect_v2_stops_at_drap(capture_.v2);
  }
}

TEST_F(LiveSFrame, ThroughSignalHandler) {
  ASSERT_TRUE(test::capture_in_chain_through_signal(capture_here, &capture_));

  SCOPED_TRACE("V3, SFrame only");
  expect_same_as_backtrace(capture_.v3);
  expect_sframe_tags(capture_.v3);
  // SFrame cannot describe __restore_rt: the trampoline is stepped by its bytes, and the
  // interrupted frame comes from the kernel's signal frame.
  std::size_t tramp = 0;
  for (std::size_t i = 0; i < capture_.v3.frames.size(); ++i) {
    if (capture_.v3.frames[i].signal_trampoline) tramp = i;
  }
  ASSERT_GT(tramp, 0u) << test::dump(capture_.v3);
  ASSERT_GT(capture_.v3.frames.size(), tramp + 1);
  EXPECT_EQ(capture_.v3.frames[tramp + 1].source, FrameSource::Signal);
  EXPECT_TRUE(capture_.v3.frames[tramp + 1].exact_pc);
}

}  // namespace
}  // namespace ehbt

#else
TEST(LiveSFrame, OnlyOnX86_64) {
  GTEST_SKIP() << "live unwinding tests run on x86-64 Linux";
}
#endif
