// SPDX-License-Identifier: Apache-2.0
// Filling the frames' source locations and inlined calls (FrameLine::location, ::inlined)
// from the lines area (lines/source_lookup.hpp: WalkLookups chose each frame's pc while the
// report was built), after the walks: one module after another, so each module's debug
// info is opened once and looked up while it is warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ehbt/report.hpp"

namespace ehbt::report {

// A frame whose source position is still to be looked up.
struct PendingLine {
  const Module* module;
  uint64_t link_pc;  // the module's link-time lookup pc (lines::WalkLookups::next)
  std::size_t thread, frame;
};

// Looks up every pending frame. A module whose debug info is malformed or too large is said
// once in the report's warnings (kWarningBadDebugInfo); its frames just have no location.
void locate_frames(std::vector<PendingLine>& pending, BacktraceReport& report,
                   const Limits& limits);

}  // namespace ehbt::report
