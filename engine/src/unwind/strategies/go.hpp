// SPDX-License-Identifier: Apache-2.0
// Go's frame-size table (.gopclntab's pcsp; unwind/go_step.hpp), tagged `go_pclntab`.
#pragma once

#include "unwind/go_step.hpp"
#include "unwind/go_switch.hpp"
#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// First of all (Auto): Go runtime frames whose DWARF is wrong (aarch64, s390x), stepped by
// Go's table instead.
struct GoRuntimeOverCfi {
  static bool applies(const StepContext& ctx) {
    return ctx.auto_mode() && ctx.module != nullptr && go_cfi_may_be_wrong(ctx.frame.regs.arch());
  }
  static Attempt attempt(StepContext& ctx);
};

// Before the tables (Auto): runtime.asmcgocall at the return address of its call into C, whose
// caller is on the goroutine's stack (unwind/go_switch.hpp). Go's .debug_frame for it is wrong,
// and a fallback would stay on the system stack: where the runtime's saved state does not give a
// proven caller, the walk stops here. runtime.systemstack's frame on g0 likewise, crossed to
// its caller on the goroutine's stack through g0.m.curg.sched (unwind/go_systemstack.hpp).
struct GoCgoSwitch {
  static bool applies(const StepContext& ctx) {
    return ctx.auto_mode() && ctx.module != nullptr && !ctx.frame.exact_pc;
  }
  static Attempt attempt(StepContext& ctx);
};

// After the tables (Auto): exact for a Go function, where the frame-pointer walk would skip
// the caller of a function that sets up no frame. Functions Go's own traceback ends at
// (runtime.goexit, mstart, ...) and a zero return address are the outermost frame.
struct GoPclntab {
  static bool applies(const StepContext& ctx) { return ctx.auto_mode() && ctx.module != nullptr; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
