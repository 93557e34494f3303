// SPDX-License-Identifier: Apache-2.0
#include "unwind/validate.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "arch/call_site.hpp"
#include "unwind/code_bytes.hpp"
#include "unwind/go_step.hpp"
#include "util/hex.hpp"

namespace ehbt::unwind {
namespace {

using util::hex;

bool is_plt_symbol(std::string_view name) {
  constexpr std::string_view kPlt = "@plt";
  return name.size() > kPlt.size() && name.substr(name.size() - kPlt.size()) == kPlt;
}

// The symbol starting exactly at `addr` (runtime address), with its runtime start.
std::optional<Symbol> function_at(const ModuleSet& modules, uint64_t addr) {
  const Module* m = modules.find(addr);
  if (m == nullptr || !m->image) return std::nullopt;
  auto sym = m->image->symbolize(m->to_link(addr));
  if (!sym || sym->start + m->bias != addr) return std::nullopt;
  sym->start = addr;
  return sym;
}

// Whether a PLT stub starts at `addr`. Where a Go function starts, none does: Go's table says
// so with one search, where a symbol lookup in a stripped Go binary builds the image's whole
// table (of every function in Go's table).
bool plt_stub_at(const ScanContext& ctx, uint64_t addr) {
  if (go_function_size_at(ctx.modules, addr, ctx.limits)) return false;
  auto sym = function_at(ctx.modules, addr);
  return sym && is_plt_symbol(sym->name);
}

// Whether the function at `from` reaches `callee` by direct unconditional jumps, at most
// Limits::max_tail_jumps of them, searching each function's body (its symbol's size, else
// Limits::max_tail_jump_bytes) for a jump out of it.
bool reaches_by_tail_jumps(const ScanContext& ctx, uint64_t from, uint64_t callee) {
  const Arch arch = ctx.ops.info().arch;
  const unsigned align = arch::jump_alignment(arch);
  CodeBytes code(ctx.mem, ctx.modules);
  std::vector<uint64_t> frontier{from}, seen{from};
  std::vector<std::byte> body;
  for (uint32_t depth = 0; depth < ctx.limits.max_tail_jumps && !frontier.empty(); ++depth) {
    std::vector<uint64_t> next;
    for (const uint64_t start : frontier) {
      // The body: the symbol's size; without one, as far as the cap (every jump is then a
      // candidate: where the function ends is unknown).
      uint64_t size = ctx.limits.max_tail_jump_bytes, inside = 0;
      if (auto go = go_function_size_at(ctx.modules, start, ctx.limits); go && *go != 0) {
        size = inside = std::min<uint64_t>(*go, size);  // as a symbol made from Go's table
      } else if (auto sym = function_at(ctx.modules, start); sym && sym->size != 0) {
        size = inside = std::min<uint64_t>(sym->size, size);
      }
      body.assign(size, std::byte{0});
      body.resize(code.read(start, body));
      for (std::size_t off = 0; off < body.size(); off += align) {
        // A jump through a register may go anywhere, the callee too (musl's
        // __libc_start_main jumps to libc_start_main_stage2 that way): it cannot disprove.
        if (arch::register_jump(arch, body, off)) return true;
        auto to = arch::direct_jump(arch, body, off, start + off);
        if (!to || (*to >= start && *to - start < inside)) continue;  // a jump inside it
        if (*to == callee) return true;
        if (std::find(seen.begin(), seen.end(), *to) != seen.end()) continue;
        if (seen.size() >= ctx.limits.max_tail_jump_functions) return false;
        if (!function_at(ctx.modules, *to)) continue;  // only a function's start goes on
        seen.push_back(*to);
        next.push_back(*to);
      }
    }
    frontier = std::move(next);
  }
  return false;
}

// The functions runtimes plant as return addresses (validate.hpp: is_planted_return).
constexpr std::string_view kPlantedReturns[] = {
    "Builtins_InterpreterEnterAtNextBytecode",  // V8 (node 16+): deoptimised frames
    "Builtins_InterpreterEnterAtBytecode",
    "Builtins_InterpreterEnterBytecodeAdvance",  // the same, in older V8
    "Builtins_InterpreterEnterBytecodeDispatch",
    "__start_context",  // glibc makecontext: where a coroutine's entry function returns
};

// Rule 2 where nothing says where the callee's function starts: the direct call's target is
// taken as that start. It must be in the callee's module, at or below its pc, less than
// Limits::max_function_bytes below it, and below no start the walk knows between the two. A
// call through a register ties nothing to the callee: refused, but for a callee in no module
// (JIT code is called so). (Where either address is in no module, there is nothing to
// compare.)
std::optional<Disproof> disprove_unnamed_callee(const ScanContext& ctx, const Callee& callee,
                                                const arch::CallSite& call) {
  const uint64_t pc = callee.lookup_pc;
  const Module* in = ctx.modules.find(pc);
  if (!call.target) {
    if (in == nullptr) return std::nullopt;
    return Disproof{ProofFailure::IndirectCall,
                    "the call at " + hex(call.at) +
                        " goes through a register, and nothing says where the function of pc " +
                        hex(pc) + " starts (no symbol, no table): nothing ties them"};
  }
  const uint64_t target = *call.target;
  const Module* to = ctx.modules.find(target);
  if (to == nullptr || in == nullptr) return std::nullopt;
  if (to != in) {
    return Disproof{ProofFailure::WrongTarget, "the call at " + hex(call.at) + " goes to " +
                                                   hex(target) + " in another module than pc " +
                                                   hex(pc)};
  }
  if (target > pc || pc - target >= ctx.limits.max_function_bytes) {
    return Disproof{ProofFailure::WrongTarget,
                    "the call at " + hex(call.at) + " goes to " + hex(target) +
                        ", which cannot start the function of pc " + hex(pc) +
                        " (nothing else says where it starts)"};
  }
  // A function the walk knows starts above the target and at or below the pc: the function at
  // the target ends before the callee's pc (a stale return address of a call to a function
  // far below: gopie's runtime, 193 KB under runtime.sigpanic, past gopanic and fatalpanic).
  if (ctx.known != nullptr) {
    if (auto start = ctx.known->between(target, pc)) {
      return Disproof{ProofFailure::WrongTarget,
                      "the call at " + hex(call.at) + " goes to " + hex(target) + ", below " +
                          hex(*start) +
                          ", where a function starts (the target of a call that proved an "
                          "earlier frame), at or below pc " +
                          hex(pc)};
    }
  }
  return std::nullopt;
}

// Rule 2: nothing when the call leads to the callee's function.
std::optional<Disproof> prove_target(const ScanContext& ctx, const Callee& callee,
                                     const arch::CallSite& call) {
  if (!call.target) {
    if (callee.function_start) return std::nullopt;  // through a register: may go anywhere
    return disprove_unnamed_callee(ctx, callee, call);
  }
  const uint64_t target = *call.target;
  if (callee.function_start && target == *callee.function_start) return std::nullopt;
  if (plt_stub_at(ctx, target)) return std::nullopt;
  if (!callee.function_start) return disprove_unnamed_callee(ctx, callee, call);
  // A direct call into another module than the callee's (not to a PLT stub, checked above)
  // cannot lead to it: leaving a module for another takes an import (a PLT stub or a pointer
  // called through a register). Decided before the tail-jump search, which, for a function of
  // unknown size, reads up to its cap of code and may meet some unrelated register jump.
  if (const Module* to = ctx.modules.find(target), *in = ctx.modules.find(*callee.function_start);
      to != nullptr && in != nullptr && to->image && to != in) {
    return Disproof{ProofFailure::WrongTarget,
                    "the call at " + hex(call.at) + " goes to " + hex(target) +
                        " in another module than the function at " + hex(*callee.function_start)};
  }
  if (reaches_by_tail_jumps(ctx, target, *callee.function_start)) return std::nullopt;
  return Disproof{ProofFailure::WrongTarget,
                  "the call at " + hex(call.at) + " goes to " + hex(target) +
                      ", which does not lead to the function at " + hex(*callee.function_start) +
                      " (in " + std::to_string(ctx.limits.max_tail_jumps) + " tail jumps)"};
}

}  // namespace

bool is_planted_return(const ScanContext& ctx, uint64_t ra) {
  auto sym = function_at(ctx.modules, ra);
  return sym && std::find(std::begin(kPlantedReturns), std::end(kPlantedReturns), sym->name) !=
                    std::end(kPlantedReturns);
}

std::optional<bool> follows_a_call(const ScanContext& ctx, uint64_t ra) {
  CodeBytes code(ctx.mem, ctx.modules);
  std::byte last{};
  if (ra == 0 || code.read(ra - 1, std::span(&last, 1)) != 1) return std::nullopt;
  return arch::call_before(ctx.ops.info().arch, code, ra).has_value();
}

std::optional<Disproof> disprove_stack(const ScanContext& ctx, const Callee& callee, uint64_t cfa) {
  // 3. The caller's frame lies above the callee's, in stack the walk can read. (At a
  // function's entry on aarch64 and s390x the CFA may equal sp: nothing was pushed.)
  if (cfa < callee.sp) {
    return Disproof{ProofFailure::StackOrder,
                    "caller CFA " + hex(cfa) + " is below the stack pointer " + hex(callee.sp)};
  }
  const unsigned word = ctx.ops.info().address_size;
  // In the callee's stack: the mapping holding its sp. A caller's frame is on the same stack
  // (only a signal frame, recognised from its own record, leads to another); a CFA past the
  // mapping's end is some other memory's words taken for a frame.
  if (auto stack = ctx.mem.region_of(callee.sp);
      stack && (cfa > stack->end || cfa - stack->start < word)) {
    return Disproof{ProofFailure::StackOrder, "caller CFA " + hex(cfa) +
                                                  " is outside the stack mapping [" +
                                                  hex(stack->start) + ", " + hex(stack->end) +
                                                  ") of the stack pointer " + hex(callee.sp)};
  }
  uint64_t probe = 0;
  if (!ctx.mem.read_uint(cfa - word, word, false, probe)) {
    return Disproof{ProofFailure::StackOrder,
                    "caller CFA " + hex(cfa) + " is outside the stack (unreadable below it)"};
  }
  return std::nullopt;
}

std::optional<Disproof> disprove_caller(const ScanContext& ctx, const Callee& callee, uint64_t ra,
                                        uint64_t cfa, uint64_t* proving_target) {
  if (proving_target != nullptr) *proving_target = 0;
  if (auto no = disprove_stack(ctx, callee, cfa)) return no;
  // 1. A return address: a call instruction ends right there.
  CodeBytes code(ctx.mem, ctx.modules);
  std::byte last{};
  if (ra == 0 || code.read(ra - 1, std::span(&last, 1)) != 1) {
    const Module* m = ra != 0 ? ctx.modules.find(ra - 1) : nullptr;
    return Disproof{ProofFailure::CodeUnreadable,
                    "cannot read the code before caller pc " + hex(ra) +
                        (m != nullptr && !m->missing.empty() ? ": " + m->missing : "")};
  }
  auto call = arch::call_before(ctx.ops.info().arch, code, ra);
  if (!call) {
    return Disproof{ProofFailure::NoCallBefore,
                    "caller pc " + hex(ra) + " follows no call instruction"};
  }
  // 2. A direct call leads to the callee's function.
  arch::CallSite site = *call;
  auto no = prove_target(ctx, callee, site);
  // Through a GOT slot (`call *disp(%rip)`): the slot's value in target memory (the file holds it
  // unrelocated) is where the call went, as a direct call's target. It may only prove (a callee
  // whose start nothing says; the target a proof reports): a slot written since the call (a
  // function pointer in data, not the GOT) leaves the candidate as the call alone leaves it.
  if (!site.target && (!no || no->failure == ProofFailure::IndirectCall)) {
    if (auto slot = arch::call_slot(ctx.ops.info().arch, code, site)) {
      uint64_t value = 0;
      arch::CallSite through = site;
      if (ctx.mem.read_uint(*slot, 8, false, value) && value != 0) through.target = value;
      if (through.target && !prove_target(ctx, callee, through)) {
        no.reset();
        site = through;
      }
    }
  }
  if (!no && proving_target != nullptr && site.target && *site.target != ra)
    *proving_target = *site.target;  // (a call to the next instruction reads its own pc)
  return no;
}

}  // namespace ehbt::unwind
