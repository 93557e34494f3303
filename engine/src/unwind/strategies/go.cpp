// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/go.hpp"

namespace ehbt::unwind {

Attempt GoRuntimeOverCfi::attempt(StepContext& ctx) {
  if (auto rec = go_step_over_cfi(ctx.ops, ctx.frame, *ctx.module, ctx.mem, ctx.limits)) {
    return finish(ctx, std::move(*rec), FrameSource::GoPclntab, false);
  }
  return std::nullopt;
}

Attempt GoPclntab::attempt(StepContext& ctx) {
  auto rec = go_step(ctx.frame, *ctx.module, ctx.mem, ctx.limits);
  if (!rec) return std::nullopt;
  auto out = finish(ctx, std::move(*rec), FrameSource::GoPclntab, false);
  // Outermost: a function Go's own traceback ends at, or a zero return address.
  if (out || out.error().reason == StopReason::Outermost) return out;
  return std::nullopt;
}

}  // namespace ehbt::unwind
