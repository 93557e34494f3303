// SPDX-License-Identifier: Apache-2.0
// AArch64 prologue analysis for the frame-pointer fallback. A frame record {caller x29,
// caller x30} tells where the caller resumes but not where its sp was: gcc stores the record
// at the bottom of the frame (`stp x29, x30, [sp, #-N]!; mov x29, sp`, CFA = x29 + N), clang
// at the top (`sub sp, sp, #N; stp x29, x30, [sp, #M]; add x29, sp, #M`, CFA = x29 + N - M).
// Reading the function's first instructions up to the frame's pc tells which, and by how much.
//
// Only a frame set-up that is followed exactly is accepted: every change of sp before x29 is
// set must be one the decoder understands, the record must be stored where x29 ends up
// pointing, and nothing may leave the straight-line code first. Anything else is a failure,
// and the caller's sp stays unknown rather than guessed.
#pragma once

#include <cstdint>

#include "ehbt/expected.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::arch::aarch64 {

enum class PrologueError : uint8_t {
  Unrecognised,  // no frame set-up the decoder follows before the pc
  ScanCap,       // a cap of ehbt::Limits ran out (max_prologue_scan / max_prologue_insns)
  MemoryFault,   // the instruction word at `addr` could not be read
};

struct PrologueFailure {
  PrologueError kind = PrologueError::Unrecognised;
  uint64_t addr = 0;     // MemoryFault: the word's address
  const char* why = "";  // static text
};

struct PrologueFrame {
  uint64_t cfa_from_fp = 0;  // CFA (the caller's sp) = x29 + cfa_from_fp
  uint64_t fp_set_at = 0;    // address of the instruction that set x29
};

// Walks back from the instruction word below `pc` (at most `max_words` words) to the end of
// the previous function (a return, an unconditional branch, a UDF/zero word) and returns the
// address after it: where the function containing pc - 4 begins, as far as code alone tells.
Expected<uint64_t, PrologueFailure> find_function_start(Memory& mem, uint64_t pc,
                                                        uint32_t max_words);

// Decodes forward from `start` (at most `max_insns` words, and only words below `pc`, the ones
// that have run) until x29 is set from sp, and returns where that leaves the CFA.
Expected<PrologueFrame, PrologueFailure> analyse_prologue(Memory& mem, uint64_t start, uint64_t pc,
                                                          uint32_t max_insns);

// Where a function without a frame record keeps its return address (gcc -fomit-frame-pointer:
// `str x30, [sp, #-16]!`, `stp x19, x30, [sp, #-32]!`, `sub sp, sp, #N; str x30, [sp, #M]`):
// decoding forward from `start` to `pc` as analyse_prologue does, how far sp is below the CFA
// at pc, and at which offset below the CFA x30 was stored. A failure when any control
// transfer other than a call comes first, sp changes in a way the decoder does not follow, or
// x30 is not stored.
struct SavedLr {
  uint64_t depth = 0;   // CFA = sp + depth
  uint64_t lr_off = 0;  // x30 was stored at CFA - lr_off
};
Expected<SavedLr, PrologueFailure> analyse_lr_save(Memory& mem, uint64_t start, uint64_t pc,
                                                   uint32_t max_insns);

}  // namespace ehbt::arch::aarch64
