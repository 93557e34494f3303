// SPDX-License-Identifier: Apache-2.0
#include "unwind/apply_row.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "unwind/describe.hpp"

namespace ehbt::unwind {
namespace {

// The outcome of one register rule.
struct RuleValue {
  enum Kind : uint8_t { Value, Unknown, Fault, ExprError } kind = Unknown;
  uint64_t value = 0;       // Value
  uint64_t fault_addr = 0;  // Fault
  dwarf::Error error;       // ExprError
};

struct RowEnv {
  const arch::ArchOps& ops;
  const RegisterSet& regs;
  const RegisterSet& expr_regs;  // regs, plus the pc column where the arch has one
  Memory& mem;
  const Limits& limits;
  uint64_t cfa;
  const ArchInfo& ai;
};

dwarf::Format format_of(const ArchInfo& ai) {
  return dwarf::Format{ai.big_endian, ai.address_size};
}

// The value saved at `addr` (a rule's "saved at" address), or where the read failed.
RuleValue read_saved(Memory& mem, uint64_t addr, unsigned address_size, bool big_endian) {
  RuleValue out;
  if (mem.read_uint(addr, address_size, big_endian, out.value)) {
    out.kind = RuleValue::Value;
  } else {
    out.kind = RuleValue::Fault;
    out.fault_addr = addr;
  }
  return out;
}

RuleValue read_saved(const RowEnv& env, uint64_t addr) {
  return read_saved(env.mem, addr, env.ai.address_size, env.ai.big_endian);
}

RuleValue evaluate(const RowEnv& env, const dwarf::Rule& rule, uint16_t reg) {
  RuleValue out;
  switch (rule.kind) {
    case dwarf::RuleKind::Unspecified:
      if (env.ops.callee_saved(reg) && env.regs.has(reg)) {
        out.kind = RuleValue::Value;
        out.value = env.regs.raw(reg);
      }
      return out;
    case dwarf::RuleKind::Undefined:
      return out;
    case dwarf::RuleKind::SameValue:
      if (env.regs.has(reg)) {
        out.kind = RuleValue::Value;
        out.value = env.regs.raw(reg);
      }
      return out;
    case dwarf::RuleKind::Offset:
      return read_saved(env, env.cfa + static_cast<uint64_t>(rule.offset));
    case dwarf::RuleKind::ValOffset:
      out.kind = RuleValue::Value;
      out.value = env.cfa + static_cast<uint64_t>(rule.offset);
      return out;
    case dwarf::RuleKind::Register:
      if (env.regs.has(rule.reg)) {
        out.kind = RuleValue::Value;
        out.value = env.regs.raw(rule.reg);
      }
      return out;
    // SFrame V3 flexible rules: a register plus an offset, as the value or as where it is saved.
    case dwarf::RuleKind::RegOffset:
      if (env.regs.has(rule.reg)) {
        out.kind = RuleValue::Value;
        out.value = env.regs.raw(rule.reg) + static_cast<uint64_t>(rule.offset);
      }
      return out;
    case dwarf::RuleKind::AtRegOffset:
      if (!env.regs.has(rule.reg)) return out;
      return read_saved(env, env.regs.raw(rule.reg) + static_cast<uint64_t>(rule.offset));
    case dwarf::RuleKind::Expression:
    case dwarf::RuleKind::ValExpression: {
      dwarf::ExprContext ctx;
      ctx.regs = &env.expr_regs;
      ctx.mem = &env.mem;
      ctx.fmt = format_of(env.ai);
      ctx.limits = &env.limits;
      ctx.cfa = env.cfa;
      auto r = dwarf::evaluate_expression(rule.expr, ctx, env.cfa);
      if (!r) {
        out.kind = RuleValue::ExprError;
        out.error = r.error();
        return out;
      }
      if (rule.kind == dwarf::RuleKind::Expression) return read_saved(env, *r);
      out.kind = RuleValue::Value;
      out.value = *r;
      return out;
    }
  }
  return out;
}

// x86-64's return-address column (16) is the instruction pointer itself, and glibc's .plt
// CFA expression reads it (DW_OP_breg16; i386's: DW_OP_breg8, eip). Core and ptrace registers
// give the pc apart, so expressions see a copy with the column filled in; plain rules never
// read it. The copy is made on the heap: rows with expressions are rare (PLT entries), and an
// 800-byte scratch set on every step's stack frame cost an 800-byte erase per step.
const RegisterSet& with_pc_column(const ArchInfo& ai, const RegisterSet& regs,
                                  std::unique_ptr<RegisterSet>& scratch) {
  const bool pc_column = ai.arch == Arch::X86_64 || ai.arch == Arch::I386;
  if (!pc_column || regs.has(ai.ra_reg)) return regs;
  scratch = std::make_unique<RegisterSet>(regs);
  scratch->set(ai.ra_reg, regs.pc());
  return *scratch;
}

Unexpected<StopInfo> stop(StopReason reason, std::string detail, uint64_t cfa = 0) {
  return unexpected(StopInfo{reason, std::move(detail), cfa});
}

}  // namespace

Expected<uint64_t, StopInfo> apply_row(const arch::ArchOps& ops, const dwarf::Row& row,
                                       const RegisterSet& regs, Memory& mem, const Limits& limits,
                                       RegisterSet& caller) {
  const ArchInfo& ai = ops.info();
  // The byte order and width as plain locals. A dwarf::Format local (two bytes stored apart)
  // made gcc merge them with a word load that stalled on store forwarding in every step.
  const unsigned address_size = ai.address_size;
  const bool big_endian = ai.big_endian;

  // One pass over the rules finds both whether an expression needs the pc column and the
  // return address's rule (the first for its column, as Row::rule answers).
  const std::size_t num_rules = std::min<std::size_t>(row.num_rules, row.rules.size());
  bool needs_expr_regs = row.cfa.kind == dwarf::CfaKind::Expression;
  const dwarf::Rule* ra_found = nullptr;
  for (std::size_t i = 0; i < num_rules; ++i) {
    const dwarf::RegRule& r = row.rules[i];
    needs_expr_regs = needs_expr_regs || r.rule.kind == dwarf::RuleKind::Expression ||
                      r.rule.kind == dwarf::RuleKind::ValExpression;
    if (ra_found == nullptr && r.reg == row.ra_reg) ra_found = &r.rule;
  }
  std::unique_ptr<RegisterSet> scratch;
  const RegisterSet& expr_regs = needs_expr_regs ? with_pc_column(ai, regs, scratch) : regs;

  uint64_t cfa = 0;
  switch (row.cfa.kind) {
    case dwarf::CfaKind::RegOffset:
      if (!regs.has(row.cfa.reg)) {
        return stop(StopReason::BadUnwindInfo,
                    "CFA needs " + reg_name(ai.arch, row.cfa.reg) + ", unknown in this frame");
      }
      cfa = regs.raw(row.cfa.reg) + static_cast<uint64_t>(row.cfa.offset);
      break;
    case dwarf::CfaKind::RegOffsetDeref: {
      // SFrame V3 flexible CFA (DRAP): the CFA is stored at reg + offset.
      if (!regs.has(row.cfa.reg)) {
        return stop(StopReason::BadUnwindInfo,
                    "CFA needs " + reg_name(ai.arch, row.cfa.reg) + ", unknown in this frame");
      }
      const uint64_t at = regs.raw(row.cfa.reg) + static_cast<uint64_t>(row.cfa.offset);
      if (!mem.read_uint(at, address_size, big_endian, cfa)) {
        return stop(StopReason::MemoryFault, read_failed(at, address_size));
      }
      break;
    }
    case dwarf::CfaKind::Expression: {
      dwarf::ExprContext ctx;
      ctx.regs = &expr_regs;
      ctx.mem = &mem;
      ctx.fmt = format_of(ai);
      ctx.limits = &limits;
      auto r = dwarf::evaluate_expression(row.cfa.expr, ctx);
      if (!r) {
        return stop(dwarf::to_stop_reason(r.error().code),
                    std::string(dwarf::to_string(r.error().code)) + " in CFA expression (at " +
                        hex(r.error().where) + ")");
      }
      cfa = *r;
      break;
    }
    case dwarf::CfaKind::Undefined:
      return stop(StopReason::BadUnwindInfo, "row has no CFA rule");
  }
  // address_size is 4 or 8: a mask, not a division, on every step.
  if (cfa == 0 || (cfa & (ai.address_size - 1u)) != 0) {
    return stop(StopReason::BadUnwindInfo, "CFA " + hex(cfa) + " is zero or misaligned");
  }

  // Rules other than "saved at CFA+N" are rare (see `evaluate`); only they need the env.
  auto evaluate_rare = [&](const dwarf::Rule& rule, uint16_t reg) {
    const RowEnv env{ops, regs, expr_regs, mem, limits, cfa, ai};
    return evaluate(env, rule, reg);
  };
  // A fresh set; the walk hands over the one it reused from two steps back.
  caller.reset(ai.arch);
  // Callee-saved registers first; the rules below override them.
  ops.copy_callee_saved(regs, caller);
  bool sp_ruled = false;
  for (std::size_t i = 0; i < num_rules; ++i) {
    const uint16_t reg = row.rules[i].reg;
    const dwarf::Rule& rule = row.rules[i].rule;
    if (reg == row.ra_reg) continue;
    if (reg == ai.sp_reg) sp_ruled = rule.kind != dwarf::RuleKind::Unspecified;
    // "Saved at CFA+N": nearly every rule of compiled code.
    const RuleValue v =
        rule.kind == dwarf::RuleKind::Offset
            ? read_saved(mem, cfa + static_cast<uint64_t>(rule.offset), address_size, big_endian)
            : evaluate_rare(rule, reg);
    if (v.kind == RuleValue::Value) {
      caller.set(reg, v.value);
    } else {
      caller.clear(reg);
    }
  }
  if (!sp_ruled) caller.set(ai.sp_reg, cfa - static_cast<uint64_t>(ai.cfa_sp_offset));

  const dwarf::Rule ra_rule = ra_found != nullptr ? *ra_found : dwarf::Rule{};
  if (ra_rule.kind == dwarf::RuleKind::Undefined) {
    return stop(StopReason::Outermost, "", cfa);
  }
  const RuleValue ra =
      ra_rule.kind == dwarf::RuleKind::Offset
          ? read_saved(mem, cfa + static_cast<uint64_t>(ra_rule.offset), address_size, big_endian)
          : evaluate_rare(ra_rule, row.ra_reg);
  switch (ra.kind) {
    case RuleValue::Value:
      break;
    case RuleValue::Fault:
      return stop(StopReason::MemoryFault, read_failed(ra.fault_addr, address_size), cfa);
    case RuleValue::ExprError:
      return stop(dwarf::to_stop_reason(ra.error.code),
                  std::string(dwarf::to_string(ra.error.code)) +
                      " in return-address expression (at " + hex(ra.error.where) + ")",
                  cfa);
    case RuleValue::Unknown:
      return stop(StopReason::BadUnwindInfo,
                  "return address (" + reg_name(ai.arch, row.ra_reg) + ") is unknown", cfa);
  }
  caller.set(row.ra_reg, ra.value);
  caller.set_pc(ops.strip_return_address(ra.value));
  return cfa;
}

}  // namespace ehbt::unwind
