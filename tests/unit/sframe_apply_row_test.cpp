// SPDX-License-Identifier: Apache-2.0
// The row kinds SFrame V3 flexible FDEs added to the unwinder's rows, applied to registers
// and memory: CFA loaded from reg+offset (DRAP), a value that is reg+offset, a value saved
// at reg+offset; and their failures.
#include <gtest/gtest.h>

#include "arch/arch_ops.hpp"
#include "dwarf/cfi.hpp"
#include "unwind/apply_row.hpp"

namespace ehbt {
namespace {

using dwarf::CfaKind;
using dwarf::Row;
using dwarf::Rule;
using dwarf::RuleKind;

constexpr uint64_t kStack = 0x7ffe0000;

Rule rule(RuleKind kind, uint16_t reg, int64_t offset) {
  Rule r;
  r.kind = kind;
  r.reg = reg;
  r.offset = offset;
  return r;
}

struct Fixture {
  BufferMemory mem;
  RegisterSet regs{Arch::X86_64};
  Fixture() {
    mem.add(kStack, std::vector<std::byte>(0x1000));
    regs.set(7, kStack + 0x100);   // rsp
    regs.set(6, kStack + 0x200);   // rbp
    regs.set(3, 0x1111);           // rbx
    regs.set(12, kStack + 0x300);  // r12
  }
};

TEST(SframeApplyRow, CfaLoadedFromMemory) {
  Fixture f;
  // DRAP: CFA = *(rbp - 8); RA at CFA-8; rbp saved at [rbp+0].
  ASSERT_TRUE(f.mem.write_uint(kStack + 0x200 - 8, kStack + 0x800, 8, false));
  ASSERT_TRUE(f.mem.write_uint(kStack + 0x800 - 8, 0x401234, 8, false));
  ASSERT_TRUE(f.mem.write_uint(kStack + 0x200, 0xabcdef0, 8, false));
  Row row;
  row.cfa.kind = CfaKind::RegOffsetDeref;
  row.cfa.reg = 6;
  row.cfa.offset = -8;
  row.ra_reg = 16;
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Offset, 0, -8), 48));
  ASSERT_TRUE(row.set_rule(6, rule(RuleKind::AtRegOffset, 6, 0), 48));
  RegisterSet caller;
  auto cfa = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_TRUE(cfa.has_value()) << cfa.error().detail;
  EXPECT_EQ(*cfa, kStack + 0x800);
  EXPECT_EQ(caller.pc(), 0x401234u);
  EXPECT_EQ(caller.raw(7), kStack + 0x800);  // caller's rsp = CFA
  EXPECT_EQ(caller.raw(6), 0xabcdef0u);
}

TEST(SframeApplyRow, CfaLoadFailures) {
  Fixture f;
  Row row;
  row.cfa.kind = CfaKind::RegOffsetDeref;
  row.cfa.reg = 6;
  row.cfa.offset = 0x10000;  // outside the stack buffer
  row.ra_reg = 16;
  RegisterSet caller;
  auto r = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::MemoryFault);
  row.cfa.reg = 10;  // r10 unknown in this frame
  r = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::BadUnwindInfo);
}

TEST(SframeApplyRow, RegisterPlusOffsetRules) {
  Fixture f;
  // CFA = rsp+16; rbp = rbx + 16 (value); RA saved at [r12 + 8].
  ASSERT_TRUE(f.mem.write_uint(kStack + 0x308, 0x402000, 8, false));
  Row row;
  row.cfa.kind = CfaKind::RegOffset;
  row.cfa.reg = 7;
  row.cfa.offset = 16;
  row.ra_reg = 16;
  ASSERT_TRUE(row.set_rule(6, rule(RuleKind::RegOffset, 3, 16), 48));
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::AtRegOffset, 12, 8), 48));
  RegisterSet caller;
  auto cfa = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_TRUE(cfa.has_value()) << cfa.error().detail;
  EXPECT_EQ(*cfa, kStack + 0x110);
  EXPECT_EQ(caller.raw(6), 0x1121u);
  EXPECT_EQ(caller.pc(), 0x402000u);
}

TEST(SframeApplyRow, RegisterRulesWithUnknownOrUnreadableBase) {
  Fixture f;
  Row row;
  row.cfa.kind = CfaKind::RegOffset;
  row.cfa.reg = 7;
  row.cfa.offset = 16;
  row.ra_reg = 16;
  ASSERT_TRUE(row.set_rule(6, rule(RuleKind::RegOffset, 9, 0), 48));           // r9 unknown
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::AtRegOffset, 12, 0x5000), 48));  // faults
  RegisterSet caller;
  auto r = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::MemoryFault);
  // An RA value from an unknown register: the return address is unknown.
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::RegOffset, 9, 0), 48));
  r = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::BadUnwindInfo);
  // And from a known one, it is that register plus the offset.
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::RegOffset, 3, 0x10), 48));
  auto ok = unwind::apply_row(arch::arch_ops(Arch::X86_64), row, f.regs, f.mem, Limits{}, caller);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(caller.pc(), 0x1121u);
  EXPECT_FALSE(caller.has(6));  // rbp's base was unknown
}

}  // namespace
}  // namespace ehbt
