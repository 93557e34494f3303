// SPDX-License-Identifier: Apache-2.0
// The CFI evaluator: every DW_CFA_* opcode, every rule kind, row boundaries, and every cap.
// Expected rows are worked out by hand from DWARF 5 section 6.4.2 (factored offsets times the
// data alignment, advances times the code alignment).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "dwarf/cfi.hpp"
#include "support/cfi_builder.hpp"

namespace ehbt::dwarf {
namespace {

using test::bytes_of;
using test::CfaOps;
using test::CfiBuilder;
using test::CieSpec;
using test::ExprOps;
using test::FdeSpec;

constexpr uint64_t kSection = 0x10000;

// A CIE + FDE in one .eh_frame; keeps the bytes alive for the spans in Cie/Fde.
struct Program {
  CfiBuilder b{SectionKind::EhFrame, kSection};
  Cie cie;
  Fde fde;
  uint64_t fde_offset = 0;
};

struct Options {
  uint64_t pc_begin = 0x1000;
  uint64_t range = 0x400;
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_encoding = 0x1b;
  std::string augmentation = "zR";
  bool big_endian = false;
};

std::unique_ptr<Program> make(const std::vector<std::byte>& cie_ins,
                              const std::vector<std::byte>& fde_ins, const Options& o = {}) {
  auto p = std::make_unique<Program>();
  p->b = CfiBuilder(SectionKind::EhFrame, kSection, o.big_endian);
  CieSpec cs;
  cs.code_align = o.code_align;
  cs.data_align = o.data_align;
  cs.fde_encoding = o.fde_encoding;
  cs.augmentation = o.augmentation;
  cs.instructions = cie_ins;
  uint64_t cie = p->b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = o.pc_begin;
  fs.pc_range = o.range;
  fs.instructions = fde_ins;
  p->fde_offset = p->b.fde(cie, fs);
  Format fmt{o.big_endian, 8};
  auto c = parse_cie(SectionKind::EhFrame, p->b.view(), cie, fmt, Limits{});
  EXPECT_TRUE(c);
  p->cie = *c;
  auto f = parse_fde(SectionKind::EhFrame, p->b.view(), p->fde_offset, p->cie, fmt, Limits{});
  EXPECT_TRUE(f);
  p->fde = *f;
  return p;
}

// The x86-64 CIE every GCC object starts with: CFA = rsp+8, RA at CFA-8.
std::vector<std::byte> x86_cie() {
  return CfaOps().def_cfa(7, 8).offset(16, 1);
}

Expected<Row, Error> eval(const Program& p, uint64_t pc, const Limits& lim = {}) {
  return evaluate_row(p.cie, p.fde, pc, Format{}, lim);
}

std::vector<Row> rows(const Program& p, const Limits& lim = {}) {
  std::vector<Row> out;
  auto ok = for_each_row(p.cie, p.fde, Format{}, lim, [&](const Row& r) { out.push_back(r); });
  EXPECT_TRUE(ok);
  return out;
}

void expect_cfa(const Row& r, uint16_t reg, int64_t off) {
  EXPECT_EQ(r.cfa.kind, CfaKind::RegOffset);
  EXPECT_EQ(r.cfa.reg, reg);
  EXPECT_EQ(r.cfa.offset, off);
}

void expect_rule(const Row& r, uint16_t reg, RuleKind kind, int64_t off = 0, uint16_t src = 0) {
  Rule rule = r.rule(reg);
  EXPECT_EQ(rule.kind, kind) << "reg " << reg;
  EXPECT_EQ(rule.offset, off) << "reg " << reg;
  EXPECT_EQ(rule.reg, src) << "reg " << reg;
}

TEST(CfaProgram, AdvancesAndRows) {
  Options o;
  o.code_align = 4;
  auto p = make(x86_cie(),
                CfaOps()
                    .advance_loc(1)  // 0x1000 + 1*4
                    .def_cfa_offset(16)
                    .offset(6, 2)
                    .advance_loc1(2)  // 0x1004 + 8
                    .def_cfa_register(6)
                    .advance_loc2(0x10)  // 0x100c + 0x40
                    .def_cfa_offset(24)
                    .advance_loc4(0x20)  // 0x104c + 0x80
                    .def_cfa(7, 8)
                    .MIPS_advance_loc8(0x40)  // 0x10cc + 0x100
                    .def_cfa_offset(32),
                o);
  struct Want {
    uint64_t start, end;
    uint16_t cfa_reg;
    int64_t cfa_off;
  };
  const Want want[] = {{0x1000, 0x1004, 7, 8},  {0x1004, 0x100c, 7, 16}, {0x100c, 0x104c, 6, 16},
                       {0x104c, 0x10cc, 6, 24}, {0x10cc, 0x11cc, 7, 8},  {0x11cc, 0x1400, 7, 32}};
  auto all = rows(*p);
  ASSERT_EQ(all.size(), std::size(want));
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].start, want[i].start) << i;
    EXPECT_EQ(all[i].end, want[i].end) << i;
    expect_cfa(all[i], want[i].cfa_reg, want[i].cfa_off);
    expect_rule(all[i], 16, RuleKind::Offset, -8);
  }
  expect_rule(all[0], 6, RuleKind::Unspecified);
  expect_rule(all[1], 6, RuleKind::Offset, -16);
  // Single lookups agree, at the first and last pc of each row.
  for (const Want& w : want) {
    for (uint64_t pc : {w.start, w.end - 1}) {
      auto r = eval(*p, pc);
      ASSERT_TRUE(r) << std::hex << pc;
      EXPECT_EQ(r->start, w.start);
      EXPECT_EQ(r->end, w.end);
      expect_cfa(*r, w.cfa_reg, w.cfa_off);
    }
  }
  EXPECT_EQ(all[0].ra_reg, 16);
}

TEST(CfaProgram, PcOutsideTheFde) {
  auto p = make(x86_cie(), {});
  for (uint64_t pc : {0xfffull, 0x1400ull}) {
    auto r = eval(*p, pc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::NotCovered);
    EXPECT_EQ(r.error().where, pc);
  }
  auto r = eval(*p, 0x13ff);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 0x1000u);
  EXPECT_EQ(r->end, 0x1400u);
}

TEST(CfaProgram, ZeroAdvanceAndAdvancePastTheEnd) {
  Options o;
  o.range = 0x10;
  auto p = make(x86_cie(),
                CfaOps()
                    .advance_loc(0)  // no empty row
                    .def_cfa_offset(16)
                    .advance_loc(8)
                    .def_cfa_offset(24)
                    .advance_loc(0x3f)  // past pc_end: the row is clamped
                    .def_cfa_offset(32),
                o);
  auto all = rows(*p);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].start, 0x1000u);
  EXPECT_EQ(all[0].end, 0x1008u);
  EXPECT_EQ(all[0].cfa.offset, 16);
  EXPECT_EQ(all[1].start, 0x1008u);
  EXPECT_EQ(all[1].end, 0x1010u);
  EXPECT_EQ(all[1].cfa.offset, 24);
  auto r = eval(*p, 0x100f);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->end, 0x1010u);
  EXPECT_EQ(r->cfa.offset, 24);
}

TEST(CfaProgram, SetLocAbsoluteAndPcRelative) {
  {
    Options o;
    o.fde_encoding = 0x03;  // udata4
    auto p = make(x86_cie(), CfaOps().set_loc(bytes_of({0x20, 0x10, 0, 0})).def_cfa_offset(16), o);
    auto all = rows(*p);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].end, 0x1020u);
    EXPECT_EQ(all[1].start, 0x1020u);
    EXPECT_EQ(all[1].cfa.offset, 16);
  }
  {
    // pcrel|sdata4: the operand's field address is section + instructions offset + 1.
    // The FDE sits right after the CIE; its instructions start 17 bytes in (length 4, CIE
    // pointer 4, pc_begin 4, pc_range 4, augmentation length 1).
    CfiBuilder probe(SectionKind::EhFrame, kSection);
    CieSpec cs;
    cs.instructions = x86_cie();
    const uint64_t fde_off = probe.cie(cs);
    (void)fde_off;
    const uint64_t field = kSection + probe.size() + 17 + 1;
    const uint64_t target = 0x1100;
    const uint32_t stored = static_cast<uint32_t>(target - field);
    auto p = make(x86_cie(),
                  CfaOps()
                      .set_loc(bytes_of({int(stored & 0xff), int((stored >> 8) & 0xff),
                                         int((stored >> 16) & 0xff), int((stored >> 24) & 0xff)}))
                      .def_cfa_offset(48));
    EXPECT_EQ(p->fde.instructions_offset, probe.size() + 17);
    auto r = eval(*p, 0x10ff);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->end, 0x1100u);
    EXPECT_EQ(r->cfa.offset, 8);
    r = eval(*p, 0x1100);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->start, 0x1100u);
    EXPECT_EQ(r->cfa.offset, 48);
  }
}

TEST(CfaProgram, SetLocBackwardsIsBadState) {
  Options o;
  o.fde_encoding = 0x03;
  auto p =
      make(x86_cie(), CfaOps().advance_loc(0x20).set_loc(bytes_of({0x10, 0x10, 0, 0})).nop(), o);
  auto r = eval(*p, 0x1030);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadState);
  EXPECT_EQ(r.error().where, p->fde.instructions_offset + 1);
}

TEST(CfaProgram, OffsetRuleFamily) {
  auto p = make(x86_cie(), CfaOps()
                               .offset(3, 2)                         // -16
                               .offset_extended(20, 3)               // -24
                               .offset_extended_sf(21, -2)           // +16
                               .GNU_negative_offset_extended(22, 1)  // -(1 * -8) = +8
                               .val_offset(23, 4)                    // value CFA-32
                               .val_offset_sf(24, -1)                // value CFA+8
                               .offset_extended(300, 1));            // beyond 63
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_rule(*r, 3, RuleKind::Offset, -16);
  expect_rule(*r, 20, RuleKind::Offset, -24);
  expect_rule(*r, 21, RuleKind::Offset, 16);
  expect_rule(*r, 22, RuleKind::Offset, 8);
  expect_rule(*r, 23, RuleKind::ValOffset, -32);
  expect_rule(*r, 24, RuleKind::ValOffset, 8);
  expect_rule(*r, 300, RuleKind::Offset, -8);
  EXPECT_EQ(r->num_rules, 8);  // with r16 from the CIE
}

TEST(CfaProgram, DataAlignmentPositive) {
  Options o;
  o.data_align = 4;
  auto p = make(CfaOps().def_cfa_sf(1, 3), CfaOps().offset(2, 5).def_cfa_offset_sf(-2), o);
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_cfa(*r, 1, -8);  // def_cfa_sf 3*4 = 12, then def_cfa_offset_sf -2*4 = -8
  expect_rule(*r, 2, RuleKind::Offset, 20);
}

TEST(CfaProgram, UndefinedSameValueRegister) {
  auto p = make(x86_cie(), CfaOps().undefined(16).same_value(3).register_(5, 9));
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_rule(*r, 16, RuleKind::Undefined);
  expect_rule(*r, 3, RuleKind::SameValue);
  expect_rule(*r, 5, RuleKind::Register, 0, 9);
}

TEST(CfaProgram, RestoreUsesTheCieRules) {
  auto p = make(CfaOps().def_cfa(7, 8).offset(16, 1).offset(3, 5), CfaOps()
                                                                       .offset(16, 7)
                                                                       .undefined(3)
                                                                       .offset(12, 2)
                                                                       .advance_loc(4)
                                                                       .restore(16)
                                                                       .restore_extended(3)
                                                                       .restore(12));
  auto before = eval(*p, 0x1000);
  ASSERT_TRUE(before);
  expect_rule(*before, 16, RuleKind::Offset, -56);
  expect_rule(*before, 3, RuleKind::Undefined);
  expect_rule(*before, 12, RuleKind::Offset, -16);
  auto after = eval(*p, 0x1004);
  ASSERT_TRUE(after);
  expect_rule(*after, 16, RuleKind::Offset, -8);
  expect_rule(*after, 3, RuleKind::Offset, -40);
  expect_rule(*after, 12, RuleKind::Unspecified);  // no CIE rule: back to none
  EXPECT_EQ(after->num_rules, 2);
}

TEST(CfaProgram, RememberAndRestoreState) {
  // The classic epilogue-in-the-middle shape: remember, pop, ret, restore.
  auto p = make(x86_cie(), CfaOps()
                               .advance_loc(1)
                               .def_cfa_offset(16)
                               .offset(6, 2)
                               .advance_loc(3)
                               .def_cfa_register(6)
                               .advance_loc(4)
                               .remember_state()
                               .def_cfa(7, 8)
                               .restore(6)
                               .advance_loc(2)
                               .restore_state()
                               .advance_loc(2)
                               .AARCH64_negate_ra_state());
  auto epilogue = eval(*p, 0x1009);
  ASSERT_TRUE(epilogue);
  expect_cfa(*epilogue, 7, 8);
  expect_rule(*epilogue, 6, RuleKind::Unspecified);
  auto restored = eval(*p, 0x100a);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->start, 0x100au);
  EXPECT_EQ(restored->end, 0x100cu);
  expect_cfa(*restored, 6, 16);  // the CFA comes back too
  expect_rule(*restored, 6, RuleKind::Offset, -16);
}

TEST(CfaProgram, RestoreStateWithoutRemember) {
  auto p = make(x86_cie(), CfaOps().advance_loc(1).restore_state());
  auto r = eval(*p, 0x1002);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadState);
  EXPECT_EQ(r.error().where, p->fde.instructions_offset + 1);
  // A lookup before the bad op still succeeds: nothing after the row is evaluated.
  EXPECT_TRUE(eval(*p, 0x1000));
}

TEST(CfaProgram, RememberRestoreImbalanceDeepRestores) {
  auto p = make(
      x86_cie(),
      CfaOps().remember_state().remember_state().restore_state().restore_state().restore_state());
  auto r = eval(*p, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadState);
  EXPECT_EQ(r.error().where, p->fde.instructions_offset + 4);
}

TEST(CfaProgram, CfaRuleVariants) {
  auto p = make(x86_cie(), CfaOps()
                               .def_cfa_sf(6, -2)  // 6 + 16
                               .advance_loc(1)
                               .def_cfa_offset_sf(-3)  // 24
                               .advance_loc(1)
                               .def_cfa_offset(40));
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_cfa(*r, 6, 16);
  r = eval(*p, 0x1001);
  ASSERT_TRUE(r);
  expect_cfa(*r, 6, 24);
  r = eval(*p, 0x1002);
  ASSERT_TRUE(r);
  expect_cfa(*r, 6, 40);
}

TEST(CfaProgram, CfaExpressionThenOffsetIsBadState) {
  auto expr = ExprOps().breg(7, 8).op(0x06);  // *(rsp+8)
  {
    auto p = make(x86_cie(), CfaOps().def_cfa_expression(expr));
    auto r = eval(*p, 0x1000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cfa.kind, CfaKind::Expression);
    ASSERT_EQ(r->cfa.expr.size(), 3u);
    EXPECT_EQ(r->cfa.expr[0], std::byte{0x77});
    EXPECT_EQ(r->cfa.expr[1], std::byte{0x08});
    EXPECT_EQ(r->cfa.expr[2], std::byte{0x06});
  }
  for (auto ops : {CfaOps().def_cfa_expression(expr).def_cfa_offset(8),
                   CfaOps().def_cfa_expression(expr).def_cfa_offset_sf(1)}) {
    auto p = make(x86_cie(), ops);
    auto r = eval(*p, 0x1000);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::BadState);
    EXPECT_EQ(r.error().where, p->fde.instructions_offset + 5);
  }
  // Then def_cfa makes it a register rule again.
  auto p = make(x86_cie(), CfaOps().def_cfa_expression(expr).def_cfa(7, 16));
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_cfa(*r, 7, 16);
}

// libgcc and readelf treat def_cfa_register after an expression as register + the last
// register-rule offset (libgcrypt's hand-written assembly depends on it).
TEST(CfaProgram, CfaExpressionThenRegisterKeepsLastOffset) {
  auto expr = ExprOps().breg(7, 8).op(0x06);
  // x86_cie() starts with CFA = rsp+8; def_cfa_offset 56 makes it rsp+56.
  auto p =
      make(x86_cie(), CfaOps().def_cfa_offset(56).def_cfa_expression(expr).def_cfa_register(6));
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  expect_cfa(*r, 6, 56);
  EXPECT_TRUE(r->cfa.expr.empty());
}

TEST(CfaProgram, DefCfaOffsetWithoutCfaIsBadState) {
  auto p = make({}, CfaOps().def_cfa_offset(8));
  auto r = eval(*p, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadState);
  // def_cfa_register from nothing starts a register+0 rule.
  auto q = make({}, CfaOps().def_cfa_register(7));
  auto s = eval(*q, 0x1000);
  ASSERT_TRUE(s);
  expect_cfa(*s, 7, 0);
}

TEST(CfaProgram, ExpressionRules) {
  auto e1 = ExprOps().lit(16).op(0x22);  // CFA + 16 (CFA pushed first)
  auto e2 = ExprOps().breg(6, -8);
  auto p = make(x86_cie(), CfaOps().expression(3, e1).val_expression(4, e2));
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  Rule r3 = r->rule(3);
  EXPECT_EQ(r3.kind, RuleKind::Expression);
  ASSERT_EQ(r3.expr.size(), 2u);
  EXPECT_EQ(r3.expr[0], std::byte{0x40});
  EXPECT_EQ(r3.expr[1], std::byte{0x22});
  Rule r4 = r->rule(4);
  EXPECT_EQ(r4.kind, RuleKind::ValExpression);
  ASSERT_EQ(r4.expr.size(), 2u);
  EXPECT_EQ(r4.expr[0], std::byte{0x76});
  EXPECT_EQ(r4.expr[1], std::byte{0x78});
}

TEST(CfaProgram, NopArgsSizeAndNegateRaState) {
  auto p = make(x86_cie(), CfaOps()
                               .nop()
                               .GNU_args_size(32)
                               .AARCH64_negate_ra_state()
                               .advance_loc(4)
                               .AARCH64_negate_ra_state()
                               .advance_loc(4)
                               .AARCH64_negate_ra_state());
  auto all = rows(*p);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].ra_signed);
  EXPECT_FALSE(all[1].ra_signed);
  EXPECT_TRUE(all[2].ra_signed);
  EXPECT_EQ(all[0].num_rules, 1);  // args_size adds nothing
}

TEST(CfaProgram, SignalFrameAndBKeyReachTheRow) {
  Options o;
  o.augmentation = "zRSB";
  auto p = make(x86_cie(), {}, o);
  auto r = eval(*p, 0x1000);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->signal_frame);
  EXPECT_TRUE(r->b_key);
  EXPECT_FALSE(r->ra_signed);
}

TEST(CfaProgram, UnknownOpcodes) {
  for (int op : {0x17, 0x18, 0x1b, 0x1c, 0x1e, 0x3f}) {
    auto p = make(x86_cie(), CfaOps().nop().nop().raw({op}));
    auto r = eval(*p, 0x1000);
    ASSERT_FALSE(r) << op;
    EXPECT_EQ(r.error().code, ErrorCode::BadOpcode) << op;
    EXPECT_EQ(r.error().where, p->fde.instructions_offset + 2) << op;
  }
  // In the CIE, the offset points into the CIE.
  auto p = make(CfaOps().def_cfa(7, 8).raw({0x3e}), {});
  auto r = eval(*p, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadOpcode);
  EXPECT_EQ(r.error().where, p->cie.instructions_offset + 3);
}

TEST(CfaProgram, AdvanceInsideTheCie) {
  auto p = make(CfaOps().def_cfa(7, 8).advance_loc(1), {});
  auto r = eval(*p, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadState);
}

TEST(CfaProgram, TruncatedOperands) {
  // def_cfa missing its offset; advance_loc2 with one byte; a block running past the end;
  // an overlong LEB128 offset; set_loc with 2 of 4 bytes.
  struct Case {
    std::vector<std::byte> ins;
    ErrorCode code;
  };
  const Case cases[] = {
      {bytes_of({0x0c, 0x07}), ErrorCode::Truncated},
      {bytes_of({0x03, 0x01}), ErrorCode::Truncated},
      {bytes_of({0x0f, 0x05, 0x30}), ErrorCode::Truncated},
      {bytes_of({0x10, 0x03, 0x05, 0x30}), ErrorCode::Truncated},
      {bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}),
       ErrorCode::BadLeb128},
      {bytes_of({0x01, 0x00, 0x10}), ErrorCode::Truncated},
  };
  for (const Case& c : cases) {
    auto p = make(x86_cie(), c.ins);
    auto r = eval(*p, 0x1000);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, c.code);
  }
  // The LEB128 error names the operand's section offset (after the opcode).
  auto p = make(x86_cie(), cases[4].ins);
  EXPECT_EQ(eval(*p, 0x1000).error().where, p->fde.instructions_offset + 1);
}

TEST(CfaProgram, RegisterNumberTooLarge) {
  auto p = make(x86_cie(), CfaOps().undefined(0x10000));
  auto r = eval(*p, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadRegister);
  EXPECT_EQ(r.error().where, 0x10000u);
}

TEST(CfaProgram, BigEndianOperands) {
  Options o;
  o.big_endian = true;
  auto p =
      make(CfaOps(true).def_cfa(15, 160), CfaOps(true).advance_loc2(0x0102).def_cfa_offset(8), o);
  auto r = evaluate_row(p->cie, p->fde, 0x1000 + 0x0101, Format{true, 8}, Limits{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->end, 0x1102u);
  auto s = evaluate_row(p->cie, p->fde, 0x1102, Format{true, 8}, Limits{});
  ASSERT_TRUE(s);
  expect_cfa(*s, 15, 8);
}

// ---- caps: each ends with its own Limit* error ---------------------------------------

TEST(CfaProgramLimits, CfiInstructions) {
  // CIE: 2 instructions; FDE: 3. The count covers both.
  auto p = make(x86_cie(), CfaOps().nop().nop().nop());
  Limits lim;
  lim.max_cfi_instructions = 5;
  EXPECT_TRUE(eval(*p, 0x1000, lim));
  lim.max_cfi_instructions = 4;
  auto r = eval(*p, 0x1000, lim);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::LimitCfiInstructions);
  EXPECT_EQ(r.error().where, p->fde.instructions_offset + 2);
  EXPECT_EQ(for_each_row(p->cie, p->fde, Format{}, lim, nullptr).error().code,
            ErrorCode::LimitCfiInstructions);
}

TEST(CfaProgramLimits, RememberDepth) {
  CfaOps ops;
  for (int i = 0; i < 4; ++i) ops.remember_state();
  auto p = make(x86_cie(), ops);
  Limits lim;
  lim.max_remember_depth = 4;
  EXPECT_TRUE(eval(*p, 0x1000, lim));
  lim.max_remember_depth = 3;
  auto r = eval(*p, 0x1000, lim);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::LimitRememberDepth);
  EXPECT_EQ(r.error().where, p->fde.instructions_offset + 3);
}

TEST(CfaProgramLimits, Rules) {
  auto p = make(x86_cie(), CfaOps().offset(3, 1).offset(4, 2).offset(3, 3));
  Limits lim;
  lim.max_rules = 3;  // r16, r3, r4; re-setting r3 needs no new slot
  EXPECT_TRUE(eval(*p, 0x1000, lim));
  lim.max_rules = 2;
  auto r = eval(*p, 0x1000, lim);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::LimitRules);
  // The capacity of a row bounds a larger limit.
  CfaOps many;
  for (int reg = 0; reg < static_cast<int>(kRowCapacity); ++reg) many.offset_extended(reg + 100, 1);
  auto q = make(x86_cie(), many);
  lim.max_rules = 1000;
  EXPECT_EQ(eval(*q, 0x1000, lim).error().code, ErrorCode::LimitRules);
}

TEST(CfaProgramLimits, ExprBytes) {
  auto expr = ExprOps().lit(1).lit(2).op(0x22).lit(3).op(0x22);  // 5 bytes
  for (auto ops : {CfaOps().def_cfa_expression(expr), CfaOps().expression(3, expr),
                   CfaOps().val_expression(3, expr)}) {
    auto p = make(x86_cie(), ops);
    Limits lim;
    lim.max_expr_bytes = 5;
    EXPECT_TRUE(eval(*p, 0x1000, lim));
    lim.max_expr_bytes = 4;
    auto r = eval(*p, 0x1000, lim);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::LimitExprBytes);
    EXPECT_EQ(r.error().where, p->fde.instructions_offset);
  }
}

// ---- Row ---------------------------------------------------------------------------

TEST(Row, SetReplaceRemove) {
  Row row;
  Rule off{RuleKind::Offset, 0, -8, {}};
  EXPECT_TRUE(row.set_rule(16, off, kRowCapacity));
  EXPECT_TRUE(row.set_rule(6, Rule{RuleKind::SameValue, 0, 0, {}}, kRowCapacity));
  EXPECT_TRUE(row.set_rule(3, Rule{RuleKind::Register, 5, 0, {}}, kRowCapacity));
  EXPECT_EQ(row.num_rules, 3);
  EXPECT_TRUE(row.set_rule(16, Rule{RuleKind::Offset, 0, -16, {}}, kRowCapacity));
  EXPECT_EQ(row.num_rules, 3);
  EXPECT_EQ(row.rule(16).offset, -16);
  EXPECT_TRUE(row.set_rule(16, Rule{}, kRowCapacity));  // remove
  EXPECT_EQ(row.num_rules, 2);
  EXPECT_EQ(row.rule(16).kind, RuleKind::Unspecified);
  EXPECT_EQ(row.rule(6).kind, RuleKind::SameValue);
  EXPECT_EQ(row.rule(3).reg, 5);
  EXPECT_TRUE(row.set_rule(99, Rule{}, kRowCapacity));  // removing nothing is fine
  EXPECT_EQ(row.num_rules, 2);
  EXPECT_FALSE(row.set_rule(7, off, 2));
  EXPECT_TRUE(row.set_rule(6, off, 2));  // replacing needs no new slot
}

}  // namespace
}  // namespace ehbt::dwarf
