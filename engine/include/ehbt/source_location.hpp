// SPDX-License-Identifier: Apache-2.0
// Where in the source a frame is, as debug info (DWARF through libdw, Go's .gopclntab) says:
// the frame's own position and the calls inlined at its pc. Plain data shared by the lookups
// that produce it and the report that renders it (docs/formats.md: `location`, `inlined`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ehbt {

struct SourcePosition {
  std::string file;     // as the debug info names it, made absolute with its compile dir
  uint32_t line = 0;    // 1-based; 0 never appears in a report (no position instead)
  uint32_t column = 0;  // 1-based; 0 when the debug info does not say
  bool operator==(const SourcePosition&) const = default;
};

// One function inlined at a pc and the position in it: for the innermost, where execution
// is; for the others, where they call the next inner one.
struct InlinedCall {
  std::string function;
  std::optional<SourcePosition> location;
  bool operator==(const InlinedCall&) const = default;
};

// All a lookup knows about one pc. `location` is the position in the physical function: the
// pc's own line when nothing is inlined there, else the call site of the outermost inlined
// call. `inlined` runs innermost first, so (inlined..., physical) reads as GDB's frames.
struct SourceInfo {
  std::optional<SourcePosition> location;
  std::vector<InlinedCall> inlined;
};

}  // namespace ehbt
