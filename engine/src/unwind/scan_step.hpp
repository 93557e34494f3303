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
// Every candidate word must pass the proof of unwind/validate.hpp (a stale return address of an
// earlier call fails it and the scan goes on past it), and the scan reads no word past the
// end of the mapping that holds the frame's sp (Memory::region_of). step.cpp then validates
// the caller like every other.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "arch/arch_ops.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::unwind {

struct ScanContext {
  const arch::ArchOps& ops;
  Memory& mem;
  const ModuleSet& modules;
  const Limits& limits;
};

// Whether the frame is in the function that holds its module's ELF entry point: by the
// symbol's start when known, else by the lookup pc lying in the first bytes after the entry.
bool in_entry_function(const Frame& frame, const Module* module,
                       std::optional<uint64_t> function_start);

// The caller of a provable leaf (see above), or nothing. Only a frame at an exact pc (frame 0,
// or interrupted by a signal) can be a leaf; for any other the function's start is not asked.
std::optional<arch::Recovered> infer_leaf(const ScanContext& ctx, const Frame& frame,
                                          const arch::CodeHint& code);

// The caller found by scanning, or why none was (static text). `accept`, when given, has
// the last word on each candidate that passed the proof: nothing accepts it, else why not
// (the scan then goes on past it).
using ScanCheck = std::function<std::optional<std::string>(const arch::Recovered&)>;
Expected<arch::Recovered, std::string> scan_stack(const ScanContext& ctx, const Frame& frame,
                                                  std::optional<uint64_t> function_start,
                                                  const ScanCheck& accept = nullptr);

}  // namespace ehbt::unwind
