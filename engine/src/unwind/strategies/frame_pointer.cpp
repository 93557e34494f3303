// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/frame_pointer.hpp"

#include <string>

#include "unwind/describe.hpp"

namespace ehbt::unwind {

namespace {

// The proof of a frame-pointer candidate. A frame record's return address may be one a runtime
// planted (V8's deoptimised frames return into the interpreter's entry): asked only when the
// ordinary proof fails, so a walk of ordinary frames never looks up a name for it.
std::optional<std::string> disprove_record(StepContext& ctx, const arch::Recovered& rec,
                                           bool& planted) {
  planted = false;
  auto no = disprove(ctx, rec, "frame pointer");
  if (no && planted_return(ctx, rec)) {
    planted = true;
    no = disprove(ctx, rec, "frame pointer", true);
  }
  return no;
}

}  // namespace

Attempt FramePointerOnly::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) return unexpected(recover_failure(rec.error(), "frame pointer"));
  bool planted = false;
  if (auto no = disprove_record(ctx, *rec, planted)) return stop(StopReason::NoUnwindInfo, *no);
  return finish(ctx, std::move(*rec), FrameSource::FramePointer, false, planted);
}

Attempt FramePointerChain::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  bool planted = false;
  if (!rec) {
    ctx.fp_why = recover_failure(rec.error(), "frame pointer").detail;
  } else if (auto no = disprove_record(ctx, *rec, planted)) {
    ctx.fp_why = std::move(*no);
  } else {
    auto out = finish(ctx, std::move(*rec), FrameSource::FramePointer, false, planted);
    if (out) return out;
    ctx.fp_why =
        "frame pointer: " + (out.error().detail.empty()
                                 ? std::string("the return address in the frame record is 0")
                                 : out.error().detail);
  }
  return std::nullopt;
}

}  // namespace ehbt::unwind
