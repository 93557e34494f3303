// SPDX-License-Identifier: Apache-2.0
// One step of a walk: a frame -> its caller, by the first strategy that applies. Each
// strategy is a type in unwind/strategies/ (named in brackets); step.cpp lists them in this
// order, and that list is the whole of the step's logic.
//   0. (source FramePointer) the frame-pointer chain and nothing else [FramePointerOnly];
//      (source Auto, aarch64 and s390x) Go runtime frames whose DWARF is wrong, stepped by
//      Go's table (unwind/go_step.hpp) [GoRuntimeOverCfi];
//   1. (source Auto or SFrame) [SFrameRowFirst] the SFrame row covering the frame's lookup
//      pc: the module's .sframe, or with UnwindOptions::sframe_from_eh_frame the table
//      converted from its .eh_frame (tagged `sframe`). Source SFrame stops here when no row
//      covers the pc, except at a sigreturn trampoline recognised by its bytes (tagged
//      `signal`), with a reason that says why there is no row (no .sframe, dropped as corrupt,
//      the converter left the function out and why);
//   2. the CFI row covering the pc (.eh_frame, then .debug_frame) [CfiRow]; with source
//      Auto and no conversion asked, where no CFI covers the pc, the module's own .sframe row
//      [OwnSFrameRow]; for rows of either kind, when the row is a signal frame ('S' FDE,
//      SFrame signal function) and the pc holds a sigreturn trampoline, the kernel's signal
//      frame is read directly instead (it does not depend on the table being right);
//   3. where no row covers the pc (no FDE, no module, no file): a sigreturn trampoline at pc
//      [SigreturnTrampoline];
//   4. (source Auto) for a pc in a Go function, Go's frame-size table [GoPclntab];
//   5. if fallbacks are enabled (UnwindOptions::frame_pointer_fallback, source Auto; else the
//      step stops saying why no table applied [StopWithoutFallbacks]): for an exact pc in a
//      PLT stub [PltStub] or outside every module and outside JIT code (a call through a bad
//      pointer) [CallThroughBadPointer], the function-entry rule (tagged `scan`: a guess,
//      validated); then (scan_step.hpp) a provable leaf (`scan`) [ProvableLeaf], the
//      frame-pointer / backchain rule (tagged `frame_pointer`; its caller pc must follow a
//      call instruction) [FramePointerChain], the ELF entry point's function as outermost
//      [EntryFunction], and a stack scan (`scan`) [StackScan]. A stop after all of them says
//      why each failed [GiveUp].
// Every caller found is validated: pc 0 -> Outermost; a pc that is not a plausible code
// address, lies in a module outside executable segments, or lies in no module (unless it is
// JIT code -- ModuleSet::is_jit_code --, a sigreturn trampoline, or the module set is empty
// and nothing can be checked) -> BadPc.
// Frames recovered from a signal frame are exempt from the module check (their pc was
// interrupted and may be anywhere) and may have pc 0.
#pragma once

#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"
#include "unwind/image_cfi_cache.hpp"

namespace ehbt::unwind {

// On success fills `caller` (which must not be `frame`) and returns the CFA of `frame`.
// Writes in place so that the walk copies no register sets.
Expected<uint64_t, StopInfo> step_frame(const Frame& frame, Memory& mem, const ModuleSet& modules,
                                        const UnwindOptions& options, const Limits& limits,
                                        CfiMemo& memo, Frame& caller);

}  // namespace ehbt::unwind
