// SPDX-License-Identifier: Apache-2.0
// Walks from code no symbol and no table covers (unwind/validate.hpp, rule 2 for an unnamed
// callee), on assembled x86-64 code with stacks laid word by word: a return address after a
// call through a register is the caller only where the frame above it proves it by its own
// table (a direct call to it, or that frame's table ending the walk), else the scan stops there
// rather than hand a later word the frame (a frame record's word is the frame's own); and a
// stale return address of a direct call to a function below one the walk already proved is passed
// over (unwind/known_starts.hpp). Expected frames follow from the code's construction.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"
#include "support/unwind_fixtures.hpp"
#include "util/hex.hpp"

namespace ehbt {
namespace {

// ind_outer (CFI, outermost) -> ind_caller (CFI, 8 bytes of locals) -> `call *%rax`.
// thread_start (CFI, outermost, as glibc's clone3) and via_register (CFI, not outermost) call
// through a register, ind_caller say.
// anon1, anon2 and anon3 are code no function symbol covers (global labels without a type or a
// size name none): anon3 calls anon1, then anon2; anon_outer (CFI, outermost) calls anon3.
constexpr const char* kUnnamedAsm = R"(
	.text
	.globl ind_outer, ret_ind_outer, ind_caller, ret_ind
	.globl anon1, anon2, anon2_body, anon3, ret_anon3_1, ret_anon3_2, anon_outer, ret_anon_outer
	.globl thread_start, ret_thread_start, via_register, ret_via_register
	.skip 16, 0x90  # the call decoder reads 8 bytes before a return address
	.type ind_outer,@function
ind_outer:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call ind_caller
ret_ind_outer:
	hlt
	.cfi_endproc
	.size ind_outer, .-ind_outer

	.type ind_caller,@function
ind_caller:
	.cfi_startproc
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call *%rax
ret_ind:
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size ind_caller, .-ind_caller

anon1:
	ret
anon2:
	nop
anon2_body:
	nop
	ret
anon3:
	subq $8, %rsp
	call anon1
ret_anon3_1:
	call anon2
ret_anon3_2:
	addq $8, %rsp
	ret

	.type thread_start,@function
thread_start:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call *%rdx
ret_thread_start:
	hlt
	.cfi_endproc
	.size thread_start, .-thread_start

	.type via_register,@function
via_register:
	.cfi_startproc
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call *%rdx
ret_via_register:
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size via_register, .-via_register

	.type anon_outer,@function
anon_outer:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call anon3
ret_anon_outer:
	hlt
	.cfi_endproc
	.size anon_outer, .-anon_outer
)";

constexpr uint64_t kBias = 0x555555554000;
constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kS = kStack + 0x800;  // frame 0's sp

class UnnamedCallee : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chain_ = test::build_chain("", kUnnamedAsm, &why_); }
  void SetUp() override {
    if (!chain_) GTEST_FAIL() << why_;
    modules_.add(test::place_image(chain_->image, kBias, "/synthetic/unnamed"));
    mem_.add(kStack, std::vector<std::byte>(0x1000));
  }
  uint64_t at(const char* sym) const { return kBias + chain_->built.sym(sym); }
  void put(uint64_t addr, uint64_t v) { ASSERT_TRUE(mem_.write_uint(addr, v, 8, false)); }
  // Frame 0 in anon2 (no symbol, no table: nothing says where its function starts).
  Backtrace walk(uint64_t rbp = 0) {
    RegisterSet regs(Arch::X86_64);
    regs.set_pc(at("anon2_body"));
    regs.set(7, kS);
    regs.set(6, rbp);
    return Unwinder().unwind(regs, mem_, modules_);
  }
  std::vector<uint64_t> pcs(const Backtrace& bt) const {
    std::vector<uint64_t> out;
    for (const Frame& f : bt.frames) out.push_back(f.pc);
    return out;
  }

  static std::optional<test::ChainImage> chain_;
  static std::string why_;
  ModuleSet modules_;
  BufferMemory mem_;
};
std::optional<test::ChainImage> UnnamedCallee::chain_;
std::string UnnamedCallee::why_;

TEST_F(UnnamedCallee, ScanTakesAnIndirectCallersWordWhereItsTableProvesIt) {
  // ret_ind at kS + 8 (ind_caller's frame: sp kS + 16, CFA kS + 32); its table reads
  // ret_ind_outer at kS + 24, after a direct call to ind_caller: the frame above proves it.
  put(kS + 8, at("ret_ind"));
  put(kS + 24, at("ret_ind_outer"));
  Backtrace bt = walk();
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  EXPECT_EQ(pcs(bt), (std::vector<uint64_t>{at("anon2_body"), at("ret_ind"), at("ret_ind_outer")}));
  EXPECT_EQ(bt.frames[1].source, FrameSource::Scan);
  EXPECT_EQ(bt.frames[0].cfa, kS + 16);
}

TEST_F(UnnamedCallee, ScanStopsAtAnIndirectCallersWordNothingProves) {
  // The same word, but ind_caller's table reads code after no call at kS + 24: ret_ind may be a
  // stale word of some call through a register. Above it, ret_anon3_2 follows a direct call to
  // anon2, which the unnamed-callee rule alone would take: the scan stops instead.
  put(kS + 8, at("ret_ind"));
  put(kS + 24, at("anon2_body"));
  put(kS + 32, at("ret_anon3_2"));
  Backtrace bt = walk();
  EXPECT_EQ(pcs(bt), std::vector<uint64_t>{at("anon2_body")}) << bt.detail;
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("scan: cannot prove " + util::hex(at("ret_ind")) +
                           " on the stack: the call at " + util::hex(at("ret_ind") - 2) +
                           " goes through a register"),
            std::string::npos)
      << bt.detail;
}

TEST_F(UnnamedCallee, AFrameAboveCalledThroughARegisterProvesByEndingTheWalk) {
  // ind_caller's table reads ret_thread_start at kS + 24, after thread_start's call through a
  // register (glibc's clone3 calling start_thread): no direct call proves it, but thread_start's
  // own table ends the walk right there (its return address undefined).
  put(kS + 8, at("ret_ind"));
  put(kS + 24, at("ret_thread_start"));
  Backtrace bt = walk();
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  EXPECT_EQ(pcs(bt),
            (std::vector<uint64_t>{at("anon2_body"), at("ret_ind"), at("ret_thread_start")}));

  // via_register's table does not end there: it reads a zero return address at kS + 40, which
  // from a stack pointer the scan guessed proves no end. ret_ind stays unproven: the scan stops.
  put(kS + 24, at("ret_via_register"));
  bt = walk();
  EXPECT_EQ(pcs(bt), std::vector<uint64_t>{at("anon2_body")}) << bt.detail;
  EXPECT_NE(bt.detail.find("scan: cannot prove " + util::hex(at("ret_ind"))), std::string::npos)
      << bt.detail;
}

TEST_F(UnnamedCallee, FramePointerRecordTiesACallThroughARegisterToItsFrame) {
  // rbp -> the record {0, ret_ind} at kS + 0x10: ind_caller's frame at sp kS + 0x20, its table
  // reading its return address at kS + 0x28.
  put(kS + 0x10, 0);
  put(kS + 0x18, at("ret_ind"));
  put(kS + 0x28, at("ret_ind_outer"));
  Backtrace bt = walk(kS + 0x10);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  EXPECT_EQ(pcs(bt), (std::vector<uint64_t>{at("anon2_body"), at("ret_ind"), at("ret_ind_outer")}));
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);

  // The frame above proves nothing now (code after no call at kS + 0x28): the record alone
  // ties ret_ind to this frame, as a call through a register is taken where the callee's start
  // is known. The scan, which has no record, stops at the same word (the test above).
  put(kS + 0x28, at("anon2_body"));
  bt = walk(kS + 0x10);
  ASSERT_GE(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_ind")) << bt.detail;
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
}

TEST_F(UnnamedCallee, AStartTheWalkProvedDisprovesAStaleCallBelowIt) {
  // anon2's caller: ret_anon3_2 at kS, after a direct call to anon2, which the walk then knows
  // as a function start. anon3's frame (sp kS + 8) holds in its locals ret_anon3_1, after a
  // direct call to anon1 (below anon2, so below the pc in anon3 by less than
  // Limits::max_function_bytes: the unnamed-callee rule alone would take it), then anon3's
  // return address into anon_outer at kS + 16.
  put(kS, at("ret_anon3_2"));
  put(kS + 8, at("ret_anon3_1"));
  put(kS + 16, at("ret_anon_outer"));
  Backtrace bt = walk();
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  EXPECT_EQ(pcs(bt),
            (std::vector<uint64_t>{at("anon2_body"), at("ret_anon3_2"), at("ret_anon_outer")}));
  EXPECT_EQ(bt.frames[1].cfa, kS + 24);

  // One step at a time (Unwinder::step keeps no history), anon3's step takes the stale word.
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("ret_anon3_2"));
  regs.set(7, kS + 8);
  regs.set(6, 0);
  Frame anon3;
  anon3.pc = at("ret_anon3_2");
  anon3.regs = regs;
  anon3.source = FrameSource::Scan;
  anon3.module = modules_.find(anon3.pc - 1);
  auto step = Unwinder().step(anon3, mem_, modules_);
  ASSERT_TRUE(step) << step.error().detail;
  EXPECT_EQ(step->caller.pc, at("ret_anon3_1"));
}

}  // namespace
}  // namespace ehbt
