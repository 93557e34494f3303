// SPDX-License-Identifier: Apache-2.0
// Which compilation unit covers a pc: .debug_aranges, read by aranges_table.hpp (else, where
// that reader refuses the section, through libdw: dwarf_getaranges), or, for files without
// that section (clang does not write it by default), a table of every unit's address ranges
// built once from the units' own DIEs.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ehbt/limits.hpp"
#include "lines/aranges_table.hpp"

namespace ehbt::lines {

enum class UnitSearch {
  Found,
  None,   // no unit covers the pc
  Error,  // a unit said to cover it cannot be read (libdw's message is in dwarf_errmsg(-1))
};

class UnitIndex {
 public:
  explicit UnitIndex(Dwarf* dwarf) : dwarf_(dwarf) {}
  UnitSearch find(Dwarf_Addr pc, const Limits& limits, Dwarf_Die& unit);
  // The offset of the unit header .debug_aranges names for `pc`, when the table read by
  // aranges_table.hpp is what answers (else nothing: libdw's own search decides).
  std::optional<uint64_t> table_offset(Dwarf_Addr pc, const Limits& limits);
  // find(), in `other`: a handle over the same file (sparse_dwarf.hpp) holding the unit
  // table_offset() names for `pc`. Any failure is Error: the caller asks find() then.
  UnitSearch find_in(Dwarf* other, Dwarf_Addr pc, const Limits& limits, Dwarf_Die& unit);
  // How many ranges of the table belong to units before `offset`, counted up to `cap`: what
  // libdw's walk to that unit costs, roughly (most units have one or two ranges).
  std::size_t ranges_before(uint64_t offset, std::size_t cap) const;

 private:
  struct Range {
    Dwarf_Addr low, high;  // [low, high)
    Dwarf_Off unit;        // offset of the unit's DIE
  };
  enum class Source { Unchecked, Table, Libdw, Units };

  void choose(const Limits& limits);
  // The unit an entry of the table names, as libdw's dwarf_getaranges would give it; false
  // when the entry does not name the start of a readable unit (then libdw decides).
  static bool table_unit(Dwarf* dwarf, const ArangeEntry& entry, Dwarf_Die& unit);
  UnitSearch find_libdw(Dwarf_Addr pc, uint32_t max_units, Dwarf_Die& unit);
  // False when the units cannot be read.
  bool build(uint32_t max_units);

  Dwarf* dwarf_;
  Source source_ = Source::Unchecked;
  std::vector<ArangeEntry> table_;    // Source::Table
  bool checked_aranges_ = false;      // libdw's, for Source::Libdw
  Dwarf_Aranges* aranges_ = nullptr;  // libdw's, owned by the Dwarf
  bool built_ = false;
  bool broken_ = false;        // .debug_aranges or the units' headers cannot be read
  std::vector<Range> ranges_;  // sorted by low
};

}  // namespace ehbt::lines
