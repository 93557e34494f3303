// SPDX-License-Identifier: Apache-2.0
// Source lines and inlined calls for a pc in a module: the one entry point of the lines area,
// which picks the debug info that answers for the module (DWARF through libdw; Go's
// .gopclntab). The report (collect.cpp) calls it for every frame.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"

namespace ehbt::lines {

// `link_pc` is the frame's lookup pc (Frame::lookup_pc(): pc - 1 for callers) in the
// module's link-time addresses (Module::to_link). Nothing when no debug info covers it.
// `problem`, when given, is set to why the module's debug info cannot be used ("" when it
// can, or when it has none): the caller says it once per module (kWarningBadDebugInfo).
std::optional<SourceInfo> lookup_source(const Module& module, uint64_t link_pc,
                                        const Limits& limits, std::string* problem = nullptr);

}  // namespace ehbt::lines
