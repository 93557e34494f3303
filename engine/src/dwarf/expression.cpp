// SPDX-License-Identifier: Apache-2.0
// A bounded DWARF expression evaluator (DWARF 5 section 2.5) for the expressions CFI uses:
// DW_CFA_def_cfa_expression, DW_CFA_expression and DW_CFA_val_expression. Values are of the
// generic type (address-sized); division and comparisons are signed, as the spec says.
// Operations that need a debugger's context (object addresses, TLS, pieces, typed stack
// entries, calls) are reported as Unsupported rather than guessed.
#include <algorithm>

#include "dwarf/cfi.hpp"
#include "dwarf/dwarf_constants.hpp"
#include "dwarf/read_error.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::dwarf {
namespace {

// The stack lives in a fixed array; Limits::max_expr_stack can only lower this.
constexpr std::size_t kHardStackLimit = 256;

class ExprVm {
 public:
  ExprVm(std::span<const std::byte> expr, const ExprContext& ctx, const Limits& limits)
      : r_(expr, ctx.fmt.big_endian), ctx_(ctx), limits_(limits) {
    addr_size_ = ctx.fmt.address_size;
    if (addr_size_ != 2 && addr_size_ != 4 && addr_size_ != 8) addr_size_ = 8;
    bits_ = addr_size_ * 8u;
    mask_ = bits_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits_) - 1;
    stack_cap_ = std::min<std::size_t>(limits.max_expr_stack, kHardStackLimit);
  }

  Expected<uint64_t, Error> run(std::optional<uint64_t> initial_push) {
    if (initial_push) {
      if (auto ok = push(*initial_push, 0); !ok) return unexpected(ok.error());
    }
    uint64_t steps = 0;
    while (!r_.at_end()) {
      op_off_ = r_.offset();
      if (++steps > limits_.max_expr_steps) return fail(ErrorCode::LimitExprSteps, op_off_);
      uint8_t opcode = 0;
      r_.read_u8(opcode);
      if (auto ok = step(opcode); !ok) return unexpected(ok.error());
    }
    if (sp_ == 0) return fail(ErrorCode::StackUnderflow, r_.size());
    return stack_[sp_ - 1] & mask_;
  }

 private:
  using Result = Expected<void, Error>;

  static Unexpected<Error> fail(ErrorCode code, uint64_t where) {
    return unexpected(Error{code, where});
  }
  Unexpected<Error> read_fail(const util::ReadError& e) { return unexpected(from_read_error(e)); }

  // Sign-extends a generic-type value from the address size.
  int64_t sx(uint64_t v) const {
    if (bits_ >= 64) return static_cast<int64_t>(v);
    const uint64_t sign = uint64_t{1} << (bits_ - 1);
    v &= mask_;
    return static_cast<int64_t>((v ^ sign) - sign);
  }

  Result push(uint64_t v, uint64_t where) {
    if (sp_ >= stack_cap_) return fail(ErrorCode::LimitExprStack, where);
    stack_[sp_++] = v & mask_;
    return {};
  }
  bool need(std::size_t n) const { return sp_ >= n; }
  uint64_t& top(std::size_t i = 0) { return stack_[sp_ - 1 - i]; }

  Result read_reg_value(uint64_t reg, int64_t offset) {
    if (reg > 0xffff || ctx_.regs == nullptr) return fail(ErrorCode::BadRegister, reg);
    auto v = ctx_.regs->get(static_cast<uint16_t>(reg));
    if (!v) return fail(ErrorCode::BadRegister, reg);
    return push(*v + static_cast<uint64_t>(offset), op_off_);
  }

  Result deref(unsigned size) {
    if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
    const uint64_t addr = top();
    uint64_t v = 0;
    if (ctx_.mem == nullptr || !ctx_.mem->read_uint(addr, size, ctx_.fmt.big_endian, v)) {
      return fail(ErrorCode::MemoryFault, addr);
    }
    top() = v & mask_;
    return {};
  }

  // bra/skip: the 2-byte offset counts from the end of the operand; landing exactly at the
  // end of the expression finishes it.
  Result branch(bool taken) {
    int16_t off = 0;
    if (!r_.read_s16(off)) return fail(ErrorCode::Truncated, op_off_);
    if (!taken) return {};
    const int64_t target = static_cast<int64_t>(r_.offset()) + off;
    if (target < 0 || static_cast<uint64_t>(target) > r_.size()) {
      return fail(ErrorCode::BadOpcode, op_off_);
    }
    r_.seek(static_cast<uint64_t>(target));
    return {};
  }

  Result binary(uint8_t opcode) {
    if (!need(2)) return fail(ErrorCode::StackUnderflow, op_off_);
    const uint64_t b = top(0);
    const uint64_t a = top(1);
    --sp_;
    uint64_t& out = top();
    switch (opcode) {
      case op::and_:
        out = a & b;
        break;
      case op::or_:
        out = a | b;
        break;
      case op::xor_:
        out = a ^ b;
        break;
      case op::plus:
        out = a + b;
        break;
      case op::minus:
        out = a - b;
        break;
      case op::mul:
        out = a * b;
        break;
      case op::div: {
        const int64_t sa = sx(a), sb = sx(b);
        if (sb == 0) return fail(ErrorCode::DivideByZero, op_off_);
        // INT64_MIN / -1 overflows in C++; the wrapped result is INT64_MIN itself.
        out = (sb == -1) ? 0 - static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa / sb);
        break;
      }
      case op::mod:
        if ((b & mask_) == 0) return fail(ErrorCode::DivideByZero, op_off_);
        out = (a & mask_) % (b & mask_);
        break;
      case op::shl:
        out = b >= bits_ ? 0 : a << b;
        break;
      case op::shr:
        out = b >= bits_ ? 0 : (a & mask_) >> b;
        break;
      case op::shra: {
        const int64_t sa = sx(a);
        out = static_cast<uint64_t>(b >= bits_ ? (sa < 0 ? -1 : 0) : sa >> b);
        break;
      }
      case op::eq:
        out = sx(a) == sx(b);
        break;
      case op::ne:
        out = sx(a) != sx(b);
        break;
      case op::lt:
        out = sx(a) < sx(b);
        break;
      case op::le:
        out = sx(a) <= sx(b);
        break;
      case op::gt:
        out = sx(a) > sx(b);
        break;
      case op::ge:
        out = sx(a) >= sx(b);
        break;
      default:
        return fail(ErrorCode::BadOpcode, op_off_);
    }
    out &= mask_;
    return {};
  }

  Result push_const(unsigned size, bool is_signed) {
    uint64_t v = 0;
    if (is_signed) {
      int64_t s = 0;
      if (!r_.read_sint(size, s)) return fail(ErrorCode::Truncated, op_off_);
      v = static_cast<uint64_t>(s);
    } else if (!r_.read_uint(size, v)) {
      return fail(ErrorCode::Truncated, op_off_);
    }
    return push(v, op_off_);
  }

  Result step(uint8_t opcode) {
    if (opcode >= op::lit0 && opcode <= op::lit31) return push(opcode - op::lit0, op_off_);
    if (opcode >= op::reg0 && opcode <= op::reg31) return read_reg_value(opcode - op::reg0, 0);
    if (opcode >= op::breg0 && opcode <= op::breg31) {
      auto off = r_.read_sleb128();
      if (!off) return read_fail(off.error());
      return read_reg_value(opcode - op::breg0, *off);
    }
    switch (opcode) {
      case op::addr:
        return push_const(addr_size_, false);
      case op::const1u:
        return push_const(1, false);
      case op::const1s:
        return push_const(1, true);
      case op::const2u:
        return push_const(2, false);
      case op::const2s:
        return push_const(2, true);
      case op::const4u:
        return push_const(4, false);
      case op::const4s:
        return push_const(4, true);
      case op::const8u:
        return push_const(8, false);
      case op::const8s:
        return push_const(8, true);
      case op::constu: {
        auto v = r_.read_uleb128();
        if (!v) return read_fail(v.error());
        return push(*v, op_off_);
      }
      case op::consts: {
        auto v = r_.read_sleb128();
        if (!v) return read_fail(v.error());
        return push(static_cast<uint64_t>(*v), op_off_);
      }
      case op::dup:
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        return push(top(), op_off_);
      case op::drop:
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        --sp_;
        return {};
      case op::over:
        if (!need(2)) return fail(ErrorCode::StackUnderflow, op_off_);
        return push(top(1), op_off_);
      case op::pick: {
        uint8_t idx = 0;
        if (!r_.read_u8(idx)) return fail(ErrorCode::Truncated, op_off_);
        if (!need(std::size_t{idx} + 1)) return fail(ErrorCode::StackUnderflow, op_off_);
        return push(top(idx), op_off_);
      }
      case op::swap:
        if (!need(2)) return fail(ErrorCode::StackUnderflow, op_off_);
        std::swap(top(0), top(1));
        return {};
      case op::rot: {
        // [.. x y z] (z on top) becomes [.. z x y].
        if (!need(3)) return fail(ErrorCode::StackUnderflow, op_off_);
        const uint64_t z = top(0), y = top(1), x = top(2);
        top(2) = z;
        top(1) = x;
        top(0) = y;
        return {};
      }
      case op::deref:
        return deref(addr_size_);
      case op::deref_size: {
        uint8_t size = 0;
        if (!r_.read_u8(size)) return fail(ErrorCode::Truncated, op_off_);
        if (size == 0 || size > addr_size_) return fail(ErrorCode::BadOpcode, op_off_);
        return deref(size);
      }
      case op::abs:
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        if (sx(top()) < 0) top() = (0 - top()) & mask_;
        return {};
      case op::neg:
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        top() = (0 - top()) & mask_;
        return {};
      case op::not_:
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        top() = ~top() & mask_;
        return {};
      case op::plus_uconst: {
        auto v = r_.read_uleb128();
        if (!v) return read_fail(v.error());
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        top() = (top() + *v) & mask_;
        return {};
      }
      case op::and_:
      case op::div:
      case op::minus:
      case op::mod:
      case op::mul:
      case op::or_:
      case op::plus:
      case op::shl:
      case op::shr:
      case op::shra:
      case op::xor_:
      case op::eq:
      case op::ge:
      case op::gt:
      case op::le:
      case op::lt:
      case op::ne:
        return binary(opcode);
      case op::bra: {
        if (!need(1)) return fail(ErrorCode::StackUnderflow, op_off_);
        const bool taken = top() != 0;
        --sp_;
        return branch(taken);
      }
      case op::skip:
        return branch(true);
      case op::regx: {
        auto reg = r_.read_uleb128();
        if (!reg) return read_fail(reg.error());
        return read_reg_value(*reg, 0);
      }
      case op::bregx: {
        auto reg = r_.read_uleb128();
        if (!reg) return read_fail(reg.error());
        auto off = r_.read_sleb128();
        if (!off) return read_fail(off.error());
        return read_reg_value(*reg, *off);
      }
      case op::nop:
        return {};
      case op::call_frame_cfa:
        // Not available while computing the CFA itself.
        if (!ctx_.cfa) return fail(ErrorCode::Unsupported, op_off_);
        return push(*ctx_.cfa, op_off_);
      // Valid DWARF that needs context CFI evaluation does not have: a debugger's frame base,
      // object or TLS addresses, other DIEs, typed values, or composite locations.
      case op::xderef:
      case op::xderef_size:
      case op::fbreg:
      case op::piece:
      case op::bit_piece:
      case op::stack_value:
      case op::implicit_value:
      case op::push_object_address:
      case op::call2:
      case op::call4:
      case op::call_ref:
      case op::form_tls_address:
      case op::implicit_pointer:
      case op::addrx:
      case op::constx:
      case op::entry_value:
      case op::const_type:
      case op::regval_type:
      case op::deref_type:
      case op::xderef_type:
      case op::convert:
      case op::reinterpret:
      case op::GNU_push_tls_address:
      case op::GNU_uninit:
      case op::GNU_encoded_addr:
      case op::GNU_implicit_pointer:
      case op::GNU_entry_value:
      case op::GNU_const_type:
      case op::GNU_regval_type:
      case op::GNU_deref_type:
      case op::GNU_convert:
      case op::GNU_reinterpret:
      case op::GNU_parameter_ref:
      case op::GNU_addr_index:
      case op::GNU_const_index:
      case op::GNU_variable_value:
        return fail(ErrorCode::Unsupported, op_off_);
      default:
        return fail(ErrorCode::BadOpcode, op_off_);
    }
  }

  util::ByteReader r_;
  const ExprContext& ctx_;
  const Limits& limits_;
  unsigned addr_size_ = 8;
  unsigned bits_ = 64;
  uint64_t mask_ = ~uint64_t{0};
  std::size_t stack_cap_ = 0;
  std::size_t sp_ = 0;
  uint64_t op_off_ = 0;
  uint64_t stack_[kHardStackLimit];
};

}  // namespace

Expected<uint64_t, Error> evaluate_expression(std::span<const std::byte> expr,
                                              const ExprContext& ctx,
                                              std::optional<uint64_t> initial_push) {
  static const Limits kDefaultLimits;
  const Limits& limits = ctx.limits != nullptr ? *ctx.limits : kDefaultLimits;
  if (expr.size() > limits.max_expr_bytes) {
    return unexpected(Error{ErrorCode::LimitExprBytes, expr.size()});
  }
  ExprVm vm(expr, ctx, limits);
  return vm.run(initial_push);
}

}  // namespace ehbt::dwarf
