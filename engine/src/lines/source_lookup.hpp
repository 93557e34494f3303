// SPDX-License-Identifier: Apache-2.0
// Source lines and inlined calls for the frames of a walk: the one entry point of the lines
// area, used by every front end (the report's collect_backtraces and add_thread, so the CLI,
// the Python module, the debugger plugins and triage). Two steps, so that the report can look
// frames up module after module while each module's debug info is warm:
// - WalkLookups says, frame after frame of a walk, at which pc a frame's position is looked up
//   (or that it has none);
// - lookup_source answers for a module and a pc, from the debug info that speaks for it: Go's
//   .gopclntab for a pc in a Go function (also in stripped Go binaries; where the Go compiler
//   also wrote DWARF, .gopclntab is what Go's own traceback prints), DWARF through libdw
//   otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::lines {

// The lookup pcs of one walk's frames, given in the walk's order (innermost first): a frame's
// rule can depend on its callee.
class WalkLookups {
 public:
  explicit WalkLookups(const Limits& limits) : limits_(limits) {}

  // The link-time pc (in `module`, the frame's module, null when none) that `frame`'s
  // position is looked up at: Frame::lookup_pc() (pc - 1 for callers, the pc itself for frame
  // 0, interrupted and planted frames), except that the Go frame whose callee is
  // runtime.sigpanic is looked up at its pc (Go's signal handler made the faulting
  // instruction look like a call there; Go's traceback looks it up as is). Nothing for a
  // frame without a module image, or a signal trampoline (GDB prints no line for
  // `<signal handler called>`) other than Go's own (a Go function, as go tool addr2line
  // gives it).
  std::optional<uint64_t> next(const Frame& frame, const Module* module);

 private:
  const Limits& limits_;
  bool after_sigpanic_ = false;  // the previous frame was runtime.sigpanic
};

// The position of `link_pc` (a pc WalkLookups gave) in `module` and the calls inlined there.
// Nothing when no debug info covers it. `problem`, when given, is set to why the module's
// DWARF cannot be used ("" when it can, or when it has none): the caller says it once per
// module (kWarningBadDebugInfo).
std::optional<SourceInfo> lookup_source(const Module& module, uint64_t link_pc,
                                        const Limits& limits, std::string* problem = nullptr);

// Says which pcs of `module` lookup_source is about to be asked (all of a report's frames in
// it), so that their DWARF units are read alone (ModuleLines::prepare). Answers do not depend
// on it; Go modules ignore it.
void prepare_sources(const Module& module, std::span<const uint64_t> link_pcs,
                     const Limits& limits);

}  // namespace ehbt::lines
