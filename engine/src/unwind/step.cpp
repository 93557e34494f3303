// SPDX-License-Identifier: Apache-2.0
#include "unwind/step.hpp"

#include "arch/arch_ops.hpp"
#include "unwind/strategies/entry.hpp"
#include "unwind/strategies/frame_pointer.hpp"
#include "unwind/strategies/go.hpp"
#include "unwind/strategies/scan.hpp"
#include "unwind/strategies/sframe.hpp"
#include "unwind/strategies/signal.hpp"
#include "unwind/strategies/step_context.hpp"
#include "unwind/strategies/stops.hpp"
#include "unwind/strategies/table.hpp"

namespace ehbt::unwind {
namespace {

// Runs the strategies left to right until one answers (see step_context.hpp): each one's
// applies() is inline, so a strategy that does not apply costs a test, not a call, and the
// answer is moved out once (an outcome is a variant: each move is a dispatch on its kind).
template <typename Strategy, typename... Rest>
StepOutcome first_of(StepContext& ctx) {
  if (Strategy::applies(ctx)) {
    if (Attempt out = Strategy::attempt(ctx)) return std::move(*out);
  }
  if constexpr (sizeof...(Rest) > 0) {
    return first_of<Rest...>(ctx);
  } else {
    return stop(ctx.reason, std::move(ctx.detail));  // unreached: GiveUp answers
  }
}

template <typename... Strategies>
struct FirstOf {
  static StepOutcome step(StepContext& ctx) { return first_of<Strategies...>(ctx); }
};

// The order is the contract (step.hpp): the first strategy with an answer decides the step.
// The tables first, then (Auto, UnwindOptions::frame_pointer_fallback) the fallbacks.
using Chain = FirstOf<FramePointerOnly,       // --source frame-pointer: that and nothing else
                      GoRuntimeOverCfi,       // Go runtime frames whose DWARF is wrong
                      GoCgoSwitch,            // asmcgocall: back to the goroutine's stack
                      SFrameRowFirst,         // --source sframe, or the converted tables
                      CfiRow,                 // .eh_frame, .debug_frame
                      OwnSFrameRow,           // Auto: the module's .sframe where no CFI covers
                      SigreturnTrampoline,    // a trampoline no table described
                      GoPclntab,              // a Go function's frame size
                      StopWithoutFallbacks,   // fallbacks off: stop, saying why no table applied
                      PltStub,                // function-entry rule in a PLT stub
                      CallThroughBadPointer,  // function-entry rule outside every module
                      ProvableLeaf,           // return address at sp / in the link register
                      FramePointerChain,      // frame pointer / backchain, caller after a call
                      EntryFunction,          // _start is outermost
                      StackScan,              // a return address on the stack
                      GiveUp>;                // stop, saying why each fallback failed

const Module* module_for(const Frame& frame, const ModuleSet& modules) {
  const uint64_t pc = frame.lookup_pc();
  if (frame.module != nullptr && frame.module->contains(pc)) return frame.module;
  return modules.find(pc);
}

}  // namespace

StepOutcome step_frame(const Frame& frame, Memory& mem, const ModuleSet& modules,
                       const UnwindOptions& options, const Limits& limits, CfiMemo& memo,
                       Frame& caller) {
  StepContext ctx(frame, caller, mem, modules, options, limits, memo,
                  memo.get_ops(frame.regs.arch()), module_for(frame, modules));
  caller.stack_switch = false;  // set by the one strategy that crosses a runtime's switch
  StepOutcome out = Chain::step(ctx);
  // A caller proven by a direct call: a function starts at its target, which later proofs in
  // this walk may use (known_starts.hpp).
  if (out && ctx.proven_target != 0 && caller.pc == ctx.proven_ra)
    memo.known_starts.add(ctx.proven_target, limits);
  // Whichever strategy stepped runtime.sigpanic, its caller's pc is the faulting instruction
  // Go's handler planted: looked up as is (pc - 1 may be in the function before it when the
  // first instruction faulted, as in a C leaf called through cgo).
  if (out && caller.pc != 0 && !caller.exact_pc && !caller.planted && ctx.module != nullptr &&
      go_sigpanic_frame(frame, *ctx.module, limits)) {
    caller.planted = true;
    caller.module = modules.find(caller.lookup_pc(), caller.module);
    caller.classify_jit(modules);
  }
  return out;
}

}  // namespace ehbt::unwind
