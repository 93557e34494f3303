// SPDX-License-Identifier: Apache-2.0
// DWARF rule -> SFrame recovery, one row at a time. SFrame tracks the CFA, FP and RA only;
// other registers' rules are dropped, except SP's, which SFrame always derives from the CFA.
#include "sframe/row_classify.hpp"

#include <limits>

#include "arch/arch_ops.hpp"
#include "sframe/format.hpp"

namespace ehbt::sframe {
namespace {

using Kind = dwarf::RuleKind;
using Form = RowVerdict::Form;

std::string reg_text(uint16_t reg) {
  return "r" + std::to_string(reg);
}

bool fits_s32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

struct Builder {
  const ArchInfo& ai;
  const arch::SFrameRules& rules;
  bool v3;
  bool flex = false;
  std::string why;

  bool fail(std::string reason) {
    if (why.empty()) why = std::move(reason);
    return false;
  }
  // A construct only a V3 flexible FDE holds.
  bool need_flex(const std::string& what) {
    if (!v3) return fail(what + ": needs V3 (flexible FDE)");
    flex = true;
    return true;
  }

  bool cfa(const dwarf::CfaRule& c, CfaRecovery& out) {
    switch (c.kind) {
      case dwarf::CfaKind::RegOffset:
      case dwarf::CfaKind::RegOffsetDeref:
        out.reg = c.reg;
        out.offset = c.offset;
        out.deref = c.kind == dwarf::CfaKind::RegOffsetDeref;
        if (out.deref && !need_flex("CFA is loaded from memory (DRAP)")) return false;
        if (c.reg != ai.sp_reg && c.reg != ai.fp_reg &&
            !need_flex("CFA based on " + reg_text(c.reg))) {
          return false;
        }
        break;
      case dwarf::CfaKind::Expression: {
        auto d = match_breg_deref(c.expr);
        if (!d) return fail("CFA is a DWARF expression");
        if (!need_flex("CFA is a DWARF expression (DRAP)")) return false;
        out.reg = d->reg;
        out.offset = d->offset;
        out.deref = true;
        break;
      }
      case dwarf::CfaKind::Undefined:
        return fail("row has no CFA rule");
    }
    if (rules.scaled_cfa) {
      // Stored as (offset - 160) / 8.
      if ((out.offset - 160) % fmt::kS390xCfaAlignment != 0) {
        return fail("s390x CFA offset " + std::to_string(out.offset) + " is not 160 + 8n");
      }
      if (!fits_s32((out.offset - 160) / fmt::kS390xCfaAlignment)) {
        return fail("CFA offset out of range");
      }
    } else if (!fits_s32(out.offset)) {
      return fail("CFA offset out of range");
    }
    return true;
  }

  // FP or RA. `what` names it in reasons.
  bool saved(const dwarf::Rule& r, const std::string& what, Recovery& out) {
    switch (r.kind) {
      case Kind::Unspecified:
      case Kind::SameValue:
        out.kind = Recovery::Kind::Untracked;
        return true;
      case Kind::Undefined:
        out.kind = Recovery::Kind::Undefined;
        return true;
      case Kind::Offset:
        if (!fits_s32(r.offset)) return fail(what + " offset out of range");
        out.kind = Recovery::Kind::AtCfa;
        out.offset = r.offset;
        return true;
      case Kind::ValOffset:
        return fail(what + " is the CFA plus an offset (val_offset)");
      case Kind::Register:
        out.kind = Recovery::Kind::Register;
        out.reg = r.reg;
        return true;
      case Kind::RegOffset:
        out.kind = Recovery::Kind::Register;
        out.reg = r.reg;
        out.offset = r.offset;
        return true;
      case Kind::AtRegOffset:
        out.kind = Recovery::Kind::AtRegister;
        out.reg = r.reg;
        out.offset = r.offset;
        return true;
      case Kind::Expression:
      case Kind::ValExpression: {
        auto b = match_breg(r.expr);
        if (!b) return fail(what + " rule is a DWARF expression");
        out.kind =
            r.kind == Kind::Expression ? Recovery::Kind::AtRegister : Recovery::Kind::Register;
        out.reg = b->reg;
        out.offset = b->offset;
        return true;
      }
    }
    return fail(what + " rule unknown");
  }

  // Register-based FP/RA: V3 flexible, or V2 s390x's register encoding (plain register).
  bool register_form(Recovery& rec, const std::string& what) {
    if (rec.kind != Recovery::Kind::Register && rec.kind != Recovery::Kind::AtRegister) {
      return true;
    }
    if (!fits_s32(rec.offset)) return fail(what + " offset out of range");
    if (!v3 && rules.v2_register_words && rec.kind == Recovery::Kind::Register && rec.offset == 0) {
      return true;  // V2 s390x: the register number rides in the offset word
    }
    return need_flex(what + " in/at register " + reg_text(rec.reg));
  }
};

}  // namespace

RowVerdict classify_row(const dwarf::Row& row, Arch arch, uint8_t version) {
  RowVerdict v;
  Builder b{arch_info(arch), arch::arch_ops(arch).sframe(), version >= fmt::kVersion3, false, {}};
  const arch::SFrameRules& rules = b.rules;
  const ArchInfo& ai = b.ai;
  if (row.ra_reg != ai.ra_reg) {
    v.why = "return address column " + reg_text(row.ra_reg) + " is not the ABI's";
    return v;
  }

  // The x86-64 PLT CFA: a PCMASK function. FP/RA still come from the row.
  bool plt = false;
  if (rules.plt_pcmask && row.cfa.kind == dwarf::CfaKind::Expression) {
    if (auto p = match_plt_cfa(row.cfa.expr)) {
      plt = true;
      v.plt = *p;
    }
  }
  FrameRow& out = v.row;
  bool ok = plt || b.cfa(row.cfa, out.cfa);

  // SP: SFrame always takes the caller's SP from the CFA. A rule saying the same is fine,
  // and so is a save slot (s390x's stmg stores r15 with the other registers): the value
  // saved there is the SP at the call, CFA - cfa_sp_offset by the CFA's definition. gas
  // drops such rules the same way.
  const dwarf::Rule sp = row.rule(ai.sp_reg);
  if (ok && sp.kind != Kind::Unspecified) {
    bool same =
        (sp.kind == Kind::ValOffset && sp.offset == -ai.cfa_sp_offset) || sp.kind == Kind::Offset;
    // s390x leaf functions park r15 in a floating-point register; the ABI defines the CFA as
    // that SP + 160, so the copy adds nothing (gas skips it too). Elsewhere an SP held in
    // another register marks a frame whose CFA is not the caller's SP (longjmp-like code).
    same = same || (rules.sp_copy_in_register && sp.kind == Kind::Register);
    if (!same && sp.kind == Kind::Expression && out.cfa.deref && ai.cfa_sp_offset == 0) {
      // A signal frame: SP and CFA both loaded from the same slot.
      auto e = match_breg(sp.expr);
      same = e && e->reg == out.cfa.reg && e->offset == out.cfa.offset;
    }
    if (!same) ok = b.fail("SP has its own rule");
  }

  ok = ok && b.saved(row.rule(ai.fp_reg), "FP", out.fp) &&
       b.saved(row.rule(ai.ra_reg), "RA", out.ra);
  if (ok && out.fp.kind == Recovery::Kind::Undefined) ok = b.fail("FP is undefined");
  ok = ok && b.register_form(out.fp, "FP") && b.register_form(out.ra, "RA");

  // The default FRE words of the ABI (format.hpp).
  if (ok && !rules.defined()) {
    ok = b.fail("SFrame defines no ABI for " + std::string(ai.name));
  } else if (ok && rules.fixed_ra_offset != 0) {
    // The RA has a fixed slot (x86-64: CFA-8); anything else needs a flexible FDE.
    const int64_t fixed = rules.fixed_ra_offset;
    if (out.ra.kind == Recovery::Kind::AtCfa && out.ra.offset == fixed) {
      out.ra.kind = Recovery::Kind::Untracked;
      out.ra.offset = 0;
    } else if (out.ra.kind == Recovery::Kind::Untracked) {
      ok = b.fail("RA has no rule (same value)");
    } else if (out.ra.kind == Recovery::Kind::AtCfa) {
      ok = b.need_flex("RA not at CFA" + std::to_string(fixed));
    }
  } else if (ok && !rules.ra_padding) {
    // The RA word stands before the FP word, with no padding (aarch64).
    if (out.fp.kind != Recovery::Kind::Untracked && out.ra.kind == Recovery::Kind::Untracked) {
      ok = b.need_flex("FP saved while RA stays in the link register");
    }
  } else if (ok) {
    // The RA word 0 means "not saved" (s390x): an RA at CFA+0 cannot be a default word.
    if (out.ra.kind == Recovery::Kind::AtCfa && out.ra.offset == 0) {
      ok = b.need_flex("RA at CFA+0");
    }
  }
  if (!ok) {
    v.form = Form::Inexpressible;
    v.why = b.why;
    return v;
  }
  out.ra_mangled = rules.pauth && row.ra_signed;
  if (out.ra.kind == Recovery::Kind::Undefined) {
    // The outermost frame: no data words at all, whatever else the row says.
    FrameRow outer;
    outer.ra.kind = Recovery::Kind::Undefined;
    outer.cfa.reg = ai.sp_reg;
    outer.cfa.offset = ai.cfa_sp_offset;
    out = outer;
    v.form = plt ? Form::Plt : Form::Default;
    if (plt) {
      v.form = Form::Inexpressible;
      v.why = "PLT row with an undefined RA";
    }
    return v;
  }
  v.form = plt ? Form::Plt : (b.flex ? Form::Flex : Form::Default);
  if (plt && b.flex) {
    v.form = Form::Inexpressible;
    v.why = "PLT row needing a flexible FDE";
  }
  return v;
}

}  // namespace ehbt::sframe
