// SPDX-License-Identifier: Apache-2.0
// The frame-pointer chain (s390x: the backchain; ArchOps::frame_pointer_step_at), tagged
// `frame_pointer`.
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// --source frame-pointer: the chain and nothing else, unchecked beyond the caller's
// validation.
struct FramePointerOnly {
  static bool applies(const StepContext& ctx) {
    return ctx.options.source == SourcePreference::FramePointer;
  }
  static Attempt attempt(StepContext& ctx);
};

// A fallback where no table covers the frame, also through JIT code: its caller pc must follow
// a call that may lead to this function, which code that keeps no frame pointer rarely fakes.
// Records in ctx.fp_why why it failed.
struct FramePointerChain {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
