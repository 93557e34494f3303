// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/frame_pointer.hpp"

#include <string>

#include "unwind/describe.hpp"

namespace ehbt::unwind {

Attempt FramePointerOnly::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) return unexpected(recover_failure(rec.error(), "frame pointer"));
  if (auto no = disprove(ctx, *rec, "frame pointer")) return stop(StopReason::NoUnwindInfo, *no);
  return finish(ctx, std::move(*rec), FrameSource::FramePointer, false);
}

Attempt FramePointerChain::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) {
    ctx.fp_why = recover_failure(rec.error(), "frame pointer").detail;
  } else if (auto no = disprove(ctx, *rec, "frame pointer")) {
    ctx.fp_why = std::move(*no);
  } else {
    auto out = finish(ctx, std::move(*rec), FrameSource::FramePointer, false);
    if (out) return out;
    ctx.fp_why =
        "frame pointer: " + (out.error().detail.empty()
                                 ? std::string("the return address in the frame record is 0")
                                 : out.error().detail);
  }
  return std::nullopt;
}

}  // namespace ehbt::unwind
