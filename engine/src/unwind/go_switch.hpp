// SPDX-License-Identifier: Apache-2.0
// Go's switch from a goroutine's stack to the thread's system (g0) stack for a cgo call,
// crossed back from the runtime's own saved state. runtime.asmcgocall (called by
// runtime.cgocall on the goroutine's stack) moves sp to g0's stack and, before it calls the C
// function, stores two words there: the goroutine's g and the depth of the goroutine's sp below
// g.stack.hi ("can't just save SP, as stack might be copied during a callback"). A C frame's
// caller on g0 is asmcgocall at the return address of that call; asmcgocall's own caller
// (runtime.cgocall) is on the goroutine's stack, at g.stack.hi - depth. Neither a table (Go's
// .debug_frame describes asmcgocall as if sp had not moved) nor a frame-pointer chain or scan
// (which stay on g0's stack and find stale words there) can get it right.
#pragma once

#include <optional>

#include "arch/arch_ops.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::unwind {

// The goroutine's stack the switch leads back to, as the runtime recorded it.
struct GoStackSwitch {
  arch::Recovered caller;  // runtime.cgocall's pc, sp (= cfa) and frame pointer
  uint64_t stack_lo = 0;   // g.stack: the goroutine stack the caller's frame must lie in
  uint64_t stack_hi = 0;
  uint64_t switched_sp = 0;  // asmcgocall's sp on that stack (the callee's sp for validation)
};

// Which of Go's stack switches `frame` (a return address, in a function Go's table names in
// `module`) is in: runtime.asmcgocall after its call into C (go_cross_cgo_switch steps it), or
// runtime.systemstack after its call of the function it runs on g0's stack. systemstack keeps
// its way back in the goroutine's g.sched (sp, pc, bp), reached from g0 through m.curg
// (go_cross_systemstack, unwind/go_systemstack.hpp, with the offsets the binary gives); no table
// steps it (Go's .debug_frame describes it as if sp had not moved, so a table step would read a
// stale word at the top of g0's stack). On gsignal or g0 systemstack tail-jumps (no frame).
// runtime.mcall after its call of the function it runs on g0 (unwind/go_systemstack.hpp).
enum class GoSwitch : uint8_t { None, CgoCall, SystemStack, MCall };
GoSwitch go_switch_at(const Frame& frame, const Module& module, const Limits& limits);

// The step from asmcgocall's frame to its caller, read through `mem` (every read may fail):
// RecoverError::MemoryFault where a saved word cannot be read; NotApplicable, with the reason,
// on an architecture whose layout this does not know (x86-64, arm64 and s390x are known) or where
// the saved words contradict each other (the depth does not put sp inside g.stack).
Expected<GoStackSwitch, arch::RecoverFailure> go_cross_cgo_switch(const Frame& frame, Memory& mem);

}  // namespace ehbt::unwind
