// SPDX-License-Identifier: Apache-2.0
// SFrame rows (tagged `sframe`): the module's own .sframe, or with
// UnwindOptions::sframe_from_eh_frame the table converted from its .eh_frame.
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// Before CFI: when only SFrame is wanted (source SFrame), or when the converted tables were
// asked for (Auto then falls back to CFI where they lack a function). With source SFrame and
// no row, the step ends here: at a sigreturn trampoline recognised by its bytes (SFrame
// cannot describe one; the kernel's unwinder does the same), else with the most precise
// reason known (no .sframe, dropped as corrupt, the converter left the function out and why).
struct SFrameRowFirst {
  static bool applies(const StepContext& ctx) {
    return ctx.options.source == SourcePreference::SFrame ||
           (ctx.auto_mode() && ctx.options.sframe_from_eh_frame);
  }
  static Attempt attempt(StepContext& ctx);
};

// After CFI (Auto, no conversion asked): the module's own .sframe where no CFI covers the pc.
struct OwnSFrameRow {
  static bool applies(const StepContext& ctx) {
    return ctx.auto_mode() && !ctx.options.sframe_from_eh_frame && ctx.image != nullptr;
  }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
