// SPDX-License-Identifier: Apache-2.0
// The last resorts for a frame no table covers (unwind/scan_step.hpp builds the candidates),
// tagged `scan`, validated like every other caller.
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// A provable leaf: an exact pc whose return address is still where the call left it (at sp,
// or in the link register), proven by a direct call to the frame's own function. Tried before
// the frame-pointer chain, which a leaf's caller's frame record would mislead.
struct ProvableLeaf {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

// The function holding the ELF entry point (`_start`): nothing called it, the walk ends.
struct EntryFunction {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

// The first stack word that is a return address right after a call that may lead to the
// frame's function. Records in ctx.scan_why why none was.
struct StackScan {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
