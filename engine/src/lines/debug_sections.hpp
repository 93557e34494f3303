// SPDX-License-Identifier: Apache-2.0
// The DWARF sections (.debug_*, and GNU's older compressed .zdebug_*) of one ELF file, read
// from its section headers before libdw is asked for anything: whether it has .debug_info,
// how many bytes libdw would hold once they are inflated, and which are compressed
// (SHF_COMPRESSED, as Debian's -dbg and -dbgsym files are, or .zdebug_).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ehbt::lines {

enum class Compression : uint8_t { None, Shf, Gnu };  // Gnu: a .zdebug_ section ("ZLIB" + size)

struct DebugSection {
  Elf_Scn* scn = nullptr;
  std::string name;       // as libdw knows it: ".debug_info" also for ".zdebug_info"
  uint64_t stored = 0;    // bytes in the file (sh_size)
  uint64_t inflated = 0;  // bytes once inflated (= stored when not compressed)
  uint64_t align = 1;     // of the inflated contents
  Compression compression = Compression::None;
};

struct DebugSections {
  bool has_info = false;        // .debug_info (or .zdebug_info) with contents
  bool any_compressed = false;  // some section libdw would inflate
  uint64_t bytes = 0;           // every section's `inflated`, summed
  std::vector<DebugSection> list;
};

// Empty (has_info false) when the section headers cannot be read.
DebugSections scan_debug_sections(Elf* elf);

// Whether libdw reads section `name` (".debug_...") to give a pc's lines and inline chain:
// location lists, macros, name indexes and call frames it does not, so copies leave them out.
bool needed_for_lines(std::string_view name);

}  // namespace ehbt::lines
