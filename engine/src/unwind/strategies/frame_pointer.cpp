// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/frame_pointer.hpp"

#include <string>

#include "unwind/describe.hpp"
#include "unwind/scan_step.hpp"

namespace ehbt::unwind {

Attempt FramePointerOnly::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) return unexpected(recover_failure(rec.error(), "frame pointer"));
  return finish(ctx, std::move(*rec), FrameSource::FramePointer, false);
}

Attempt FramePointerChain::attempt(StepContext& ctx) {
  const arch::CodeHint& hint = ctx.code_hint();
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, hint);
  if (!rec) {
    ctx.fp_why = recover_failure(rec.error(), "frame pointer").detail;
  } else if (const uint64_t ra = rec->regs.pc();
             ra != 0 && !follows_call(scan, ra, ctx.module, hint)) {
    ctx.fp_why =
        "frame pointer: caller pc " + hex(ra) + " follows no call that may lead to this function";
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
