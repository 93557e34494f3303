// SPDX-License-Identifier: Apache-2.0
// SFrame rows in the unwinder's row form, so one apply_row serves .eh_frame and .sframe.
// Registers are already DWARF numbers in a FrameRow; what is left is the ABI's implicit
// rules (AMD64's fixed RA slot, a header's fixed FP slot) and the rule kinds.
#include "sframe/sframe.hpp"

namespace ehbt::sframe {
namespace {

// `fixed`: the header's CFA-relative slot for an untracked value (0: none).
dwarf::Rule rule_for(const Recovery& rec, int8_t fixed) {
  dwarf::Rule r;
  switch (rec.kind) {
    case Recovery::Kind::Untracked:
      // AMD64's RA (and an FP the header fixes) sits in its slot; otherwise the value was
      // not touched (FP) or is still in the link register (aarch64/s390x RA): no rule, which
      // the unwinder reads as "same value" for these callee-saved columns.
      if (fixed != 0) {
        r.kind = dwarf::RuleKind::Offset;
        r.offset = fixed;
      }
      return r;
    case Recovery::Kind::AtCfa:
      r.kind = dwarf::RuleKind::Offset;
      r.offset = rec.offset;
      return r;
    case Recovery::Kind::Register:
      r.reg = rec.reg;
      if (rec.offset == 0) {
        r.kind = dwarf::RuleKind::Register;
      } else {
        r.kind = dwarf::RuleKind::RegOffset;
        r.offset = rec.offset;
      }
      return r;
    case Recovery::Kind::AtRegister:
      r.kind = dwarf::RuleKind::AtRegOffset;
      r.reg = rec.reg;
      r.offset = rec.offset;
      return r;
    case Recovery::Kind::Undefined:
      r.kind = dwarf::RuleKind::Undefined;
      return r;
  }
  return r;
}

}  // namespace

dwarf::Row to_dwarf_row(const Header& header, const Function& fn, const FrameRow& row,
                        uint64_t row_start, uint64_t row_end) {
  const ArchInfo& ai = arch_info(abi_arch(header.abi));
  dwarf::Row out;
  out.start = row_start;
  out.end = row_end;
  out.ra_reg = ai.ra_reg;
  out.signal_frame = fn.signal_frame;
  out.ra_signed = row.ra_mangled;
  out.b_key = fn.pauth_b_key;
  out.cfa.kind = row.cfa.deref ? dwarf::CfaKind::RegOffsetDeref : dwarf::CfaKind::RegOffset;
  out.cfa.reg = row.cfa.reg;
  out.cfa.offset = row.cfa.offset;

  // Two rules in an empty row always fit.
  const dwarf::Rule fp = rule_for(row.fp, header.fixed_fp_offset);
  if (fp.kind != dwarf::RuleKind::Unspecified) out.set_rule(ai.fp_reg, fp, kRowCapacity);
  const dwarf::Rule ra = rule_for(row.ra, header.fixed_ra_offset);
  if (ra.kind != dwarf::RuleKind::Unspecified) out.set_rule(ai.ra_reg, ra, kRowCapacity);
  return out;
}

}  // namespace ehbt::sframe
