// SPDX-License-Identifier: Apache-2.0
// Hand-written assembly with explicit CFI for the synthetic unwinding tests, one chain per
// architecture: entry (return address undefined: the outermost frame) -> middle (saves
// callee-saved registers) -> inner (frame 0). Global labels mark the return sites, so `nm`
// gives every expected pc.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"
#include "support/unwind_toolchain.hpp"

namespace ehbt::test {

// x86-64. inner keeps a frame pointer (CFA = rbp + 16); middle is rsp-based; nocfi has a
// frame pointer and no FDE at all (for the frame-pointer fallback), called by middle_fp.
// .Lentry_end and .Linner_end mark where those functions end, for tables encoded by hand after the
// chain.
inline constexpr const char* kX86_64ChainAsm = R"(
	.text
	.globl entry, middle, inner, inner_body, ret_entry, ret_middle, nocfi, ret_nocfi
	.type entry,@function
entry:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call middle
ret_entry:
	hlt
	.cfi_endproc
	.size entry, .-entry
.Lentry_end:

	.type middle,@function
middle:
	.cfi_startproc
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -16
	pushq %r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset r12, -24
	subq $24, %rsp
	.cfi_adjust_cfa_offset 24
	call inner
ret_middle:
	addq $24, %rsp
	.cfi_adjust_cfa_offset -24
	popq %r12
	.cfi_adjust_cfa_offset -8
	popq %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size middle, .-middle

	.type inner,@function
inner:
	.cfi_startproc
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	pushq %r13
	.cfi_offset r13, -24
inner_body:
	nop
	popq %r13
	popq %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size inner, .-inner
.Linner_end:

	.type nocfi,@function
nocfi:
	pushq %rbp
	movq %rsp, %rbp
	call inner
ret_nocfi:
	popq %rbp
	ret
	.size nocfi, .-nocfi

	// middle's frame (the same CFI) calling nocfi, for walks where the frame-pointer
	// fallback must prove that nocfi's caller called it (unwind/validate.hpp).
	.globl middle_fp, ret_middle_fp
	.type middle_fp,@function
middle_fp:
	.cfi_startproc
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -16
	pushq %r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset r12, -24
	subq $24, %rsp
	.cfi_adjust_cfa_offset 24
	call nocfi
ret_middle_fp:
	addq $24, %rsp
	.cfi_adjust_cfa_offset -24
	popq %r12
	.cfi_adjust_cfa_offset -8
	popq %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size middle_fp, .-middle_fp
)";

// aarch64. middle signs its return address (paciasp = hint #25) and says so with
// .cfi_negate_ra_state; inner is a leaf whose return address stays in x30.
inline constexpr const char* kAArch64ChainAsm = R"(
	.text
	.globl entry, middle, inner, inner_body, ret_entry, ret_middle
	.type entry,%function
entry:
	.cfi_startproc
	.cfi_undefined x30
	stp x29, x30, [sp, -16]!
	.cfi_def_cfa_offset 16
	bl middle
ret_entry:
	brk #0
	.cfi_endproc
	.size entry, .-entry

	.type middle,%function
middle:
	.cfi_startproc
	hint #25
	.cfi_negate_ra_state
	stp x29, x30, [sp, -32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	str x19, [sp, 16]
	.cfi_offset 19, -16
	bl inner
ret_middle:
	ldr x19, [sp, 16]
	ldp x29, x30, [sp], 32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	hint #29
	.cfi_negate_ra_state
	ret
	.cfi_endproc
	.size middle, .-middle

	.type inner,%function
inner:
	.cfi_startproc
	sub sp, sp, #16
	.cfi_def_cfa_offset 16
	str x20, [sp, 8]
	.cfi_offset 20, -8
inner_body:
	nop
	ldr x20, [sp, 8]
	add sp, sp, 16
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size inner, .-inner
)";

// s390x. middle saves r6-r15 into its caller's register save area (stmg at 48(%r15)) and
// allocates 160 bytes; inner is a leaf with no frame (return address in r14).
inline constexpr const char* kS390xChainAsm = R"(
	.text
	.globl entry, middle, inner, ret_entry, ret_middle
	.type entry,@function
entry:
	.cfi_startproc
	.cfi_undefined 14
	aghi %r15,-160
	.cfi_adjust_cfa_offset 160
	brasl %r14,middle
ret_entry:
	j ret_entry
	.cfi_endproc
	.size entry, .-entry

	.type middle,@function
middle:
	.cfi_startproc
	stmg %r6,%r15,48(%r15)
	.cfi_offset 6, -112
	.cfi_offset 11, -72
	.cfi_offset 14, -48
	.cfi_offset 15, -40
	aghi %r15,-160
	.cfi_adjust_cfa_offset 160
	brasl %r14,inner
ret_middle:
	lmg %r6,%r15,208(%r15)
	.cfi_restore 6
	.cfi_restore 11
	.cfi_restore 14
	.cfi_restore 15
	.cfi_adjust_cfa_offset -160
	br %r14
	.cfi_endproc
	.size middle, .-middle

	.type inner,@function
inner:
	.cfi_startproc
	nopr %r7
	br %r14
	.cfi_endproc
	.size inner, .-inner
)";

// Where the synthetic tests place a chain and lay out its stack by hand.
inline constexpr uint64_t kBias = 0x7f0000000000;
inline constexpr uint64_t kStack = 0x7ffe0000;
inline constexpr uint64_t kStackSize = 0x1000;

// kStackSize zeroed bytes at kStack, written in the target's byte order.
struct SyntheticStack {
  explicit SyntheticStack(bool big_endian) : big_endian(big_endian) {
    mem.add(kStack, std::vector<std::byte>(kStackSize));
  }
  void put(uint64_t addr, uint64_t v) { ASSERT_TRUE(mem.write_uint(addr, v, 8, big_endian)); }
  BufferMemory mem;
  bool big_endian;
};

// A chain built and opened once per test process.
struct ChainImage {
  BuiltObject built;
  std::shared_ptr<const Image> image;
};

// Builds `asm_text` with the toolchain `prefix` and opens it with Image::open. Empty (with
// *why) when the toolchain is missing or a step fails.
std::optional<ChainImage> build_chain(const std::string& prefix, const char* asm_text,
                                      std::string* why);

// The toolchains of the three architectures (all installed by scripts/install-deps.sh, so a
// failed build fails the test).
inline constexpr char kNativePrefix[] = "";
inline constexpr char kAArch64Prefix[] = "aarch64-linux-gnu-";
inline constexpr char kS390xPrefix[] = "s390x-linux-gnu-";

// One fixture per chain: assembled once per suite with that architecture's toolchain and
// placed at kBias. Each test gets a fresh image cache, so that what one test dropped (a
// corrupt table) does not leak into the next.
template <const char* Prefix, const auto* Asm>
class ChainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chain_ = build_chain(Prefix, *Asm, &why_); }
  void SetUp() override {
    if (!chain_) GTEST_FAIL() << why_;
    chain_->image->set_cache(nullptr);
    modules_.add(place_image(chain_->image, kBias, "/synthetic/libchain.so"));
  }
  uint64_t at(const char* sym) const { return kBias + chain_->built.sym(sym); }

  static inline std::optional<ChainImage> chain_;
  static inline std::string why_;
  ModuleSet modules_;
};

}  // namespace ehbt::test
