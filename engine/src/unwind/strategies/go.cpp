// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/go.hpp"

#include "arch/call_site.hpp"
#include "unwind/code_bytes.hpp"
#include "unwind/describe.hpp"
#include "unwind/go_systemstack.hpp"
#include "unwind/validate.hpp"

namespace ehbt::unwind {
namespace {

// Whether `ra` follows a direct call of the function at `start`: every caller of
// runtime.asmcgocall (runtime.cgocall, and the runtime's own C calls) calls it directly. The
// general proof also lets a call of another function through when that function's body holds a
// jump through a register, and on s390x every return is one (`br %r14`): a wrong depth led to
// the stale return address of cgocall's call of entersyscall, a word below the right one.
bool direct_call_of(StepContext& ctx, uint64_t ra, std::optional<uint64_t> start) {
  if (!start) return true;  // nothing says where asmcgocall starts: the general proof alone
  CodeBytes code(ctx.mem, ctx.modules);
  auto call = arch::call_before(ctx.ops.info().arch, code, ra);
  return call && call->target && *call->target == *start;
}

// The caller a runtime's stack switch recorded, proven as every frame not from a table (the
// callee's sp is where the switch left the goroutine's stack): why not, or nothing.
std::optional<std::string> disprove_switched_caller(StepContext& ctx, uint64_t switched_sp,
                                                    const arch::Recovered& caller) {
  const Callee callee{switched_sp, ctx.frame.lookup_pc(), ctx.code_hint().function_start()};
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
  if (auto no = disprove_caller(scan, callee, caller.regs.pc(), caller.cfa)) return no->detail;
  return std::nullopt;
}

// The proven caller, its step marked as the one that may leave the stack region it started in.
Attempt finish_switch(StepContext& ctx, arch::Recovered caller) {
  auto out = finish(ctx, std::move(caller), FrameSource::GoPclntab, false);
  if (out) ctx.caller.stack_switch = true;
  return out;
}

// runtime.systemstack or runtime.mcall on g0 to its caller on the goroutine's stack
// (unwind/go_systemstack.hpp), proven as the cgo crossing's caller: inside the goroutine's
// g.stack, after a call of the switch function, its frame in the mapping of the goroutine's sp.
// Anything else stops the walk.
Attempt cross_g0_switch(StepContext& ctx, bool mcall) {
  auto sw = mcall ? go_cross_mcall(ctx.frame, *ctx.module, ctx.mem, ctx.limits)
                  : go_cross_systemstack(ctx.frame, *ctx.module, ctx.mem, ctx.limits);
  if (!sw) return unexpected(std::move(sw.error()));
  const char* kWhat = mcall ? "runtime.mcall's stack switch" : "runtime.systemstack's stack switch";
  if (auto no = disprove_switched_caller(ctx, sw->switched_sp, sw->caller)) {
    return stop(StopReason::NoUnwindInfo, std::string(kWhat) + ": " + *no);
  }
  return finish_switch(ctx, std::move(sw->caller));
}

// Go's table gives sp, pc and the frame pointer; the g register is the callee's (see
// go_g_register): kept so that runtime.systemstack's crossing can start from it.
void carry_g(const Frame& frame, arch::Recovered& rec) {
  const std::optional<uint16_t> g = go_g_register(frame.regs.arch());
  if (g && frame.regs.has(*g) && !rec.regs.has(*g)) rec.regs.set(*g, frame.regs.raw(*g));
}

}  // namespace

Attempt GoCgoSwitch::attempt(StepContext& ctx) {
  const GoSwitch kind = go_switch_at(ctx.frame, *ctx.module, ctx.limits);
  if (kind == GoSwitch::None) return std::nullopt;
  if (kind == GoSwitch::SystemStack || kind == GoSwitch::MCall) {
    // An architecture whose g register and switch layout go_systemstack.cpp does not know
    // (go_switch_at may name the switch for one whose cgo layout it knows): mcall is left to
    // Go's table (which ends the walk there), systemstack stops as it did before.
    if (!go_g_register(ctx.frame.regs.arch())) {
      if (kind == GoSwitch::MCall) return std::nullopt;
      return stop(StopReason::NoUnwindInfo,
                  "runtime.systemstack: its caller is on the goroutine's stack, which only the "
                  "goroutine's g.sched records (not followed on this architecture)");
    }
    return cross_g0_switch(ctx, kind == GoSwitch::MCall);
  }
  constexpr const char* kWhat = "runtime.asmcgocall's stack switch";
  auto sw = go_cross_cgo_switch(ctx.frame, ctx.mem);
  if (!sw) return unexpected(recover_failure(sw.error(), kWhat));
  // The caller is proven as every frame not from a table, on the stack the runtime switched
  // back to: its pc follows a call of asmcgocall, its frame lies in the stack mapping of the
  // goroutine sp and, where the runtime named the goroutine, inside its g.stack. That is the
  // only place a step may leave the stack region it started in without a signal frame.
  if (sw->stack_hi != 0 && (sw->switched_sp < sw->stack_lo || sw->caller.cfa > sw->stack_hi)) {
    return stop(StopReason::NoUnwindInfo, std::string(kWhat) + ": caller CFA " +
                                              hex(sw->caller.cfa) +
                                              " is outside the goroutine's stack [" +
                                              hex(sw->stack_lo) + ", " + hex(sw->stack_hi) + ")");
  }
  if (auto no = disprove_switched_caller(ctx, sw->switched_sp, sw->caller)) {
    return stop(StopReason::NoUnwindInfo, std::string(kWhat) + ": " + *no);
  }
  if (!direct_call_of(ctx, sw->caller.regs.pc(), ctx.code_hint().function_start())) {
    return stop(StopReason::NoUnwindInfo, std::string(kWhat) + ": caller pc " +
                                              hex(sw->caller.regs.pc()) +
                                              " follows no direct call of asmcgocall");
  }
  return finish_switch(ctx, std::move(sw->caller));
}

Attempt GoRuntimeOverCfi::attempt(StepContext& ctx) {
  if (auto rec = go_step_over_cfi(ctx.ops, ctx.frame, *ctx.module, ctx.mem, ctx.limits)) {
    carry_g(ctx.frame, *rec);
    // Both callers it steps to were planted, not called (the faulting pc under sigpanic, the
    // sigreturn trampoline under sigtramp): their frames prove their stack only.
    if (disprove(ctx, *rec, "go_pclntab", true)) return std::nullopt;
    return finish(ctx, std::move(*rec), FrameSource::GoPclntab, false);
  }
  return std::nullopt;
}

Attempt GoPclntab::attempt(StepContext& ctx) {
  auto rec = go_step(ctx.frame, *ctx.module, ctx.mem, ctx.limits);
  if (!rec) return std::nullopt;
  carry_g(ctx.frame, *rec);
  // Validated like every frame not from an unwind table: Go's table gives the frame size
  // exactly, but at a pc it covers wrongly (or memory it misreads) the word taken for the
  // return address is not one.
  const uint64_t ra = rec->regs.pc();
  if (ra != 0 && disprove(ctx, *rec, "go_pclntab",
                          go_planted_return(ctx.frame, *ctx.module, ra, ctx.limits))) {
    return std::nullopt;
  }
  auto out = finish(ctx, std::move(*rec), FrameSource::GoPclntab, false);
  // Outermost: a function Go's own traceback ends at, or a zero return address.
  if (out || out.error().reason == StopReason::Outermost) return out;
  return std::nullopt;
}

}  // namespace ehbt::unwind
