// SPDX-License-Identifier: Apache-2.0
// A second libdw handle over a debug file that holds only the units a report's frames need.
//
// Why: libdw finds the unit of a DIE offset by reading, and keeping in a tree, every unit
// before it (a Dwarf_CU with its own abbreviation hash each); a lookup in libc's debug file
// (4000 units) spends most of its time and a few megabytes of heap there, in every process.
// Here .debug_info is the file's, mapped privately, with a filler unit header (its length
// spanning the gap, no DIEs) written where each gap between the wanted units starts: libdw
// walks a few units instead of thousands, and every offset, DIE and attribute of a wanted
// unit reads as in the file (the bytes are the file's).
//
// Only what libdw reads the same way in both handles is served here: a unit is held only when
// (1) the chain of unit headers from the section's start lands on it, as libdw's own walk
// would (read with dwarf_next_unit, which interns nothing), (2) it is a plain compile unit,
// and (3) no abbreviation of it uses a form that can point outside the unit
// (DW_FORM_ref_addr, DW_FORM_ref_sig8, DW_FORM_indirect); references into the dwz file go
// to the same alt handle. Everything else is answered by the full handle, as before.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ehbt/limits.hpp"

namespace ehbt::lines {

class DwarfFile;

class SparseDwarf {
 public:
  ~SparseDwarf();
  SparseDwarf(const SparseDwarf&) = delete;
  SparseDwarf& operator=(const SparseDwarf&) = delete;

  Dwarf* dwarf() const { return dwarf_; }
  // Whether the unit whose header is at `unit` (an offset in .debug_info) is served here.
  bool holds(uint64_t unit) const;
  std::size_t unit_count() const { return units_.size(); }

  // The handle for the units at `units` (header offsets, any order) of `full`'s file; null
  // when none of them can be served so (the file is not read through a descriptor, its
  // DWARF is compressed, ...). At most max_units unit headers are read.
  static std::unique_ptr<SparseDwarf> open(const DwarfFile& full, std::vector<uint64_t> units,
                                           uint32_t max_units);

 private:
  SparseDwarf() = default;
  Elf* elf_ = nullptr;
  Dwarf* dwarf_ = nullptr;
  void* map_ = nullptr;  // the sparse .debug_info: the file's, mapped privately, fillers written
  std::size_t map_size_ = 0;
  std::vector<uint64_t> units_;  // sorted
};

}  // namespace ehbt::lines
