// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/go.hpp"

namespace ehbt::unwind {

Attempt GoRuntimeOverCfi::attempt(StepContext& ctx) {
  if (auto rec = go_step_over_cfi(ctx.ops, ctx.frame, *ctx.module, ctx.mem, ctx.limits)) {
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
