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

// `sparse`, when given, is a handle (sparse_dwarf.hpp) holding the unit of `pc`: the DIEs
// and line table are read from it (UnitIndex::find_in), the same as from the full handle.
DwarfLookup lookup_dwarf(UnitIndex& units, Dwarf_Addr pc, const Limits& limits,
                         Dwarf* sparse = nullptr);

// A file name as GDB shows it. `path` is libdw's: the line table's name joined with its
// directory entry as recorded (relative directories stay relative; DWARF 4's entry 0 is the
// compilation directory). GDB names the unit's own source file by its DW_AT_name
// (`unit_name`: "crash.c" when the compiler was given that), and does not prepend DWARF 4's
// implicit compilation directory to other files (`recorded_dir` false: the file's directory is
// that entry 0); otherwise it shows the joined name. Exposed for tests.
std::string display_file_name(std::string_view path, std::string_view comp_dir,
                              std::string_view unit_name, int dwarf_version,
                              bool recorded_dir = false);

}  // namespace ehbt::lines
