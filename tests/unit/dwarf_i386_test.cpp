// SPDX-License-Identifier: Apache-2.0
// i386 CFI: 4-byte addresses everywhere an address is read (DW_EH_PE_absptr FDE fields,
// DW_CFA_set_loc, DW_OP_deref), and the two shapes GCC gives i386 code that 64-bit code does
// not have: the DRAP prologue of `main` (CFA by DW_CFA_def_cfa_expression with DW_OP_deref)
// and the PLT's CFA expression reading eip. Expected values are worked out by hand from the
// instructions (DWARF 5 section 6.4, the i386 psABI register numbers).
#include <gtest/gtest.h>

#include "arch/arch_ops.hpp"
#include "dwarf/cfi.hpp"
#include "support/cfi_builder.hpp"
#include "unwind/apply_row.hpp"

namespace ehbt {
namespace {

using dwarf::CfaKind;
using dwarf::Format;
using dwarf::SectionKind;
using test::CfaOps;
using test::CfiBuilder;
using test::CieSpec;
using test::ExprOps;
using test::FdeSpec;

constexpr uint16_t kEcx = 1, kEsp = 4, kEbp = 5, kEip = 8;
constexpr uint64_t kSection = 0x804a000;
constexpr uint64_t kStack = 0xffffc000;
constexpr Format kFmt{false, 4};

// GCC's i386 CIE: CFA = esp+4, eip at CFA-4; data alignment -4.
CieSpec i386_cie(uint8_t fde_encoding) {
  CieSpec cs;
  cs.data_align = -4;
  cs.ra_reg = kEip;
  cs.address_size = 4;
  cs.fde_encoding = fde_encoding;
  cs.instructions = CfaOps().def_cfa(kEsp, 4).offset(kEip, 1);
  return cs;
}

struct Parsed {
  dwarf::Cie cie;
  dwarf::Fde fde;
};

Parsed parse(const CfiBuilder& b, uint64_t cie_off, uint64_t fde_off) {
  auto c = dwarf::parse_cie(SectionKind::EhFrame, b.view(), cie_off, kFmt, Limits{});
  EXPECT_TRUE(c);
  auto f = dwarf::parse_fde(SectionKind::EhFrame, b.view(), fde_off, *c, kFmt, Limits{});
  EXPECT_TRUE(f);
  return {*c, *f};
}

TEST(DwarfI386, AbsptrFdeAndSetLocAreFourBytes) {
  CfiBuilder b(SectionKind::EhFrame, kSection, false, 4);
  const uint64_t cie = b.cie(i386_cie(0x00));  // DW_EH_PE_absptr: a 4-byte address here
  FdeSpec fs;
  fs.pc_begin = 0x08049100;
  fs.pc_range = 0x40;
  // DW_CFA_set_loc 0x08049110 (4 bytes), then CFA = esp+8.
  fs.instructions = CfaOps()
                        .set_loc(std::vector<std::byte>{std::byte{0x10}, std::byte{0x91},
                                                        std::byte{0x04}, std::byte{0x08}})
                        .def_cfa_offset(8);
  const uint64_t fde = b.fde(cie, fs);
  const Parsed p = parse(b, cie, fde);
  EXPECT_EQ(p.fde.pc_begin, 0x08049100u);
  EXPECT_EQ(p.fde.pc_end, 0x08049140u);
  auto before = dwarf::evaluate_row(p.cie, p.fde, 0x0804910f, kFmt, Limits{});
  ASSERT_TRUE(before);
  EXPECT_EQ(before->cfa.offset, 4);
  auto after = dwarf::evaluate_row(p.cie, p.fde, 0x08049110, kFmt, Limits{});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->cfa.reg, kEsp);
  EXPECT_EQ(after->cfa.offset, 8);
}

// main's DRAP prologue (gcc -m32):
//   lea 0x4(%esp),%ecx; and $-16,%esp; push -0x4(%ecx); push %ebp; mov %esp,%ebp; push %ecx
// gives, after the last push: DW_CFA_def_cfa_expression (DW_OP_breg5 -4; DW_OP_deref) and
// DW_CFA_expression ebp (DW_OP_breg5 0). The CFA is the saved ecx, which `lea 0x4(%esp)`
// computed at entry: the caller's esp after the call returns, the return address just below.
TEST(DwarfI386, DrapMainThroughApplyRow) {
  CfiBuilder b(SectionKind::EhFrame, kSection, false, 4);
  const uint64_t cie = b.cie(i386_cie(0x1b));
  FdeSpec fs;
  fs.pc_begin = 0x08049000;
  fs.pc_range = 0x80;
  fs.instructions = CfaOps()
                        .advance_loc(4)
                        .def_cfa(kEcx, 0)
                        .advance_loc(8)
                        .expression(kEbp, ExprOps().breg(kEbp, 0))
                        .advance_loc(3)
                        .def_cfa_expression(ExprOps().breg(kEbp, -4).op(0x06));  // DW_OP_deref
  const uint64_t fde = b.fde(cie, fs);
  const Parsed p = parse(b, cie, fde);
  auto row = dwarf::evaluate_row(p.cie, p.fde, 0x08049020, kFmt, Limits{});
  ASSERT_TRUE(row);
  EXPECT_EQ(row->cfa.kind, CfaKind::Expression);

  // The stack as the prologue left it: the caller's esp at entry was kStack+0x204 (return
  // address at kStack+0x200), so ecx = kStack+0x204; esp was aligned down to kStack+0x1f0,
  // the return address copied to kStack+0x1ec, ebp pushed at kStack+0x1e8, ecx at +0x1e4.
  BufferMemory mem;
  mem.add(kStack, std::vector<std::byte>(0x400));
  ASSERT_TRUE(mem.write_uint(kStack + 0x200, 0x08049777, 4, false));      // return address
  ASSERT_TRUE(mem.write_uint(kStack + 0x1ec, 0x08049777, 4, false));      // its copy
  ASSERT_TRUE(mem.write_uint(kStack + 0x1e8, kStack + 0x300, 4, false));  // caller's ebp
  ASSERT_TRUE(mem.write_uint(kStack + 0x1e4, kStack + 0x204, 4, false));  // saved ecx
  RegisterSet regs(Arch::I386);
  regs.set_pc(0x08049020);
  regs.set(kEsp, kStack + 0x1d0);
  regs.set(kEbp, kStack + 0x1e8);
  RegisterSet caller(Arch::I386);
  auto cfa = unwind::apply_row(arch::arch_ops(Arch::I386), *row, regs, mem, Limits{}, caller);
  ASSERT_TRUE(cfa) << cfa.error().detail;
  EXPECT_EQ(*cfa, kStack + 0x204);
  EXPECT_EQ(caller.pc(), 0x08049777u);
  EXPECT_EQ(caller.get(kEsp), kStack + 0x204);
  EXPECT_EQ(caller.get(kEbp), kStack + 0x300);
}

// glibc's i386 .plt FDE: CFA = esp + 4 + ((eip & 15) >= 11 ? 4 : 0), reading eip (DWARF 8),
// which a core gives as the pc, not as a column.
TEST(DwarfI386, PltExpressionReadsEip) {
  dwarf::Row row;
  row.cfa.kind = CfaKind::Expression;
  const std::vector<std::byte> expr = ExprOps()
                                          .breg(kEsp, 4)
                                          .breg(kEip, 0)
                                          .lit(15)
                                          .op(0x1a)  // and
                                          .lit(11)
                                          .op(0x2a)  // ge
                                          .lit(2)
                                          .op(0x24)   // shl
                                          .op(0x22);  // plus
  row.cfa.expr = expr;
  row.ra_reg = kEip;
  dwarf::Rule ra;
  ra.kind = dwarf::RuleKind::Offset;
  ra.offset = -4;
  ASSERT_TRUE(row.set_rule(kEip, ra, 16));
  BufferMemory mem;
  mem.add(kStack, std::vector<std::byte>(0x100));
  ASSERT_TRUE(mem.write_uint(kStack + 0x10, 0x0804a5a5, 4, false));
  RegisterSet regs(Arch::I386);
  regs.set(kEsp, kStack + 0x10);
  regs.set_pc(0x08049030);  // eip & 15 = 0 < 11: CFA = esp + 4
  RegisterSet caller(Arch::I386);
  auto cfa = unwind::apply_row(arch::arch_ops(Arch::I386), row, regs, mem, Limits{}, caller);
  ASSERT_TRUE(cfa) << cfa.error().detail;
  EXPECT_EQ(*cfa, kStack + 0x14);
  EXPECT_EQ(caller.pc(), 0x0804a5a5u);
}

}  // namespace
}  // namespace ehbt
