// SPDX-License-Identifier: Apache-2.0
// runtime.asmcgocall's stack switch (unwind/go_switch.hpp) over synthetic memory laid out as Go
// 1.19's asm_amd64.s and asm_arm64.s leave it: the old g and the depth of the goroutine's sp
// below g.stack.hi, stored on the system stack just above the C callee's CFA.
#include <gtest/gtest.h>

#include <cstdint>

#include "ehbt/memory.hpp"
#include "unwind/go_switch.hpp"

namespace ehbt::unwind {
namespace {

constexpr uint64_t kSysSp = 0x7ffd0000;      // asmcgocall's sp on g0 (the C callee's CFA)
constexpr uint64_t kG = 0xc000002000;        // the goroutine's g
constexpr uint64_t kStackLo = 0xc000040000;  // its g.stack
constexpr uint64_t kStackHi = 0xc000042000;
constexpr uint64_t kDepth = 0x140;         // g.stack.hi - the goroutine's sp
constexpr uint64_t kCgocallRa = 0x404665;  // the return address into runtime.cgocall
constexpr uint64_t kGoroutineSp = kStackHi - kDepth;

BufferMemory memory(uint64_t g_slot, uint64_t depth_slot, uint64_t g, uint64_t depth) {
  BufferMemory mem;
  mem.add(kSysSp, std::vector<std::byte>(0x40));
  mem.add(kG, std::vector<std::byte>(0x10));
  mem.add(kStackLo, std::vector<std::byte>(kStackHi - kStackLo));
  EXPECT_TRUE(mem.write_uint(kSysSp + g_slot, g, 8, false));
  EXPECT_TRUE(mem.write_uint(kSysSp + depth_slot, depth, 8, false));
  EXPECT_TRUE(mem.write_uint(kG, kStackLo, 8, false));
  EXPECT_TRUE(mem.write_uint(kG + 8, kStackHi, 8, false));
  EXPECT_TRUE(mem.write_uint(kGoroutineSp, kCgocallRa, 8, false));
  EXPECT_TRUE(mem.write_uint(kGoroutineSp - 8, 0xc000041f70, 8, false));  // arm64: saved x29
  return mem;
}

Frame asmcgocall_frame(Arch arch, uint16_t sp_reg, uint16_t fp_reg) {
  RegisterSet regs(arch);
  regs.set(sp_reg, kSysSp);
  regs.set(fp_reg, 0x7ffd0100);
  regs.set_pc(0x45b2a4);
  Frame frame;
  frame.pc = 0x45b2a4;
  frame.exact_pc = false;
  frame.regs = regs;
  return frame;
}

TEST(GoSwitch, Amd64GoroutineSpIsStackHiMinusDepth) {
  BufferMemory mem = memory(48, 40, kG, kDepth);
  auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::X86_64, 7, 6), mem);
  ASSERT_TRUE(sw) << sw.error().why;
  EXPECT_EQ(sw->switched_sp, kGoroutineSp);
  EXPECT_EQ(sw->stack_lo, kStackLo);
  EXPECT_EQ(sw->stack_hi, kStackHi);
  EXPECT_EQ(sw->caller.regs.pc(), kCgocallRa);
  // asmcgocall has no frame on the goroutine's stack: the return address, then cgocall's sp.
  EXPECT_EQ(sw->caller.cfa, kGoroutineSp + 8);
  EXPECT_EQ(sw->caller.regs.raw(7), kGoroutineSp + 8);
  EXPECT_EQ(sw->caller.regs.raw(6), 0x7ffd0100u);  // rbp: untouched by asmcgocall and C
}

TEST(GoSwitch, Arm64RestoresTheFrameAsmcgocallSetUpOnTheGoroutineStack) {
  BufferMemory mem = memory(0, 8, kG, kDepth);
  auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::AArch64, 31, 29), mem);
  ASSERT_TRUE(sw) << sw.error().why;
  EXPECT_EQ(sw->caller.regs.pc(), kCgocallRa);  // x30 stored at 0(sp) by the prologue
  EXPECT_EQ(sw->caller.cfa, kGoroutineSp + 16);
  EXPECT_EQ(sw->caller.regs.raw(31), kGoroutineSp + 16);
  EXPECT_EQ(sw->caller.regs.raw(29), 0xc000041f70u);  // x29 stored at -8(sp)
}

TEST(GoSwitch, NosaveKeepsTheSavedSpOnTheSameStack) {
  // Already on a system stack: g is stored as 0 and the depth slot holds the original sp.
  BufferMemory mem = memory(48, 40, 0, kGoroutineSp);
  auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::X86_64, 7, 6), mem);
  ASSERT_TRUE(sw) << sw.error().why;
  EXPECT_EQ(sw->switched_sp, kGoroutineSp);
  EXPECT_EQ(sw->stack_hi, 0u);
  EXPECT_EQ(sw->caller.regs.pc(), kCgocallRa);
}

TEST(GoSwitch, DepthOutsideTheGoroutineStackIsRejected) {
  for (uint64_t depth : {uint64_t{0}, kStackHi - kStackLo + 8, uint64_t{1} << 40}) {
    BufferMemory mem = memory(48, 40, kG, depth);
    auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::X86_64, 7, 6), mem);
    ASSERT_FALSE(sw) << depth;
    EXPECT_EQ(sw.error().kind, arch::RecoverError::NotApplicable);
  }
}

TEST(GoSwitch, UnreadableSavedStateIsAMemoryFault) {
  // g points at memory the core does not hold.
  BufferMemory mem = memory(48, 40, 0xdead0000, kDepth);
  auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::X86_64, 7, 6), mem);
  ASSERT_FALSE(sw);
  EXPECT_EQ(sw.error().kind, arch::RecoverError::MemoryFault);
  EXPECT_EQ(sw.error().addr, 0xdead0000u);
  // The system stack's slots themselves unreadable.
  BufferMemory empty;
  auto none = go_cross_cgo_switch(asmcgocall_frame(Arch::X86_64, 7, 6), empty);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, arch::RecoverError::MemoryFault);
}

// i386: Go's 386 port has its own asmcgocall layout, which the crossing does not read.
TEST(GoSwitch, OtherArchitecturesAreNotApplicable) {
  BufferMemory mem = memory(48, 40, kG, kDepth);
  auto sw = go_cross_cgo_switch(asmcgocall_frame(Arch::I386, 4, 5), mem);
  ASSERT_FALSE(sw);
  EXPECT_EQ(sw.error().kind, arch::RecoverError::NotApplicable);
}

}  // namespace
}  // namespace ehbt::unwind
