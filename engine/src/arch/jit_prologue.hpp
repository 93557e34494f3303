// SPDX-License-Identifier: Apache-2.0
// The size of a HotSpot compiled-method frame on x86-64, read from its code. HotSpot's C2
// (without -XX:+PreserveFramePointer) and C1 build a frame that keeps no frame pointer:
//   mov %eax,-N(%rsp)     stack bang(s): 89 84 24 disp32, one per page banged, N > 0
//   push %rbp             55: the caller's rbp, restored on return
//   sub $S,%rsp           48 83 ec ib or 48 81 ec id (omitted when S is 0: not recognised)
// (HotSpot's MacroAssembler::verified_entry and C1_MacroAssembler::build_frame), or, where C2
// bangs no stack (a leaf method with a small frame, an OSR entry):
//   sub $F,%rsp           48 83 ec ib or 48 81 ec id
//   mov %rbp,F-8(%rsp)    48 89 2c 24, 48 89 6c 24 ib, 48 89 ac 24 id
// the same frame with S = F - 8. A method's
// frame keeps that size from there to its epilogue, `add $S,%rsp; pop %rbp`: HotSpot's own
// stack walk sizes every compiled frame by the one frame size of its nmethod. The prologue
// with -XX:+PreserveFramePointer after a bang (`mov %rsp,%rbp` after the push) and a native
// wrapper's (`enter`) are not recognised: such frames keep a frame pointer and are left to the
// frame-pointer chain (the unbanged prologue is, whose frame has the same size either way).
//
// A place in the method where rsp is not the body's (inside the epilogue, right after a call
// that was made with rsp lowered for it) gives the wrong size: hotspot_sp_moved tells those
// the code shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ehbt/arch.hpp"

namespace ehbt::arch {

struct JitPrologue {
  uint64_t frame_bytes = 0;  // S: the body's sp is S bytes below the saved rbp
  std::size_t end = 0;       // offset in the code just past the `sub` (the unbanged: the store)
  // The unbanged prologue followed by `mov %rsp,%rbp` (48 8b ec or 48 89 e5:
  // -XX:+PreserveFramePointer): rbp is this frame's record. Otherwise rbp is no frame pointer
  // of this method's (C2 and C1 use it as any other register).
  bool keeps_frame_pointer = false;
};

// The prologue starting at `code[off]` (its last stack bang, or the unbanged one's `sub`), or
// nothing: other bytes, a positive bang offset or a negative `sub` immediate, an rbp stored
// elsewhere than F-8, bytes cut short, arches other than x86-64.
std::optional<JitPrologue> hotspot_prologue(Arch arch, std::span<const std::byte> code,
                                            std::size_t off);

// Bytes before a pc searched for an epilogue of the frame: the epilogue's safepoint poll and
// return (14 bytes), or the reserved-stack check's call into the VM (at most 40) follow its
// `pop %rbp`.
inline constexpr std::size_t kEpilogueReach = 48;

// Whether rsp at `code[pc_off]` may not be the body's for a frame of `frame_bytes`: an
// epilogue of that frame, `add $S,%rsp; pop %rbp`, ends at most kEpilogueReach bytes before
// pc_off, or its pop is at pc_off (the frame is already gone); or the instruction at pc_off
// writes rsp other than as that epilogue's `add` (a pop, an add or sub of rsp: what code that
// lowered rsp for a call does right after it, as HotSpot's d2i fixup call does).
// `return_address`: pc_off follows a call, which no epilogue makes but the reserved-stack
// check (`cmp disp32(%r15),%rsp; jb` right after the pop, then a call into the VM): only an
// epilogue followed by that check counts (another return path's epilogue may end just before
// a call site of the body). `code` holds the bytes from kEpilogueReach + 8 before the pc
// (fewer at the start of the code) on. Unknown arches: true.
bool hotspot_sp_moved(Arch arch, std::span<const std::byte> code, std::size_t pc_off,
                      uint64_t frame_bytes, bool return_address);

}  // namespace ehbt::arch
