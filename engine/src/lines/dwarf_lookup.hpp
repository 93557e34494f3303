// SPDX-License-Identifier: Apache-2.0
// One pc's SourceInfo from DWARF: the line table's row for it and the inlined calls whose
// ranges hold it (innermost first), each inlined function named by its abstract origin.
#pragma once

#include <elfutils/libdw.h>

#include <optional>
#include <string>

#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"
#include "lines/unit_index.hpp"

namespace ehbt::lines {

struct DwarfLookup {
  std::optional<SourceInfo> info;  // nothing: no debug info covers the pc, or it is malformed
  std::string problem;             // why, when malformed or past a limit ("" otherwise)
};

DwarfLookup lookup_dwarf(UnitIndex& units, Dwarf_Addr pc, const Limits& limits);

// A file name as GDB shows it: as the debug info records it, so without the compilation
// directory libdw puts in front of relative names. Exposed for tests.
std::string display_file_name(std::string_view path, std::string_view comp_dir);

}  // namespace ehbt::lines
