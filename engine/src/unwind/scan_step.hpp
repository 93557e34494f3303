// SPDX-License-Identifier: Apache-2.0
// The last resorts for a frame no table covers (after the frame-pointer step, or before it
// where the frame is provably a leaf), as Breakpad and rust-minidump do it but stricter:
//   - leaf inference: an exact pc (frame 0, or a frame a signal interrupted) whose return
//     address is still where the call left it: at sp (x86-64) or in the link register
//     (aarch64 x30, s390x r14), proven by a direct call to the frame's own function;
//   - stack scan: the first stack word (from sp up, at most Limits::max_scan_words) that is
//     a return address into executable code of a known module, right after a call
//     instruction whose target, where the call is direct and the frame's function is known,
//     is that function (or a PLT stub, which leads elsewhere);
//   - the function holding the ELF entry point (`_start`) is outermost: nothing called it.
// A candidate after a call through a register, where nothing says where the frame's function
// starts, is neither proven nor disproven (unless ScanContext::confirm_indirect proves it by the
// frame above it): the scan stops there, as at a word into a module whose file is missing,
// rather than hand a later word the frame (main's own address above __libc_start_call_main's
// return address).
// Every candidate word must pass the proof of unwind/validate.hpp (a stale return address of an
// earlier call fails it and the scan goes on past it), and the scan reads no word past the
// end of the mapping that holds the frame's sp (Memory::region_of). step.cpp then validates
// the caller like every other.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "arch/arch_ops.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/unwinder.hpp"
#include "unwind/known_starts.hpp"

namespace ehbt::unwind {

struct ScanContext {
  // (A constructor, not an aggregate: the walk's history is optional, and a context made
  // without it by ScanContext{ops, mem, modules, limits} leaves it out without a warning.)
  ScanContext(const arch::ArchOps& ops_, Memory& mem_, const ModuleSet& modules_,
              const Limits& limits_, const KnownStarts* known_ = nullptr,
              std::function<bool(const arch::Recovered&)> confirm_indirect_ = nullptr)
      : ops(ops_),
        mem(mem_),
        modules(modules_),
        limits(limits_),
        known(known_),
        confirm_indirect(std::move(confirm_indirect_)) {}

  const arch::ArchOps& ops;
  Memory& mem;
  const ModuleSet& modules;
  const Limits& limits;
  // The function starts this walk has learnt so far (known_starts.hpp); none when the step is
  // made alone (Unwinder::step) or by a strategy that keeps no history.
  const KnownStarts* known = nullptr;
  // Proves a candidate the proof refused for a call through a register to a callee whose start
  // nothing says (ProofFailure::IndirectCall) by the frame above it (StepContext's
  // proven_by_the_next_frame); none: such a candidate stays unproven.
  std::function<bool(const arch::Recovered&)> confirm_indirect;
};

// Whether the frame is in the function that holds its module's ELF entry point: by the
// symbol's start when known, else by the lookup pc lying in the first bytes after the entry.
bool in_entry_function(const Frame& frame, const Module* module,
                       std::optional<uint64_t> function_start);

// The caller of a provable leaf (see above), or nothing. Only a frame at an exact pc (frame 0,
// or interrupted by a signal) can be a leaf; for any other the function's start is not asked.
std::optional<arch::Recovered> infer_leaf(const ScanContext& ctx, const Frame& frame,
                                          const arch::CodeHint& code);

// What scan_stack's own proof of the caller it found said: whether it ran (a word of the scan
// proper; aarch64's saved-x30 slot is taken by the code alone and left to the caller to
// prove), and the direct call's target that proved it (0: none, e.g. a call through a register
// the frame above confirmed).
struct ScanProof {
  bool proven = false;
  uint64_t target = 0;
};

// The caller found by scanning, or why none was (static text). `accept`, when given, has
// the last word on each candidate that passed the proof: nothing accepts it, else why not
// (the scan then goes on past it). `proof`, when given, receives ScanProof.
using ScanCheck = std::function<std::optional<std::string>(const arch::Recovered&)>;
Expected<arch::Recovered, std::string> scan_stack(const ScanContext& ctx, const Frame& frame,
                                                  std::optional<uint64_t> function_start,
                                                  const ScanCheck& accept = nullptr,
                                                  ScanProof* proof = nullptr);

}  // namespace ehbt::unwind
