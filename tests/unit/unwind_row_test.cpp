// SPDX-License-Identifier: Apache-2.0
// Stage (c) alone: hand-made CFI rows applied to registers and memory (no tables involved).
#include <gtest/gtest.h>
#include <ucontext.h>

#include <cstddef>

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

BufferMemory stack() {
  BufferMemory m;
  m.add(kStack, std::vector<std::byte>(0x1000));
  return m;
}

Row row_cfa(uint16_t reg, int64_t offset, uint16_t ra_reg) {
  Row row;
  row.cfa.kind = CfaKind::RegOffset;
  row.cfa.reg = reg;
  row.cfa.offset = offset;
  row.ra_reg = ra_reg;
  return row;
}

Rule rule(RuleKind kind, int64_t offset = 0, uint16_t reg = 0) {
  Rule r;
  r.kind = kind;
  r.offset = offset;
  r.reg = reg;
  return r;
}

// DW_OP_breg<reg> <offset> as bytes (offset < 8192).
std::vector<std::byte> breg(uint8_t reg, int64_t offset) {
  std::vector<std::byte> out{std::byte(0x70 + reg)};
  uint64_t v = static_cast<uint64_t>(offset);
  for (;;) {
    uint8_t b = v & 0x7f;
    v = static_cast<uint64_t>(static_cast<int64_t>(v) >> 7);
    const bool done = (v == 0 && !(b & 0x40)) || (v == UINT64_MAX && (b & 0x40));
    out.push_back(std::byte(done ? b : (b | 0x80)));
    if (done) break;
  }
  return out;
}

TEST(UnwindRow, X86_64RulesOfEveryKind) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  const uint64_t sp = kStack + 0x100;
  Row row = row_cfa(7, 32, 16);  // CFA = rsp + 32
  const uint64_t cfa = sp + 32;
  ASSERT_TRUE(m.write_uint(cfa - 8, 0x401000, 8, false));  // return address
  ASSERT_TRUE(m.write_uint(cfa - 16, 0xbbbb, 8, false));   // rbx
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Offset, -8), 48));
  ASSERT_TRUE(row.set_rule(3, rule(RuleKind::Offset, -16), 48));      // rbx saved
  ASSERT_TRUE(row.set_rule(6, rule(RuleKind::ValOffset, -24), 48));   // rbp = CFA - 24
  ASSERT_TRUE(row.set_rule(12, rule(RuleKind::Register, 0, 1), 48));  // r12 = rdx
  ASSERT_TRUE(row.set_rule(13, rule(RuleKind::Undefined), 48));       // r13 clobbered
  ASSERT_TRUE(row.set_rule(0, rule(RuleKind::SameValue), 48));        // rax kept
  ASSERT_TRUE(row.set_rule(14, rule(RuleKind::Offset, -4000), 48));   // unreadable slot

  RegisterSet regs(Arch::X86_64);
  regs.set(7, sp);
  regs.set(0, 0xaa);
  regs.set(1, 0xdd);
  regs.set(2, 0xcc);  // rcx: caller-saved, no rule -> unknown
  regs.set(13, 0x13);
  regs.set(14, 0x14);
  regs.set(15, 0x15);  // callee-saved, no rule -> same value
  RegisterSet caller;
  Limits limits;
  auto r = unwind::apply_row(ops, row, regs, m, limits, caller);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(*r, cfa);
  EXPECT_EQ(caller.pc(), 0x401000u);
  EXPECT_EQ(caller.get(7), cfa);  // rsp = CFA
  EXPECT_EQ(caller.get(3), 0xbbbbu);
  EXPECT_EQ(caller.get(6), cfa - 24);
  EXPECT_EQ(caller.get(12), 0xddu);
  EXPECT_FALSE(caller.has(13));
  EXPECT_EQ(caller.get(0), 0xaau);
  EXPECT_FALSE(caller.has(2));
  EXPECT_FALSE(caller.has(14));  // its slot could not be read: unknown, not fatal
  EXPECT_EQ(caller.get(15), 0x15u);
}

TEST(UnwindRow, ReturnAddressFaultIsFatal) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  Row row = row_cfa(7, 8, 16);
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Offset, -8), 48));
  RegisterSet regs(Arch::X86_64);
  regs.set(7, kStack + 0x2000);  // past the mapped stack
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::MemoryFault);
  EXPECT_EQ(r.error().detail, "read of 8 bytes at 0x7ffe2000 failed");
  EXPECT_EQ(r.error().cfa, kStack + 0x2008);
}

TEST(UnwindRow, UndefinedReturnAddressIsOutermost) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  Row row = row_cfa(7, 8, 16);
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Undefined), 48));
  RegisterSet regs(Arch::X86_64);
  regs.set(7, kStack + 0x100);
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::Outermost);
}

TEST(UnwindRow, CfaRegisterUnknown) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  Row row = row_cfa(3, 16, 16);  // CFA = rbx + 16, rbx unknown
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Offset, -8), 48));
  RegisterSet regs(Arch::X86_64);
  regs.set(7, kStack + 0x100);
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::BadUnwindInfo);
  EXPECT_NE(r.error().detail.find("rbx"), std::string::npos) << r.error().detail;
}

TEST(UnwindRow, ExplicitSpRuleWins) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  Row row = row_cfa(7, 16, 16);
  ASSERT_TRUE(m.write_uint(kStack + 0xf8, 0x401000, 8, false));    // CFA - 8
  ASSERT_TRUE(m.write_uint(kStack + 0xf0, 0x7ffe0800, 8, false));  // CFA - 16
  ASSERT_TRUE(row.set_rule(16, rule(RuleKind::Offset, -8), 48));
  ASSERT_TRUE(row.set_rule(7, rule(RuleKind::Offset, -16), 48));
  RegisterSet regs(Arch::X86_64);
  regs.set(7, kStack + 0xf0);
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(*r, kStack + 0x100);
  EXPECT_EQ(caller.pc(), 0x401000u);
  EXPECT_EQ(caller.get(7), 0x7ffe0800u);  // not CFA
}

// A row shaped like glibc's FDE for x86-64 __restore_rt: CFA = [rsp + offsetof(rsp slot)],
// every register at rsp + its ucontext offset, by expression. rsp points at the ucontext.
TEST(UnwindRow, X86_64RestoreRtExpressions) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  const uint64_t uc = kStack + 0x200;
  auto slot = [](int r) {
    return static_cast<int64_t>(offsetof(ucontext_t, uc_mcontext.gregs) + 8 * r);
  };
  ASSERT_TRUE(m.write_uint(uc + slot(REG_RSP), kStack + 0xc00, 8, false));
  ASSERT_TRUE(m.write_uint(uc + slot(REG_RIP), 0x401234, 8, false));
  ASSERT_TRUE(m.write_uint(uc + slot(REG_RBX), 0xb0b0, 8, false));
  ASSERT_TRUE(m.write_uint(uc + slot(REG_RBP), 0xb9b9, 8, false));

  const auto cfa_expr = [&] {
    auto e = breg(7, slot(REG_RSP));
    e.push_back(std::byte{0x06});  // DW_OP_deref
    return e;
  }();
  const auto rip_expr = breg(7, slot(REG_RIP));
  const auto rbx_expr = breg(7, slot(REG_RBX));
  const auto rbp_expr = breg(7, slot(REG_RBP));
  Row row;
  row.cfa.kind = CfaKind::Expression;
  row.cfa.expr = cfa_expr;
  row.ra_reg = 16;
  row.signal_frame = true;
  Rule e = rule(RuleKind::Expression);
  e.expr = rip_expr;
  ASSERT_TRUE(row.set_rule(16, e, 48));
  e.expr = rbx_expr;
  ASSERT_TRUE(row.set_rule(3, e, 48));
  e.expr = rbp_expr;
  ASSERT_TRUE(row.set_rule(6, e, 48));

  RegisterSet regs(Arch::X86_64);
  regs.set(7, uc);
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(*r, kStack + 0xc00);
  EXPECT_EQ(caller.pc(), 0x401234u);
  EXPECT_EQ(caller.get(3), 0xb0b0u);
  EXPECT_EQ(caller.get(6), 0xb9b9u);
  EXPECT_EQ(caller.get(7), kStack + 0xc00);
}

TEST(UnwindRow, AArch64LeafReturnAddressInX30IsStripped) {
  const auto& ops = arch::arch_ops(Arch::AArch64);
  BufferMemory m = stack();
  Row row = row_cfa(31, 0, 30);  // leaf: no rule for x30 at all
  row.ra_signed = true;
  RegisterSet regs(Arch::AArch64);
  regs.set(31, kStack + 0x100);
  regs.set(30, 0x7f12000000401000ull);  // signed
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(caller.pc(), 0x401000u);
  EXPECT_EQ(caller.get(31), kStack + 0x100);
}

TEST(UnwindRow, X86_64MissingReturnAddressRule) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m = stack();
  Row row = row_cfa(7, 8, 16);  // no rule for column 16: nothing says where the RA is
  RegisterSet regs(Arch::X86_64);
  regs.set(7, kStack + 0x100);
  RegisterSet caller;
  auto r = unwind::apply_row(ops, row, regs, m, Limits{}, caller);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::BadUnwindInfo);
}

TEST(ArchOps, PlausiblePcs) {
  const auto& x86 = arch::arch_ops(Arch::X86_64);
  EXPECT_TRUE(x86.plausible_pc(0x401000));
  EXPECT_TRUE(x86.plausible_pc(0x7fffffffe000));
  EXPECT_TRUE(x86.plausible_pc(0xffffffffff600400ull));  // vsyscall page
  EXPECT_FALSE(x86.plausible_pc(0x4141414141414141ull));
  EXPECT_FALSE(x86.plausible_pc(0xffffffff81000000ull));  // kernel text
  const auto& a64 = arch::arch_ops(Arch::AArch64);
  EXPECT_TRUE(a64.plausible_pc(0x400000));
  EXPECT_FALSE(a64.plausible_pc(0x400002));  // instructions are 4-byte aligned
  EXPECT_EQ(a64.strip_return_address(0x80ff000000400abcull), 0x400abcu);
  EXPECT_EQ(a64.strip_return_address(0x0000ffff80001234ull), 0xffff80001234u);
  const auto& z = arch::arch_ops(Arch::S390x);
  EXPECT_TRUE(z.plausible_pc(0x1000a2));
  EXPECT_FALSE(z.plausible_pc(0x1000a3));
}

TEST(ArchOps, CalleeSavedSets) {
  const auto& x86 = arch::arch_ops(Arch::X86_64);
  for (uint16_t r : {3, 6, 7, 12, 13, 14, 15}) EXPECT_TRUE(x86.callee_saved(r)) << r;
  for (uint16_t r : {0, 1, 2, 4, 5, 8, 9, 10, 11, 16}) EXPECT_FALSE(x86.callee_saved(r)) << r;
  const auto& a64 = arch::arch_ops(Arch::AArch64);
  for (uint16_t r = 19; r <= 31; ++r) EXPECT_TRUE(a64.callee_saved(r)) << r;
  for (uint16_t r = 72; r <= 79; ++r) EXPECT_TRUE(a64.callee_saved(r)) << r;
  for (uint16_t r = 0; r <= 18; ++r) EXPECT_FALSE(a64.callee_saved(r)) << r;
  const auto& z = arch::arch_ops(Arch::S390x);
  for (uint16_t r = 6; r <= 15; ++r) EXPECT_TRUE(z.callee_saved(r)) << r;
  for (uint16_t r = 0; r <= 5; ++r) EXPECT_FALSE(z.callee_saved(r)) << r;
  for (uint16_t r = 24; r <= 31; ++r) EXPECT_TRUE(z.callee_saved(r)) << r;  // f8-f15
  for (uint16_t r = 16; r <= 23; ++r) EXPECT_FALSE(z.callee_saved(r)) << r;
}

}  // namespace
}  // namespace ehbt
