// SPDX-License-Identifier: Apache-2.0
// Signal frames: the registers the kernel saved below a sigreturn trampoline, read directly
// (tagged `signal`). Recognising the trampoline and the frame layout are the arch layer's
// (ArchOps::sigreturn_at, ArchOps::recover_signal).
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// The interrupted frame as ctx.caller, the frame being at a trampoline of kind `kind`. The
// table strategies use it too: a signal-frame row at a real trampoline reads the kernel's
// frame rather than trusting the table.
StepOutcome signal_step(StepContext& ctx, arch::Sigreturn kind);

// A sigreturn trampoline no table described, recognised by its bytes.
struct SigreturnTrampoline {
  static bool applies(const StepContext&) { return true; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
