// SPDX-License-Identifier: Apache-2.0
// The proof of a frame found without a table (unwind/validate.hpp), on assembled x86-64 code:
// a return address after a call or after none, a direct call to the callee, to another
// function, to a PLT-less chain of tail jumps within and beyond Limits::max_tail_jumps, a call
// through a register to a callee whose start nothing says, a call's target below a function
// start the walk knows (unwind/known_starts.hpp), code nobody can read, and a caller CFA below
// the callee's sp or outside the stack. Expected outcomes follow from the code's construction.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arch/arch_ops.hpp"
#include "support/unwind_fixtures.hpp"
#include "unwind/known_starts.hpp"
#include "unwind/validate.hpp"
#include "util/hex.hpp"

namespace ehbt {
namespace {

// Each caller_* calls something and its ret_* label is the return address; hop reaches callee
// by one tail jump at the end of its body; t1..t5 are a chain of five jumps to callee.
constexpr const char* kValidateAsm = R"(
	.text
	.globl caller_direct, ret_direct, caller_wrong, ret_wrong, caller_hop, ret_hop
	.globl caller_chain, ret_chain, caller_indirect, ret_indirect, no_call, after_nop
	.globl callee, other, hop, t1, t2, t3, t4, t5, caller_jumper, ret_jumper, jumper
	.globl caller_got, ret_got
	.skip 16, 0x90  # the call decoder reads 8 bytes before a return address
	.type caller_direct,@function
caller_direct:
	call callee
ret_direct:
	ret
	.size caller_direct, .-caller_direct

	.type caller_wrong,@function
caller_wrong:
	call other
ret_wrong:
	ret
	.size caller_wrong, .-caller_wrong

	.type caller_hop,@function
caller_hop:
	call hop
ret_hop:
	ret
	.size caller_hop, .-caller_hop

	.type caller_chain,@function
caller_chain:
	call t1
ret_chain:
	ret
	.size caller_chain, .-caller_chain

	.type caller_indirect,@function
caller_indirect:
	call *%rax
ret_indirect:
	ret
	.size caller_indirect, .-caller_indirect

	.type no_call,@function
no_call:
	nop
	nop
	nop
	nop
	nop
after_nop:
	ret
	.size no_call, .-no_call

	.type hop,@function
hop:
	movl $1, %eax
	testl %eax, %eax
	jmp callee
	.size hop, .-hop

	.type t1,@function
t1:	jmp t2
	.size t1, .-t1
	.type t2,@function
t2:	jmp t3
	.size t2, .-t2
	.type t3,@function
t3:	jmp t4
	.size t3, .-t3
	.type t4,@function
t4:	jmp t5
	.size t4, .-t4
	.type t5,@function
t5:	jmp callee
	.size t5, .-t5

	.type callee,@function
callee:
	ret
	.size callee, .-callee

	.type other,@function
other:
	ret
	.size other, .-other

	.type caller_jumper,@function
caller_jumper:
	call jumper
ret_jumper:
	ret
	.size caller_jumper, .-caller_jumper

	.type jumper,@function
jumper:
	jmp *%rax
	.size jumper, .-jumper

	.type caller_got,@function
caller_got:
	call *got_slot(%rip)
ret_got:
	ret
	.size caller_got, .-caller_got

	.data
	.p2align 3
got_slot:  # a GOT entry: the file holds it unrelocated, target memory the function's address
	.quad 0
)";

constexpr uint64_t kBias = 0x555555554000;
constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kSp = kStack + 0x800;

class Validate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chain_ = test::build_chain("", kValidateAsm, &why_); }
  void SetUp() override {
    if (!chain_) GTEST_FAIL() << why_;
    modules_.add(test::place_image(chain_->image, kBias, "/synthetic/validate"));
    mem_.add(kStack, std::vector<std::byte>(0x1000));
  }
  uint64_t at(const char* sym) const { return kBias + chain_->built.sym(sym); }

  // What the proof says of caller pc `ra` with CFA `cfa`, for a callee at `callee`'s start
  // (its pc `callee_pc`, by default that start).
  // `known`: the function starts the walk has learnt; `target`: set to the proving call's.
  std::optional<unwind::Disproof> check(uint64_t ra, std::optional<uint64_t> callee,
                                        uint64_t cfa = kSp + 16, uint64_t callee_pc = 0,
                                        const unwind::KnownStarts* known = nullptr,
                                        uint64_t* target = nullptr) {
    const unwind::ScanContext ctx{arch::arch_ops(Arch::X86_64), mem_, modules_, limits_, known};
    const uint64_t pc = callee_pc != 0 ? callee_pc : callee.value_or(0);
    return unwind::disprove_caller(ctx, unwind::Callee{kSp, pc, callee}, ra, cfa, target);
  }

  static std::optional<test::ChainImage> chain_;
  static std::string why_;
  ModuleSet modules_;
  BufferMemory mem_;
  Limits limits_;
};
std::optional<test::ChainImage> Validate::chain_;
std::string Validate::why_;

TEST_F(Validate, ReturnAddressAfterADirectCallToTheCallee) {
  EXPECT_EQ(check(at("ret_direct"), at("callee")), std::nullopt);
  // Without the callee's start (no symbol, no table), the call's target is taken as that
  // start: a pc in `other` may be its callee, a pc in `callee` (placed before `other`) not.
  EXPECT_EQ(check(at("ret_wrong"), std::nullopt, kSp + 16, at("other")), std::nullopt);
  auto stale = check(at("ret_wrong"), std::nullopt, kSp + 16, at("callee"));
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->failure, unwind::ProofFailure::WrongTarget);
  EXPECT_NE(
      stale->detail.find("goes to " + util::hex(at("other")) +
                         ", which cannot start the function of pc " + util::hex(at("callee"))),
      std::string::npos)
      << stale->detail;
  // ... nor one more than Limits::max_function_bytes above the target.
  limits_.max_function_bytes = 1;
  EXPECT_TRUE(check(at("ret_wrong"), std::nullopt, kSp + 16, at("other") + 1));
  // An indirect call cannot name its target: where the callee's start is known, the call
  // alone is the proof.
  EXPECT_EQ(check(at("ret_indirect"), at("callee")), std::nullopt);
}

TEST_F(Validate, IndirectCallToAnUnnamedCalleeIsNoProof) {
  // Nothing says where the function of pc `other` starts: a call through a register ties
  // nothing to it (a stale return address of any indirect call would pass).
  auto no = check(at("ret_indirect"), std::nullopt, kSp + 16, at("other"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::IndirectCall);
  EXPECT_NE(no->detail.find("the call at " + util::hex(at("ret_indirect") - 2) +
                            " goes through a register, and nothing says where the function of "
                            "pc " +
                            util::hex(at("other")) + " starts"),
            std::string::npos)
      << no->detail;
  // A callee in no module (JIT code, which its callers reach through a register): taken.
  EXPECT_EQ(check(at("ret_indirect"), std::nullopt, kSp + 16, 0x10000000), std::nullopt);
}

TEST_F(Validate, ACallThroughAGotSlotCallsWhatTheSlotHolds) {
  // `call *got_slot(%rip)`: in the file the slot holds 0 (unrelocated), so the call is one
  // through memory nothing resolves.
  const uint64_t pc = at("other");
  auto no = check(at("ret_got"), std::nullopt, kSp + 16, pc);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::IndirectCall);
  // In target memory it holds callee's address: a direct call to callee, below the pc.
  mem_.add(at("got_slot"), std::vector<std::byte>(8));
  ASSERT_TRUE(mem_.write_uint(at("got_slot"), at("callee"), 8, false));
  uint64_t target = 0;
  EXPECT_EQ(check(at("ret_got"), std::nullopt, kSp + 16, pc, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, at("callee"));
  // The slot's value only proves: one that cannot be the callee's function (above its pc: a
  // pointer written since the call) leaves the call undecidable, not disproven.
  ASSERT_TRUE(mem_.write_uint(at("got_slot"), at("jumper"), 8, false));
  no = check(at("ret_got"), std::nullopt, kSp + 16, pc);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::IndirectCall);
  // With the callee's start known the call alone proves, as any indirect call; the slot's
  // value is reported as the target only where it leads there (`other` does not: it returns).
  ASSERT_TRUE(mem_.write_uint(at("got_slot"), at("other"), 8, false));
  target = 1;
  EXPECT_EQ(check(at("ret_got"), at("callee"), kSp + 16, 0, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, 0u);
  ASSERT_TRUE(mem_.write_uint(at("got_slot"), at("callee"), 8, false));
  EXPECT_EQ(check(at("ret_got"), at("callee"), kSp + 16, 0, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, at("callee"));
}

TEST_F(Validate, TheProvingCallsTargetIsReported) {
  uint64_t target = 1;
  EXPECT_EQ(check(at("ret_direct"), at("callee"), kSp + 16, 0, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, at("callee"));
  EXPECT_EQ(check(at("ret_hop"), at("callee"), kSp + 16, 0, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, at("hop"));  // the call's target, where the tail jump starts
  // Through a register: proven (the callee's start is known), but no start learnt.
  EXPECT_EQ(check(at("ret_indirect"), at("callee"), kSp + 16, 0, nullptr, &target), std::nullopt);
  EXPECT_EQ(target, 0u);
  target = 1;
  EXPECT_TRUE(check(at("ret_wrong"), at("callee"), kSp + 16, 0, nullptr, &target));
  EXPECT_EQ(target, 0u);  // disproven: nothing learnt either
}

TEST_F(Validate, AKnownStartBetweenTheTargetAndThePcDisproves) {
  // callee < other < jumper in the code above. ret_direct follows a call to callee; for an
  // unnamed callee at jumper's pc that target alone passes (below the pc, within the bound).
  const uint64_t pc = at("jumper");
  unwind::KnownStarts none;
  EXPECT_EQ(check(at("ret_direct"), std::nullopt, kSp + 16, pc, &none), std::nullopt);
  // A function the walk knows starts at `other`: the function at callee ends before it, so
  // before the pc.
  unwind::KnownStarts known;
  known.add(at("other"), limits_);
  auto no = check(at("ret_direct"), std::nullopt, kSp + 16, pc, &known);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::WrongTarget);
  EXPECT_NE(no->detail.find("goes to " + util::hex(at("callee")) + ", below " +
                            util::hex(at("other")) + ", where a function starts"),
            std::string::npos)
      << no->detail;
  // The bounds: a start at the target itself, or above the pc, says nothing; one at the pc
  // itself does (the callee's function starts there, not at the target).
  unwind::KnownStarts at_target, above_pc, at_pc;
  at_target.add(at("callee"), limits_);
  above_pc.add(pc + 1, limits_);
  at_pc.add(pc, limits_);
  EXPECT_EQ(check(at("ret_direct"), std::nullopt, kSp + 16, pc, &at_target), std::nullopt);
  EXPECT_EQ(check(at("ret_direct"), std::nullopt, kSp + 16, pc, &above_pc), std::nullopt);
  EXPECT_TRUE(check(at("ret_direct"), std::nullopt, kSp + 16, pc, &at_pc));
  // Where the callee's start is known, the known starts play no part.
  EXPECT_EQ(check(at("ret_direct"), at("callee"), kSp + 16, pc, &known), std::nullopt);
}

TEST(KnownStarts, SortedDistinctAndCapped) {
  Limits two;
  two.max_known_starts = 2;
  unwind::KnownStarts known;
  known.add(0, two);  // no start
  EXPECT_EQ(known.size(), 0u);
  known.add(0x3000, two);
  known.add(0x1000, two);
  known.add(0x3000, two);  // already known
  EXPECT_EQ(known.size(), 2u);
  known.add(0x2000, two);  // past the cap: not kept
  EXPECT_EQ(known.size(), 2u);
  EXPECT_EQ(known.between(0x1800, 0x2800), std::nullopt);
  // lo < s <= hi, the lowest such s.
  EXPECT_EQ(known.between(0x0fff, 0x1000), 0x1000u);
  EXPECT_EQ(known.between(0x1000, 0x2fff), std::nullopt);
  EXPECT_EQ(known.between(0x0, 0x4000), 0x1000u);
  EXPECT_EQ(known.between(0x1000, 0x4000), 0x3000u);
  EXPECT_EQ(known.between(0x3000, ~uint64_t{0}), std::nullopt);
  // The default cap holds a walk's worth: one start per frame (Limits::max_frames).
  EXPECT_GE(Limits{}.max_known_starts, Limits{}.max_frames);
}

TEST_F(Validate, NoCallBeforeTheCallerPc) {
  auto no = check(at("after_nop"), at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::NoCallBefore);
  // A function's first instruction (what the bogus frame-pointer frame was) is no return
  // address either: `ret` of the function before it ends there.
  no = check(at("callee"), at("other"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::NoCallBefore);
}

TEST_F(Validate, DirectCallToAnotherFunction) {
  auto no = check(at("ret_wrong"), at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::WrongTarget);
  EXPECT_NE(no->detail.find("goes to " + util::hex(at("other"))), std::string::npos) << no->detail;
}

TEST_F(Validate, TailJumpChainWithinAndBeyondTheCap) {
  // hop's body ends in `jmp callee`: one link.
  EXPECT_EQ(check(at("ret_hop"), at("callee")), std::nullopt);
  // t1 -> t2 -> t3 -> t4 -> t5 -> callee: five jumps.
  limits_.max_tail_jumps = 5;
  EXPECT_EQ(check(at("ret_chain"), at("callee")), std::nullopt);
  limits_.max_tail_jumps = 4;
  auto no = check(at("ret_chain"), at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::WrongTarget);
  // t4 is three jumps from t1: within the cap of 4.
  EXPECT_EQ(check(at("ret_chain"), at("t4")), std::nullopt);
  // The functions searched are capped too.
  limits_.max_tail_jumps = 5;
  limits_.max_tail_jump_functions = 3;
  no = check(at("ret_chain"), at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::WrongTarget);
}

TEST_F(Validate, RegisterJumpProvesNothingButAnotherModuleDoes) {
  // jumper ends in `jmp *%rax`: it may reach any function of its own module.
  EXPECT_EQ(check(at("ret_jumper"), at("callee")), std::nullopt);
  // The same code placed a second time: a direct call in that copy goes to its own jumper,
  // and nothing but an import (a PLT stub, a pointer) leaves a module for another.
  constexpr uint64_t kOther = 0x7f0000000000;
  modules_.add(test::place_image(chain_->image, kOther, "/synthetic/validate-copy"));
  const uint64_t ret_in_copy = kOther + chain_->built.sym("ret_jumper");
  auto no = check(ret_in_copy, at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::WrongTarget);
  EXPECT_NE(no->detail.find("another module"), std::string::npos) << no->detail;
}

TEST_F(Validate, CodeNobodyCanRead) {
  // No module, no memory: the bytes before the caller pc cannot be read.
  auto no = check(0x10000020, at("callee"));
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::CodeUnreadable);
  // The same code in a module without a file and not in memory.
  ModuleSet fileless;
  Module m;
  m.start = kBias;
  m.end = kBias + 0x10000;
  m.missing = "validate not found";
  fileless.add(std::move(m));
  const unwind::ScanContext ctx{arch::arch_ops(Arch::X86_64), mem_, fileless, limits_};
  no = unwind::disprove_caller(ctx, unwind::Callee{kSp, at("callee"), at("callee")},
                               at("ret_direct"), kSp + 16);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::CodeUnreadable);
  EXPECT_NE(no->detail.find("validate not found"), std::string::npos) << no->detail;
}

TEST_F(Validate, CallerCfaMustLieAboveTheCalleeInTheStack) {
  // Equal is allowed: at a function's entry with the return address in a register (aarch64,
  // s390x) the CFA is the stack pointer.
  EXPECT_EQ(check(at("ret_direct"), at("callee"), kSp), std::nullopt);
  auto no = check(at("ret_direct"), at("callee"), kSp - 64);  // below
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::StackOrder);
  no = check(at("ret_direct"), at("callee"), kStack + 0x2000);  // past the stack's end
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::StackOrder);
  EXPECT_EQ(check(at("ret_direct"), at("callee"), kStack + 0x1000), std::nullopt);  // its top
}

TEST_F(Validate, CallerCfaMustLieInTheCalleesStackMapping) {
  // Two mappings, contiguous and both readable: the callee's sp is in the first, whose end
  // bounds its caller's CFA (a CFA may be the end itself: the frame's top word is below it).
  mem_.add_region(kStack, kSp + 0x10);
  mem_.add_region(kSp + 0x10, kStack + 0x1000);
  EXPECT_EQ(check(at("ret_direct"), at("callee"), kSp + 0x10), std::nullopt);
  auto no = check(at("ret_direct"), at("callee"), kSp + 0x18);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->failure, unwind::ProofFailure::StackOrder);
  EXPECT_NE(no->detail.find("is outside the stack mapping [" + util::hex(kStack) + ", " +
                            util::hex(kSp + 0x10) + ") of the stack pointer " + util::hex(kSp)),
            std::string::npos)
      << no->detail;
}

}  // namespace
}  // namespace ehbt
