// SPDX-License-Identifier: Apache-2.0
// How walks end: each stop reason the step loop itself decides, on the x86-64 chain of
// tests/support/unwind_fixtures.hpp with hand-laid stacks.
#include <gtest/gtest.h>

#include "ehbt/unwinder.hpp"
#include "support/unwind_fixtures.hpp"

namespace ehbt {
namespace {

constexpr uint64_t kBias = 0x555555554000;
constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kA = kStack + 0x800;  // where inner's return address sits

class Validation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chain_ = test::build_chain("", test::kX86_64ChainAsm, &why_); }
  void SetUp() override {
    if (!chain_) GTEST_FAIL() << why_;
    modules_.add(test::place_image(chain_->image, kBias, "/synthetic/libchain.so"));
    mem_.add(kStack, std::vector<std::byte>(0x1000));
  }
  uint64_t at(const char* sym) const { return kBias + chain_->built.sym(sym); }
  void put(uint64_t addr, uint64_t v) { ASSERT_TRUE(mem_.write_uint(addr, v, 8, false)); }
  // Frame 0 in inner after its prologue: rbp = A-8, rsp = A-16.
  RegisterSet inner_regs() const {
    RegisterSet regs(Arch::X86_64);
    regs.set_pc(at("inner_body"));
    regs.set(7, kA - 16);
    regs.set(6, kA - 8);
    return regs;
  }
  // The whole chain: inner <- middle <- entry.
  void lay_full_chain() {
    put(kA, at("ret_middle"));
    put(kA + 48, at("ret_entry"));
  }

  static std::optional<test::ChainImage> chain_;
  static std::string why_;
  ModuleSet modules_;
  BufferMemory mem_;
};
std::optional<test::ChainImage> Validation::chain_;
std::string Validation::why_;

TEST_F(Validation, ReturnAddressIntoTheSameFrameIsNoProgress) {
  put(kA - 8, kA - 8);            // the saved rbp points at itself
  put(kA, at("inner_body") + 1);  // and the return address back into inner
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoProgress) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 2u);
  EXPECT_NE(bt.detail.find("does not increase"), std::string::npos) << bt.detail;
}

TEST_F(Validation, ZeroReturnAddressIsOutermost) {
  put(kA, 0);
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.frames[0].cfa, kA + 8);
}

TEST_F(Validation, ReturnAddressOutsideEveryModuleIsBadPc) {
  put(kA, 0x12345678);
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::BadPc) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("0x12345678"), std::string::npos) << bt.detail;
}

TEST_F(Validation, ReturnAddressIntoDataIsBadPc) {
  // The .eh_frame_hdr lies in the read-only, non-executable segment.
  const uint64_t hdr = chain_->built.sym("__GNU_EH_FRAME_HDR");
  ASSERT_NE(hdr, 0u);
  put(kA, kBias + hdr + 8);
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::BadPc) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
}

TEST_F(Validation, NonCanonicalReturnAddressIsBadPc) {
  put(kA, 0x4141414141414141);
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::BadPc) << bt.detail;
}

TEST_F(Validation, StackFaultKeepsTheFramesBefore) {
  // Only inner's part of the stack exists: middle's return address at A+48 is unreadable.
  BufferMemory partial;
  partial.add(kA - 16, std::vector<std::byte>(24));
  ASSERT_TRUE(partial.write_uint(kA, at("ret_middle"), 8, false));
  Backtrace bt = Unwinder().unwind(inner_regs(), partial, modules_);
  EXPECT_EQ(bt.stop, StopReason::MemoryFault) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 2u);
  EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
  EXPECT_EQ(bt.frames[1].cfa, kA + 56);  // computed before the read failed
  char expected[64];
  std::snprintf(expected, sizeof expected, "read of 8 bytes at 0x%llx failed",
                static_cast<unsigned long long>(kA + 48));
  EXPECT_EQ(bt.detail, expected);
}

TEST_F(Validation, MaxFrames) {
  lay_full_chain();
  Limits limits;
  limits.max_frames = 2;
  Backtrace bt = Unwinder(limits).unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::MaxFrames) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 2u);
  limits.max_frames = 3;  // exactly enough: the real end is reported
  bt = Unwinder(limits).unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 3u);
}

TEST_F(Validation, MisalignedCfaIsRejected) {
  lay_full_chain();
  RegisterSet regs = inner_regs();
  regs.set(6, kA - 7);
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::BadUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
}

TEST_F(Validation, FramePointerBelowStackPointerIsNotFollowed) {
  // nocfi (no FDE) with an rbp below its rsp: the fallback refuses it.
  put(kA, at("ret_nocfi"));
  put(kA - 8, kStack + 0x100);  // the rbp inner saved: far below nocfi's rsp
  put(kStack + 0x108, at("ret_middle"));
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 2u);
  EXPECT_NE(bt.detail.find("frame pointer below the stack pointer"), std::string::npos)
      << bt.detail;
}

TEST_F(Validation, PcInNoModuleWithFallbacksOff) {
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(0x1000);
  regs.set(7, kA);
  UnwindOptions strict;
  strict.frame_pointer_fallback = false;
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_, strict);
  EXPECT_EQ(bt.stop, StopReason::NoModule);
  EXPECT_EQ(bt.detail, "0x1000 is in no module");
}

TEST_F(Validation, CallerInAModuleWhoseFileIsMissingIsNoModuleNamingIt) {
  // inner returns into a library the core named but whose file was not found: a module
  // without an image. The walk ends there blaming the missing file, not the tables.
  Module gone;
  gone.path = "/usr/lib/libgone.so.1";
  gone.start = 0x7f0000000000;
  gone.end = 0x7f0000100000;
  gone.bias = gone.start;
  gone.missing = "libgone.so.1 not found (named by the core)";
  modules_.add(gone);
  put(kA, gone.start + 0x1234);
  UnwindOptions strict;
  strict.frame_pointer_fallback = false;
  Backtrace bt = Unwinder().unwind(inner_regs(), mem_, modules_, strict);
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.stop, StopReason::NoModule) << bt.detail;
  EXPECT_EQ(bt.detail,
            "libgone.so.1 not found (named by the core); at 0x7f0000001233 (libgone.so.1+0x1233)");
  // With the heuristics on, the frame pointer (inner's saved rbp, 0) cannot be followed
  // either: the same cause is named first.
  Backtrace fp = Unwinder().unwind(inner_regs(), mem_, modules_);
  EXPECT_EQ(fp.stop, StopReason::NoModule) << fp.detail;
  EXPECT_EQ(fp.detail.rfind("libgone.so.1 not found (named by the core); at ", 0), 0u) << fp.detail;
}

TEST_F(Validation, StopNames) {
  EXPECT_EQ(to_string(StopReason::Outermost), "outermost");
  EXPECT_EQ(to_string(StopReason::MaxFrames), "max_frames");
  EXPECT_EQ(to_string(StopReason::NoModule), "no_module");
  EXPECT_EQ(to_string(StopReason::NoUnwindInfo), "no_unwind_info");
  EXPECT_EQ(to_string(StopReason::MemoryFault), "memory_fault");
  EXPECT_EQ(to_string(StopReason::BadUnwindInfo), "bad_unwind_info");
  EXPECT_EQ(to_string(StopReason::Unsupported), "unsupported");
  EXPECT_EQ(to_string(StopReason::NoProgress), "no_progress");
  EXPECT_EQ(to_string(StopReason::BadPc), "bad_pc");
  EXPECT_EQ(to_string(FrameSource::Context), "context");
  EXPECT_EQ(to_string(FrameSource::EhFrame), "eh_frame");
  EXPECT_EQ(to_string(FrameSource::DebugFrame), "debug_frame");
  EXPECT_EQ(to_string(FrameSource::SFrame), "sframe");
  EXPECT_EQ(to_string(FrameSource::Signal), "signal");
  EXPECT_EQ(to_string(FrameSource::FramePointer), "frame_pointer");
  EXPECT_EQ(to_string(FrameSource::Scan), "scan");
  EXPECT_EQ(to_string(FrameSource::GoPclntab), "go_pclntab");
}

}  // namespace
}  // namespace ehbt
