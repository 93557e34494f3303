// SPDX-License-Identifier: Apache-2.0
// A step by Go's frame-size table: where no CFI covers a pc in a Go function (a binary built
// with -ldflags=-w has no .debug_frame), the function's pcsp table gives the stack pointer's
// offset from its value at entry, and with it the return address and the caller's sp exactly,
// also in functions that set up no frame pointer (which the frame-pointer walk skips over).
#pragma once

#include <optional>

#include "arch/arch_ops.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::unwind {

// NotApplicable when the frame is not in a Go function of `module` with a pcsp entry for its
// pc, or the architecture is not one whose Go frame layout this knows (x86-64, aarch64,
// s390x).
arch::RecoverResult go_step(const Frame& frame, const Module& module, Memory& mem,
                            const Limits& limits);

// Whether the caller pc `ra` that go_step found for `frame` was planted by Go's runtime, not
// pushed by a call: the frame is runtime.sigpanic (Go's signal handler pushes the faulting pc
// as its return address), or `ra` lies in runtime.goexit (the scheduler makes a goroutine's
// entry function return there, past goexit's first instruction). Such a caller proves only
// its stack (unwind/validate.hpp).
bool go_planted_return(const Frame& frame, const Module& module, uint64_t ra, const Limits& limits);

// The target address where the Go function that holds the frame's lookup pc starts, by one
// search of Go's table (no symbol table is built for it: a stripped Go binary has none but
// the one made from that table, of every function), or nothing outside Go functions.
std::optional<uint64_t> go_function_start(const Frame& frame, const Module& module,
                                          const Limits& limits);

// The size of the Go function that starts exactly at target address `addr` (its entry to the
// next function's), by one search of Go's table in the module holding `addr`; nothing when no
// Go function starts there.
std::optional<uint64_t> go_function_size_at(const ModuleSet& modules, uint64_t addr,
                                            const Limits& limits);

// Whether `frame` is runtime.sigpanic (Go's table names it in `module`): its caller's pc is the
// faulting pc Go's signal handler pushed as a return address, the instruction that faulted,
// not one after a call (looked up as is: Frame::planted), in Go code or, on a cgo call, in C.
bool go_sigpanic_frame(const Frame& frame, const Module& module, const Limits& limits);

// Whether go_step_over_cfi can apply on `arch` at all (checked before the call: every step
// of an Auto walk asks).
inline bool go_cfi_may_be_wrong(Arch arch) {
  return arch == Arch::AArch64 || arch == Arch::S390x;
}

// Go's arm64 and s390x runtime frames whose .debug_frame is wrong, stepped by Go's table instead
// (nothing elsewhere): runtime.sigpanic, whose caller's sp is 16 (s390x: 8) above its CFA (the slot
// Go's signal handler pushed), and Go's signal handler entry (runtime.sigtramp, cgoSigtramp:
// TOPFRAME, the return address left undefined) when it returns to a sigreturn trampoline.
std::optional<arch::Recovered> go_step_over_cfi(const arch::ArchOps& ops, const Frame& frame,
                                                const Module& module, Memory& mem,
                                                const Limits& limits);

}  // namespace ehbt::unwind
