// SPDX-License-Identifier: Apache-2.0
// runtime.systemstack's switch from a goroutine's stack to its thread's g0 stack, crossed
// back from the runtime's own saved state. systemstack (asm_amd64.s, asm_arm64.s) saves the
// goroutine's state in its g.sched (gosave_systemstack_switch: pc = runtime.systemstack_switch,
// sp = systemstack's own sp on the goroutine's stack, bp), switches the g register to m.g0,
// sets sp to g0.sched.sp and calls the function. On g0 nothing records the goroutine; the
// way back is g0 -> g0.m -> m.curg -> curg.sched, reached from the g register the frame still
// holds (amd64: r14, Go 1.17+'s ABIInternal; arm64: x28). The offsets come from the binary
// (lines/go_runtime_layout.hpp). At curg.sched.sp lies systemstack's return address into its
// caller (amd64: pushed by the call, systemstack having no frame; arm64: saved by its 16-byte
// prologue at 0(sp), the caller's x29 at -8(sp)).
#pragma once

#include <optional>

#include "ehbt/expected.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"
#include "unwind/go_switch.hpp"

namespace ehbt::unwind {

// The step from runtime.systemstack's frame on g0 (a return address after its call of the
// function it runs) to its caller on the goroutine's stack, every word read through `mem`.
// Fails with a StopInfo naming the check that failed: no layout for the binary, the g register
// unknown, g.m.g0 != g, m.curg nil or curg.m != m, the frame's sp outside g0's stack, curg's
// saved pc not systemstack_switch (the goroutine's sched was saved by another switch), the
// saved sp outside curg's stack; memory_fault for an unreadable word.
// The register Go's code keeps the current g in (amd64: r14, arm64: x28), or nothing. A Go
// frame's caller runs on the same g (only the switch functions change it), so the step by Go's
// table carries it to the caller: the crossing reads it on g0 and proves it there.
std::optional<uint16_t> go_g_register(Arch arch);

Expected<GoStackSwitch, StopInfo> go_cross_systemstack(const Frame& frame, const Module& module,
                                                       Memory& mem, const Limits& limits);

// The step from runtime.mcall's frame on g0 (after its call of fn(g)) to its caller on the
// goroutine's stack, from the same g0 -> m -> curg chain: mcall saved its caller's pc, sp and
// bp in curg.sched. Only while m.curg still names the goroutine: once the function detached it
// (dropg), nothing on the thread says which goroutine it was (it may run elsewhere since): the
// walk ends there as outermost (g0's stack begins at mcall, where Go's traceback ends too),
// with a detail saying so. Other failures as go_cross_systemstack's.
Expected<GoStackSwitch, StopInfo> go_cross_mcall(const Frame& frame, const Module& module,
                                                 Memory& mem, const Limits& limits);

}  // namespace ehbt::unwind
