// SPDX-License-Identifier: Apache-2.0
// The strategies that end a step without a caller, saying why no table applied (recorded by
// CfiRow) and, after the fallbacks, why each of them failed.
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// Fallbacks off (UnwindOptions::frame_pointer_fallback false, or a source other than Auto).
struct StopWithoutFallbacks {
  static bool applies(const StepContext& ctx) {
    return !ctx.options.frame_pointer_fallback || !ctx.auto_mode();
  }
  static Attempt attempt(StepContext& ctx);
};

// Every fallback failed.
struct GiveUp {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
