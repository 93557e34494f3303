// SPDX-License-Identifier: Apache-2.0
// Synthetic walks, one per architecture: a real shared object assembled from the chains in
// tests/support/unwind_fixtures.hpp (built with the native or cross gcc at test time), placed
// at a bias, and a stack laid out by hand the way those prologues would leave it. Expected
// pcs come from `nm`; expected CFAs and registers follow from the prologues alone.
#include <gtest/gtest.h>

#include "ehbt/unwinder.hpp"
#include "support/unwind_fixtures.hpp"

namespace ehbt {
namespace {

using test::kBias;
using test::kStack;
using Stack = test::SyntheticStack;

// ---------------------------------------------------------------------------------- x86-64

using X86_64Chain = test::ChainTest<test::kNativePrefix, &test::kX86_64ChainAsm>;

TEST_F(X86_64Chain, WalksToTheOutermostFrame) {
  // inner: push rbp; mov rsp,rbp; push r13 -> rbp = A-8, rsp = A-16, return address at A.
  const uint64_t a = kStack + 0x800;
  Stack s(false);
  s.put(a - 16, 0x1313);       // inner's saved r13
  s.put(a - 8, 0x6666);        // inner's saved rbp
  s.put(a, at("ret_middle"));  // inner's return address
  // middle: push rbx, push r12, sub 24, call -> CFA = A + 8 + 48.
  s.put(a + 32, 0x1212);           // middle's saved r12 (CFA-24)
  s.put(a + 40, 0x3333);           // middle's saved rbx (CFA-16)
  s.put(a + 48, at("ret_entry"));  // middle's return address (CFA-8)

  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("inner_body"));
  regs.set(7, a - 16);  // rsp
  regs.set(6, a - 8);   // rbp
  regs.set(3, 0xb0b0);  // rbx
  regs.set(12, 0xc0c0);
  regs.set(13, 0xdead);
  regs.set(0, 1);  // rax: caller-saved

  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u) << bt.detail;

  EXPECT_EQ(bt.frames[0].pc, at("inner_body"));
  EXPECT_EQ(bt.frames[0].source, FrameSource::Context);
  EXPECT_EQ(bt.frames[0].cfa, a + 8);

  const Frame& middle = bt.frames[1];
  EXPECT_EQ(middle.pc, at("ret_middle"));
  EXPECT_EQ(middle.source, FrameSource::EhFrame);
  EXPECT_FALSE(middle.exact_pc);
  EXPECT_EQ(middle.cfa, a + 56);
  EXPECT_EQ(middle.regs.get(7), a + 8);  // rsp = inner's CFA
  EXPECT_EQ(middle.regs.get(6), 0x6666u);
  EXPECT_EQ(middle.regs.get(13), 0x1313u);
  EXPECT_EQ(middle.regs.get(3), 0xb0b0u);   // same value
  EXPECT_EQ(middle.regs.get(12), 0xc0c0u);  // same value
  EXPECT_FALSE(middle.regs.has(0));         // rax is unknown in callers
  ASSERT_NE(middle.module, nullptr);
  EXPECT_EQ(middle.module->path, "/synthetic/libchain.so");

  const Frame& entry = bt.frames[2];
  EXPECT_EQ(entry.pc, at("ret_entry"));
  EXPECT_EQ(entry.regs.get(7), a + 56);
  EXPECT_EQ(entry.regs.get(3), 0x3333u);
  EXPECT_EQ(entry.regs.get(12), 0x1212u);
  EXPECT_EQ(entry.regs.get(6), 0x6666u);
  EXPECT_EQ(entry.cfa, a + 72);  // entry: sub 8 + the return address
}

// UnwindOptions::keep_registers off (what the CLI asks for): the walk keeps registers only
// for the frame it steps and its caller, and the frames it returns are the same records --
// through an .eh_frame step, a frame-pointer step and back -- with no register sets.
TEST_F(X86_64Chain, WalkWithoutRegistersFindsTheSameFrames) {
  const uint64_t a = kStack + 0x800;
  const uint64_t nocfi_rbp = a + 8;
  Stack s(false);
  s.put(a - 16, 0x1313);
  s.put(a - 8, nocfi_rbp);
  s.put(a, at("ret_nocfi"));
  s.put(nocfi_rbp, 0x5555);
  s.put(nocfi_rbp + 8, at("ret_middle_fp"));
  s.put(a + 48, 0x1212);
  s.put(a + 56, 0x3333);
  s.put(a + 64, at("ret_entry"));

  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("inner_body"));
  regs.set(7, a - 16);
  regs.set(6, a - 8);

  UnwindOptions lean;
  lean.keep_registers = false;
  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_, lean);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 4u) << bt.detail;
  const uint64_t pcs[] = {at("inner_body"), at("ret_nocfi"), at("ret_middle_fp"), at("ret_entry")};
  const uint64_t cfas[] = {a + 8, a + 24, a + 72, a + 88};
  const FrameSource sources[] = {FrameSource::Context, FrameSource::EhFrame,
                                 FrameSource::FramePointer, FrameSource::EhFrame};
  for (std::size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(bt.frames[i].pc, pcs[i]);
    EXPECT_EQ(bt.frames[i].cfa, cfas[i]);
    EXPECT_EQ(bt.frames[i].source, sources[i]);
    EXPECT_EQ(bt.frames[i].exact_pc, i == 0);
    ASSERT_NE(bt.frames[i].module, nullptr);
    EXPECT_TRUE(bt.frames[i].regs.empty());
    EXPECT_FALSE(bt.frames[i].regs.has(7));
  }
  // A record is tens of bytes: the registers are not stored inline.
  static_assert(sizeof(Frame) <= 64);

  // The default keeps every frame's registers, as before.
  Backtrace full = Unwinder().unwind(regs, s.mem, modules_);
  ASSERT_EQ(full.frames.size(), 4u) << full.detail;
  EXPECT_EQ(full.frames[2].regs.get(6), 0x5555u);
  EXPECT_EQ(full.frames[3].regs.get(3), 0x3333u);
}

TEST_F(X86_64Chain, FramePointerFallbackWhereNoFdeCovers) {
  // inner called from nocfi (no FDE), nocfi from middle_fp, middle_fp "called" from entry.
  const uint64_t a = kStack + 0x800;
  const uint64_t nocfi_rbp = a + 8;  // nocfi: push rbp; mov rsp,rbp; call -> rbp = A + 8
  Stack s(false);
  s.put(a - 16, 0x1313);
  s.put(a - 8, nocfi_rbp);  // inner saved nocfi's rbp
  s.put(a, at("ret_nocfi"));
  s.put(nocfi_rbp, 0x5555);  // nocfi saved middle's rbp
  s.put(nocfi_rbp + 8, at("ret_middle_fp"));
  // middle's frame: rsp = nocfi's CFA = A + 24, CFA = A + 72.
  s.put(a + 48, 0x1212);
  s.put(a + 56, 0x3333);
  s.put(a + 64, at("ret_entry"));

  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("inner_body"));
  regs.set(7, a - 16);
  regs.set(6, a - 8);

  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 4u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_nocfi"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::EhFrame);
  EXPECT_EQ(bt.frames[1].cfa, a + 24);
  EXPECT_EQ(bt.frames[2].pc, at("ret_middle_fp"));
  EXPECT_EQ(bt.frames[2].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.frames[2].regs.get(6), 0x5555u);
  EXPECT_EQ(bt.frames[2].cfa, a + 72);
  EXPECT_EQ(bt.frames[3].pc, at("ret_entry"));
  EXPECT_EQ(bt.frames[3].source, FrameSource::EhFrame);
  EXPECT_EQ(bt.frames[3].regs.get(3), 0x3333u);

  // Without the fallback the walk stops at nocfi, saying where.
  UnwindOptions strict;
  strict.frame_pointer_fallback = false;
  Backtrace cut = Unwinder().unwind(regs, s.mem, modules_, strict);
  EXPECT_EQ(cut.stop, StopReason::NoUnwindInfo);
  EXPECT_EQ(cut.frames.size(), 2u);
  EXPECT_NE(cut.detail.find("no FDE for"), std::string::npos) << cut.detail;
  EXPECT_NE(cut.detail.find("libchain.so+0x"), std::string::npos) << cut.detail;
}

TEST_F(X86_64Chain, FramePointerOnlyWalk) {
  // Frame-pointer preference: inner's rbp chain alone (inner does keep a frame pointer).
  const uint64_t a = kStack + 0x800;
  Stack s(false);
  s.put(a - 8, 0);  // the chain ends: saved rbp 0
  s.put(a, at("ret_middle"));
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("inner_body"));
  regs.set(7, a - 16);
  regs.set(6, a - 8);
  UnwindOptions fp;
  fp.source = SourcePreference::FramePointer;
  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_, fp);
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;  // rbp 0 ends the chain
}

TEST_F(X86_64Chain, CallThroughBadPointerUsesEntryRule) {
  // Frame 0 at pc 0 (a call through a null pointer): the return address is at [rsp].
  const uint64_t a = kStack + 0x800;
  Stack s(false);
  s.put(a, at("ret_middle"));
  s.put(a + 48, at("ret_entry"));
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(0);
  regs.set(7, a);
  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u) << bt.detail;
  EXPECT_EQ(bt.frames[0].pc, 0u);
  EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::Scan);
  EXPECT_EQ(bt.frames[2].pc, at("ret_entry"));
}

// --------------------------------------------------------------------------------- aarch64

using AArch64Chain = test::ChainTest<test::kAArch64Prefix, &test::kAArch64ChainAsm>;

TEST_F(AArch64Chain, StripsSignedReturnAddress) {
  const uint64_t s0 = kStack + 0x800;          // inner's sp
  const uint64_t m = s0 + 16;                  // middle's sp = inner's CFA
  const uint64_t pac = 0x5a3c000000000000ull;  // a pointer-authentication code in bits 48-63
  Stack s(false);
  s.put(s0 + 8, 0xa20);                 // inner's saved x20 (CFA-8)
  s.put(m, 0x29a);                      // middle's saved x29 (CFA-32)
  s.put(m + 8, pac | at("ret_entry"));  // middle's signed x30 (CFA-24)
  s.put(m + 16, 0x19a);                 // middle's saved x19 (CFA-16)

  RegisterSet regs(Arch::AArch64);
  regs.set_pc(at("inner_body"));
  regs.set(31, s0);
  regs.set(30, at("ret_middle"));  // leaf: the return address is still in x30
  regs.set(29, 0x2929);
  regs.set(20, 0x2020);
  regs.set(19, 0x1919);
  regs.set(0, 7);

  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u) << bt.detail;
  EXPECT_EQ(bt.frames[0].cfa, m);

  const Frame& middle = bt.frames[1];
  EXPECT_EQ(middle.pc, at("ret_middle"));
  EXPECT_EQ(middle.regs.get(31), m);
  EXPECT_EQ(middle.regs.get(20), 0xa20u);
  EXPECT_EQ(middle.regs.get(19), 0x1919u);
  EXPECT_EQ(middle.regs.get(29), 0x2929u);
  EXPECT_FALSE(middle.regs.has(0));
  EXPECT_EQ(middle.cfa, m + 32);

  const Frame& entry = bt.frames[2];
  EXPECT_EQ(entry.pc, at("ret_entry"));  // PAC bits gone
  EXPECT_EQ(entry.source, FrameSource::EhFrame);
  EXPECT_EQ(entry.regs.get(31), m + 32);
  EXPECT_EQ(entry.regs.get(19), 0x19au);
  EXPECT_EQ(entry.regs.get(29), 0x29au);
  EXPECT_EQ(entry.cfa, m + 48);
}

// ----------------------------------------------------------------------------------- s390x

using S390xChain = test::ChainTest<test::kS390xPrefix, &test::kS390xChainAsm>;

TEST_F(S390xChain, CfaIsCallerSpPlus160) {
  const uint64_t sp = kStack + 0x400;  // middle's r15 after `aghi %r15,-160`
  const uint64_t entry_sp = sp + 160;  // middle's caller's r15
  Stack s(true);
  // stmg %r6,%r15,48(%r15) ran with r15 = entry_sp: rN lands at entry_sp + 48 + 8*(N-6).
  s.put(entry_sp + 48, 0x606);
  s.put(entry_sp + 88, 0xb0b);
  s.put(entry_sp + 112, at("ret_entry"));
  s.put(entry_sp + 120, entry_sp);

  RegisterSet regs(Arch::S390x);
  regs.set_pc(at("inner"));
  regs.set(15, sp);
  regs.set(14, at("ret_middle"));
  regs.set(6, 0x66);
  regs.set(11, 0xbb);
  regs.set(2, 0x22);

  Backtrace bt = Unwinder().unwind(regs, s.mem, modules_);
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u) << bt.detail;
  EXPECT_EQ(bt.frames[0].cfa, sp + 160);  // a leaf: CFA = r15 + 160

  const Frame& middle = bt.frames[1];
  EXPECT_EQ(middle.pc, at("ret_middle"));
  EXPECT_EQ(middle.regs.get(15), sp);
  EXPECT_EQ(middle.regs.get(6), 0x66u);
  EXPECT_EQ(middle.regs.get(11), 0xbbu);
  EXPECT_FALSE(middle.regs.has(2));
  EXPECT_EQ(middle.cfa, entry_sp + 160);  // the caller's r15 + 160

  const Frame& entry = bt.frames[2];
  EXPECT_EQ(entry.pc, at("ret_entry"));
  EXPECT_EQ(entry.regs.get(15), entry_sp);
  EXPECT_EQ(entry.regs.get(14), at("ret_entry"));
  EXPECT_EQ(entry.regs.get(6), 0x606u);
  EXPECT_EQ(entry.regs.get(11), 0xb0bu);
  EXPECT_EQ(entry.cfa, entry_sp + 320);
}

TEST_F(S390xChain, BackchainFallback) {
  // A frame in no FDE's range (pc inside the module but outside every function) with a
  // backchain: [r15] = caller's r15, saved r14 at caller's r15 + 112.
  const uint64_t sp = kStack + 0x400;
  const uint64_t caller_sp = sp + 0x100;
  Stack s(true);
  s.put(sp, caller_sp);
  s.put(caller_sp + 112, at("ret_middle"));
  RegisterSet regs(Arch::S390x);
  regs.set_pc(at("inner") + 4);  // just past inner's FDE
  regs.set(15, sp);
  Limits two;
  two.max_frames = 2;
  Backtrace bt = Unwinder(two).unwind(regs, s.mem, modules_);
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
  EXPECT_EQ(bt.frames[1].regs.get(15), caller_sp);
  EXPECT_EQ(bt.frames[0].cfa, caller_sp + 160);
}

}  // namespace
}  // namespace ehbt
