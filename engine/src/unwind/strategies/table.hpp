// SPDX-License-Identifier: Apache-2.0
// The CFI row covering the frame's lookup pc (.eh_frame, then .debug_frame), and applying a
// table row of either kind (CFI or SFrame) to the frame.
#pragma once

#include "dwarf/cfi.hpp"
#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// `row` applied to ctx.frame, the caller tagged `source`. A row of a signal frame ('S' FDE,
// SFrame signal function) at a real sigreturn trampoline reads the kernel's signal frame
// instead: that does not depend on the table being right.
StepOutcome row_step(StepContext& ctx, const dwarf::Row& row, FrameSource source);

// The CFI row: more precise than a module's own .sframe, which cannot say everything CFI does
// and is sometimes written wrong (GNU ld's .plt.got rows), so Auto takes it first. A
// malformed table stops the step; where no CFI covers the pc, it records why in
// ctx.reason/ctx.detail (no FDE, no file, no module, or the module's file is missing or
// another build) for the stop that ends the step if nothing later applies.
struct CfiRow {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
