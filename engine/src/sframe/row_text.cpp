// SPDX-License-Identifier: Apache-2.0
// Canonical texts of a row's CFA, FP and RA (see row_text.hpp).
#include "sframe/row_text.hpp"

#include "arch/arch_ops.hpp"
#include "sframe/expr_patterns.hpp"

namespace ehbt::sframe {
namespace {

std::string reg_name(const ArchInfo& ai, uint16_t reg) {
  if (reg == ai.sp_reg) return "sp";
  if (reg == ai.fp_reg) return "fp";
  return "r" + std::to_string(reg);
}

std::string plus(int64_t v) {
  return (v < 0 ? "" : "+") + std::to_string(v);
}

std::string cfa_text(const dwarf::CfaRule& c, const ArchInfo& ai, uint64_t pc) {
  switch (c.kind) {
    case dwarf::CfaKind::RegOffset:
      return reg_name(ai, c.reg) + plus(c.offset);
    case dwarf::CfaKind::RegOffsetDeref:
      return "*(" + reg_name(ai, c.reg) + plus(c.offset) + ")";
    case dwarf::CfaKind::Expression:
      if (auto d = match_breg_deref(c.expr))
        return "*(" + reg_name(ai, d->reg) + plus(d->offset) + ")";
      if (auto b = match_breg(c.expr)) return reg_name(ai, b->reg) + plus(b->offset);
      if (arch::arch_ops(ai.arch).sframe().plt_pcmask) {
        if (auto p = match_plt_cfa(c.expr)) {
          const int64_t extra = (pc & 15) >= p->threshold ? 8 : 0;
          return "sp" + plus(p->sp_offset + extra);
        }
      }
      return "expression";
    case dwarf::CfaKind::Undefined:
      break;
  }
  return "undefined";
}

// `fixed`: for AMD64's RA, "no rule" is not "same value" (the RA column is the pc itself).
std::string rule_text(const dwarf::Rule& r, const ArchInfo& ai) {
  switch (r.kind) {
    case dwarf::RuleKind::Unspecified:
    case dwarf::RuleKind::SameValue:
      return "same";
    case dwarf::RuleKind::Undefined:
      return "undefined";
    case dwarf::RuleKind::Offset:
      return "c" + plus(r.offset);
    case dwarf::RuleKind::ValOffset:
      return "value c" + plus(r.offset);
    case dwarf::RuleKind::Register:
      return "value " + reg_name(ai, r.reg) + "+0";
    case dwarf::RuleKind::RegOffset:
      return "value " + reg_name(ai, r.reg) + plus(r.offset);
    case dwarf::RuleKind::AtRegOffset:
      return "[" + reg_name(ai, r.reg) + plus(r.offset) + "]";
    case dwarf::RuleKind::Expression:
      if (auto b = match_breg(r.expr)) return "[" + reg_name(ai, b->reg) + plus(b->offset) + "]";
      return "expression";
    case dwarf::RuleKind::ValExpression:
      if (auto b = match_breg(r.expr)) return "value " + reg_name(ai, b->reg) + plus(b->offset);
      return "val_expression";
  }
  return "unknown";
}

}  // namespace

RowText describe_row(const dwarf::Row& row, Arch arch, uint64_t pc) {
  const ArchInfo& ai = arch_info(arch);
  RowText t;
  t.cfa = cfa_text(row.cfa, ai, pc);
  t.fp = rule_text(row.rule(ai.fp_reg), ai);
  t.ra = rule_text(row.rule(row.ra_reg), ai);
  if (row.ra_reg != ai.ra_reg) t.ra += " (column r" + std::to_string(row.ra_reg) + ")";
  if (row.ra_signed) t.ra += " signed";
  return t;
}

}  // namespace ehbt::sframe
