// SPDX-License-Identifier: Apache-2.0
// The CFI instruction interpreter (DWARF 5 section 6.4.2): runs a CIE's initial instructions
// then an FDE's, producing the rows of the table. One interpreter serves both the lookup of a
// single pc and the enumeration of every row; the row callback is a template parameter so the
// per-opcode loop has no indirect calls.
#include <algorithm>
#include <vector>

#include "dwarf/cfi.hpp"
#include "dwarf/dwarf_constants.hpp"
#include "dwarf/read_error.hpp"
#include "util/byte_reader.hpp"
#include "util/eh_pe.hpp"

namespace ehbt::dwarf {
namespace {

using util::ByteReader;

enum class Flow : uint8_t { Continue, Stop };

class CfaProgram {
 public:
  CfaProgram(const Cie& cie, const Fde& fde, Format fmt, const Limits& limits)
      : cie_(cie), fde_(fde), fmt_(fmt), limits_(limits) {
    row_.ra_reg = cie.ra_reg;
    row_.signal_frame = cie.signal_frame;
    row_.b_key = cie.b_key;
    loc_ = fde.pc_begin;
  }

  // The CIE's initial instructions; their result is what DW_CFA_restore goes back to.
  Expected<void, Error> run_cie() {
    auto ok = run(cie_.instructions, cie_.instructions_offset, true, [](uint64_t) {
      return Flow::Continue;  // never called: advances are rejected in a CIE
    });
    if (!ok) return ok;
    initial_ = row_;
    have_initial_ = true;
    return {};
  }

  // The FDE's instructions. `on_advance(new_loc)` is called before the location moves, with
  // the current row still describing [loc(), new_loc); it returns Stop to end the program.
  template <class OnAdvance>
  Expected<void, Error> run_fde(OnAdvance&& on_advance) {
    return run(fde_.instructions, fde_.instructions_offset, false, on_advance);
  }

  Row& row() { return row_; }
  uint64_t loc() const { return loc_; }

 private:
  static Error err(ErrorCode code, uint64_t where) { return {code, where}; }

  Expected<uint16_t, Error> read_reg(ByteReader& r, uint64_t base) {
    auto reg = r.read_uleb128();
    if (!reg) return unexpected(from_read_error(reg.error(), base));
    if (*reg > 0xffff) return unexpected(err(ErrorCode::BadRegister, *reg));
    return static_cast<uint16_t>(*reg);
  }

  Expected<std::span<const std::byte>, Error> read_block(ByteReader& r, uint64_t base,
                                                         uint64_t op_off) {
    auto len = r.read_uleb128();
    if (!len) return unexpected(from_read_error(len.error(), base));
    if (*len > limits_.max_expr_bytes) return unexpected(err(ErrorCode::LimitExprBytes, op_off));
    std::span<const std::byte> block;
    if (!r.read_bytes(*len, block)) return unexpected(err(ErrorCode::Truncated, op_off));
    return block;
  }

  Expected<void, Error> set(uint16_t reg, const Rule& rule, uint64_t op_off) {
    if (!row_.set_rule(reg, rule, limits_.max_rules)) {
      return unexpected(err(ErrorCode::LimitRules, op_off));
    }
    return {};
  }

  Expected<void, Error> restore(uint16_t reg, uint64_t op_off) {
    // Inside the CIE there is nothing to go back to yet: the register has no rule.
    Rule r = have_initial_ ? initial_.rule(reg) : Rule{};
    return set(reg, r, op_off);
  }

  static uint64_t saturating_add(uint64_t a, uint64_t b) {
    uint64_t s = a + b;
    return s < a ? ~uint64_t{0} : s;
  }
  uint64_t scale_advance(uint64_t delta) const {
    uint64_t out = 0;
    if (__builtin_mul_overflow(delta, cie_.code_align, &out)) return ~uint64_t{0};
    return out;
  }
  int64_t factor(int64_t v) const {
    // Wrapping multiplication: a silly factored offset gives a silly (but defined) offset.
    return static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(cie_.data_align));
  }
  // The CFA offset operand: unsigned and unfactored (def_cfa, def_cfa_offset), or signed and
  // factored by the data alignment (their _sf forms).
  Expected<int64_t, Error> read_cfa_offset(ByteReader& r, uint64_t base, bool factored) {
    if (factored) {
      auto s = r.read_sleb128();
      if (!s) return unexpected(from_read_error(s.error(), base));
      return factor(*s);
    }
    auto u = r.read_uleb128();
    if (!u) return unexpected(from_read_error(u.error(), base));
    return static_cast<int64_t>(*u);
  }

  template <class OnAdvance>
  Expected<void, Error> run(std::span<const std::byte> ins, uint64_t base, bool in_cie,
                            OnAdvance&& on_advance) {
    ByteReader r(ins, fmt_.big_endian, fde_.section_addr + base);
    // Cursor errors name section offsets: `base` is where `ins` starts.
    auto rd = [&](const util::ReadError& e) { return unexpected(from_read_error(e, base)); };

    while (!r.at_end()) {
      const uint64_t op_off = base + r.offset();
      if (++executed_ > limits_.max_cfi_instructions) {
        return unexpected(err(ErrorCode::LimitCfiInstructions, op_off));
      }
      uint8_t op = 0;
      r.read_u8(op);

      // Location changes: compute the new location, then let the caller close the row.
      uint64_t new_loc = 0;
      bool advance = false;
      const uint8_t high = op & cfa::high_mask;
      if (high == cfa::advance_loc) {
        new_loc = saturating_add(loc_, scale_advance(op & cfa::low_mask));
        advance = true;
      } else if (high == cfa::offset) {
        auto off = r.read_uleb128();
        if (!off) return rd(off.error());
        auto ok = set(op & cfa::low_mask,
                      Rule{RuleKind::Offset, 0, factor(static_cast<int64_t>(*off)), {}}, op_off);
        if (!ok) return ok;
        continue;
      } else if (high == cfa::restore) {
        auto ok = restore(op & cfa::low_mask, op_off);
        if (!ok) return ok;
        continue;
      } else {
        switch (op) {
          case cfa::nop:
            continue;
          case cfa::set_loc: {
            util::PointerContext ctx;
            ctx.address_size = cie_.address_size;
            ctx.func_base = fde_.pc_begin;
            auto v = util::read_encoded_pointer(r, cie_.fde_encoding, ctx);
            if (!v) return rd(v.error());
            if (*v < loc_) return unexpected(err(ErrorCode::BadState, op_off));
            new_loc = *v;
            advance = true;
            break;
          }
          case cfa::advance_loc1:
          case cfa::advance_loc2:
          case cfa::advance_loc4:
          case cfa::MIPS_advance_loc8: {
            const unsigned size = op == cfa::advance_loc1   ? 1
                                  : op == cfa::advance_loc2 ? 2
                                  : op == cfa::advance_loc4 ? 4
                                                            : 8;
            uint64_t delta = 0;
            if (!r.read_uint(size, delta)) return unexpected(err(ErrorCode::Truncated, op_off));
            new_loc = saturating_add(loc_, scale_advance(delta));
            advance = true;
            break;
          }
          default: {
            auto ok = execute_rule_op(op, r, base, op_off);
            if (!ok) return ok;
            continue;
          }
        }
      }
      if (advance) {
        if (in_cie) return unexpected(err(ErrorCode::BadState, op_off));
        if (on_advance(new_loc) == Flow::Stop) return {};
        loc_ = new_loc;
      }
    }
    return {};
  }

  // Everything that changes rules or the CFA (no location changes).
  Expected<void, Error> execute_rule_op(uint8_t op, ByteReader& r, uint64_t base, uint64_t op_off) {
    auto rd = [&](const util::ReadError& e) { return unexpected(from_read_error(e, base)); };
    switch (op) {
      case cfa::offset_extended:
      case cfa::val_offset:
      case cfa::GNU_negative_offset_extended: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        auto off = r.read_uleb128();
        if (!off) return rd(off.error());
        int64_t o = factor(static_cast<int64_t>(*off));
        if (op == cfa::GNU_negative_offset_extended) o = static_cast<int64_t>(0 - uint64_t(o));
        const RuleKind kind = op == cfa::val_offset ? RuleKind::ValOffset : RuleKind::Offset;
        return set(*reg, Rule{kind, 0, o, {}}, op_off);
      }
      case cfa::offset_extended_sf:
      case cfa::val_offset_sf: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        auto off = r.read_sleb128();
        if (!off) return rd(off.error());
        const RuleKind kind = op == cfa::val_offset_sf ? RuleKind::ValOffset : RuleKind::Offset;
        return set(*reg, Rule{kind, 0, factor(*off), {}}, op_off);
      }
      case cfa::restore_extended: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        return restore(*reg, op_off);
      }
      case cfa::undefined:
      case cfa::same_value: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        const RuleKind kind = op == cfa::undefined ? RuleKind::Undefined : RuleKind::SameValue;
        return set(*reg, Rule{kind, 0, 0, {}}, op_off);
      }
      case cfa::register_: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        auto src = read_reg(r, base);
        if (!src) return unexpected(src.error());
        return set(*reg, Rule{RuleKind::Register, *src, 0, {}}, op_off);
      }
      case cfa::expression:
      case cfa::val_expression: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        auto block = read_block(r, base, op_off);
        if (!block) return unexpected(block.error());
        const RuleKind kind =
            op == cfa::expression ? RuleKind::Expression : RuleKind::ValExpression;
        return set(*reg, Rule{kind, 0, 0, *block}, op_off);
      }
      case cfa::remember_state:
        if (stack_.size() >= limits_.max_remember_depth) {
          return unexpected(err(ErrorCode::LimitRememberDepth, op_off));
        }
        if (stack_.empty()) stack_.reserve(std::min<std::size_t>(limits_.max_remember_depth, 4));
        stack_.push_back(row_);
        return {};
      case cfa::restore_state:
        // The CFA is restored along with the register rules (as GCC's .cfi_restore_state
        // expects); the location is not.
        if (stack_.empty()) return unexpected(err(ErrorCode::BadState, op_off));
        row_ = stack_.back();
        stack_.pop_back();
        return {};
      case cfa::def_cfa:
      case cfa::def_cfa_sf: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        auto off = read_cfa_offset(r, base, op == cfa::def_cfa_sf);
        if (!off) return unexpected(off.error());
        row_.cfa = CfaRule{CfaKind::RegOffset, *reg, *off, {}};
        return {};
      }
      case cfa::def_cfa_register: {
        auto reg = read_reg(r, base);
        if (!reg) return unexpected(reg.error());
        // From an undefined CFA this starts a register+0 rule. After an expression it goes back
        // to register+offset with the last offset, as libgcc and readelf do (libgcrypt's
        // hand-written assembly relies on this); the expression keeps the offset for that.
        if (row_.cfa.kind == CfaKind::Undefined) row_.cfa.offset = 0;
        row_.cfa.kind = CfaKind::RegOffset;
        row_.cfa.reg = *reg;
        row_.cfa.expr = {};
        return {};
      }
      case cfa::def_cfa_offset:
      case cfa::def_cfa_offset_sf: {
        auto off = read_cfa_offset(r, base, op == cfa::def_cfa_offset_sf);
        if (!off) return unexpected(off.error());
        // Only a register+offset CFA has an offset to change.
        if (row_.cfa.kind != CfaKind::RegOffset) {
          return unexpected(err(ErrorCode::BadState, op_off));
        }
        row_.cfa.offset = *off;
        return {};
      }
      case cfa::def_cfa_expression: {
        auto block = read_block(r, base, op_off);
        if (!block) return unexpected(block.error());
        row_.cfa = CfaRule{CfaKind::Expression, row_.cfa.reg, row_.cfa.offset, *block};
        return {};
      }
      case cfa::AARCH64_negate_ra_state:
        row_.ra_signed = !row_.ra_signed;
        return {};
      case cfa::GNU_args_size: {
        // Only the personality routine cares about the argument area size.
        auto size = r.read_uleb128();
        if (!size) return rd(size.error());
        return {};
      }
      default:
        return unexpected(err(ErrorCode::BadOpcode, op_off));
    }
  }

  const Cie& cie_;
  const Fde& fde_;
  Format fmt_;
  const Limits& limits_;
  Row row_;
  Row initial_;
  bool have_initial_ = false;
  uint64_t loc_ = 0;
  uint64_t executed_ = 0;
  std::vector<Row> stack_;
};

}  // namespace

Expected<Row, Error> evaluate_row(const Cie& cie, const Fde& fde, uint64_t pc, Format fmt,
                                  const Limits& limits) {
  if (pc < fde.pc_begin || pc >= fde.pc_end) {
    return unexpected(Error{ErrorCode::NotCovered, pc});
  }
  CfaProgram prog(cie, fde, fmt, limits);
  auto ok = prog.run_cie();
  if (!ok) return unexpected(ok.error());
  uint64_t end = fde.pc_end;
  ok = prog.run_fde([&](uint64_t new_loc) {
    if (pc < new_loc) {
      end = std::min(new_loc, fde.pc_end);
      return Flow::Stop;
    }
    return Flow::Continue;
  });
  if (!ok) return unexpected(ok.error());
  Row& row = prog.row();
  row.start = prog.loc();
  row.end = end;
  return row;
}

Expected<void, Error> for_each_row(const Cie& cie, const Fde& fde, Format fmt, const Limits& limits,
                                   const std::function<void(const Row&)>& fn) {
  CfaProgram prog(cie, fde, fmt, limits);
  auto ok = prog.run_cie();
  if (!ok) return ok;
  auto emit = [&](uint64_t end) {
    Row& row = prog.row();
    row.start = prog.loc();
    row.end = std::min(end, fde.pc_end);
    if (row.start < row.end && fn) fn(row);
  };
  bool past_end = false;
  ok = prog.run_fde([&](uint64_t new_loc) {
    if (new_loc > prog.loc()) emit(new_loc);
    past_end = new_loc >= fde.pc_end;
    return past_end ? Flow::Stop : Flow::Continue;
  });
  if (!ok) return ok;
  if (!past_end) emit(fde.pc_end);
  return {};
}

}  // namespace ehbt::dwarf
