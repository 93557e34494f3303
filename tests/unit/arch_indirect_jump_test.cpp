// SPDX-License-Identifier: Apache-2.0
// arch::indirect_jump: the jump a dispatch stub ends in. Encodings from the Intel SDM (JMP:
// FF /4 "jump near, absolute indirect, address given in r/m64", any ModRM mode; CALL is FF /2)
// and the bytes of a real HotSpot 17 vtable stub (java_jit_megamorphic: `jmp *0x40(%rbx)`);
// aarch64 `br x16` from the Arm ARM (d61f0000 | n << 5, little-endian); s390x from the
// z/Architecture Principles of Operation (BCR M1,R2: 07 M1R2; `br %rN` is BCR 15,N, and the
// ABI returns with `br %r14`).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "arch/call_site.hpp"

namespace ehbt {
namespace {

std::vector<std::byte> bytes(std::initializer_list<uint8_t> b) {
  std::vector<std::byte> out;
  for (uint8_t v : b) out.push_back(std::byte{v});
  return out;
}

TEST(IndirectJump, X86JumpThroughMemoryOrRegister) {
  EXPECT_TRUE(arch::indirect_jump(Arch::X86_64, bytes({0xff, 0x63, 0x40}), 0));  // *0x40(%rbx)
  EXPECT_TRUE(arch::indirect_jump(Arch::X86_64, bytes({0xff, 0xe0}), 0));        // *%rax
  EXPECT_TRUE(arch::indirect_jump(Arch::X86_64, bytes({0xff, 0x25, 0, 0, 0, 0}), 0));  // *(%rip)
  EXPECT_TRUE(arch::indirect_jump(Arch::X86_64, bytes({0x41, 0xff, 0xe3}), 1));        // *%r11
  EXPECT_TRUE(arch::indirect_jump(Arch::I386, bytes({0xff, 0x20}), 0));                // *(%eax)
}

TEST(IndirectJump, X86CallsAndDirectJumpsAreNot) {
  EXPECT_FALSE(arch::indirect_jump(Arch::X86_64, bytes({0xff, 0xd0}), 0));  // call *%rax
  EXPECT_FALSE(
      arch::indirect_jump(Arch::X86_64, bytes({0xff, 0x53, 0x40}), 0));  // call *0x40(%rbx)
  EXPECT_FALSE(arch::indirect_jump(Arch::X86_64, bytes({0xe9, 0, 0, 0, 0}), 0));  // jmp rel32
  EXPECT_FALSE(arch::indirect_jump(Arch::X86_64, bytes({0xff}), 0));              // cut short
}

TEST(IndirectJump, HotSpotVtableStub) {
  // The stub's 26 bytes, read from the core with GDB's x/26xb: mov 0x8(%rsi),%eax; movabs
  // $base,%r10; add %r10,%rax; mov 0x1f8(%rax),%rbx; jmp *0x40(%rbx)
  auto stub = bytes({0x8b, 0x46, 0x08, 0x49, 0xba, 0,    0,    0,    0x70, 0x9c, 0x7f, 0,    0,
                     0x49, 0x03, 0xc2, 0x48, 0x8b, 0x98, 0xf8, 0x01, 0,    0,    0xff, 0x63, 0x40});
  EXPECT_TRUE(arch::indirect_jump(Arch::X86_64, stub, 23));
}

TEST(IndirectJump, Aarch64BranchToRegister) {
  EXPECT_TRUE(arch::indirect_jump(Arch::AArch64, bytes({0x00, 0x02, 0x1f, 0xd6}), 0));   // br x16
  EXPECT_FALSE(arch::indirect_jump(Arch::AArch64, bytes({0x00, 0x02, 0x3f, 0xd6}), 0));  // blr
}

TEST(IndirectJump, S390xBranchToRegisterButNotTheReturn) {
  EXPECT_TRUE(arch::register_jump(Arch::S390x, bytes({0x07, 0xf1}), 0));   // br %r1
  EXPECT_TRUE(arch::indirect_jump(Arch::S390x, bytes({0x07, 0xf3}), 0));   // br %r3
  EXPECT_FALSE(arch::register_jump(Arch::S390x, bytes({0x07, 0xfe}), 0));  // br %r14: return
  EXPECT_FALSE(arch::indirect_jump(Arch::S390x, bytes({0x07, 0xfe}), 0));
  EXPECT_FALSE(arch::register_jump(Arch::S390x, bytes({0x07, 0xf0}), 0));  // bcr 15,0: no-op
  EXPECT_FALSE(arch::register_jump(Arch::S390x, bytes({0x07, 0x81}), 0));  // ber %r1: cond.
  EXPECT_FALSE(arch::register_jump(Arch::S390x, bytes({0x07}), 0));        // cut short
}

}  // namespace
}  // namespace ehbt
