// SPDX-License-Identifier: Apache-2.0
// The function-entry rule (ArchOps::entry_step: the return address is where the call left
// it, nothing else has moved) where the frame is known to be at a function's first
// instruction or as good as, tagged `scan`.
#pragma once

#include "unwind/strategies/step_context.hpp"

namespace ehbt::unwind {

// An exact pc in a PLT stub (the NAME@plt symbols plt_symbols.cpp synthesises): a stub sets up
// no frame and (on aarch64 and s390x) has no CFI; it moves neither the stack pointer nor the
// return address, so the caller is where the call left it. GDB's PLT stub unwinders reason
// the same way.
struct PltStub {
  static bool applies(const StepContext& ctx) { return ctx.image != nullptr && ctx.frame.exact_pc; }
  static Attempt attempt(StepContext& ctx);
};

// An exact pc outside every module and outside JIT code: a call through a bad pointer. A pc
// in JIT code (executable memory no file backs) is no such evidence; that it is JIT code goes
// into ctx.detail instead.
struct CallThroughBadPointer {
  static bool applies(const StepContext& ctx) { return ctx.module == nullptr; }
  static Attempt attempt(StepContext& ctx);
};

}  // namespace ehbt::unwind
