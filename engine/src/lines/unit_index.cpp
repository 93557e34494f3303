// SPDX-License-Identifier: Apache-2.0
// Finding the unit that covers a pc (see unit_index.hpp).
#include "lines/unit_index.hpp"

#include <dwarf.h>

#include <algorithm>

namespace ehbt::lines {

bool UnitIndex::build(uint32_t max_units) {
  built_ = true;
  Dwarf_CU* cu = nullptr;
  Dwarf_Die cudie;
  uint8_t unit_type = 0;
  uint32_t seen = 0;
  // Bounded by units and ranges together: a hostile file may claim millions of either.
  int got = 0;
  while ((got = dwarf_get_units(dwarf_, cu, &cu, nullptr, &unit_type, &cudie, nullptr)) == 0) {
    if (++seen > max_units) break;
    if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton) continue;
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t off = 0; (off = dwarf_ranges(&cudie, off, &base, &low, &high)) > 0;) {
      if (++seen > max_units) break;
      if (high > low) ranges_.push_back(Range{low, high, dwarf_dieoffset(&cudie)});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.low < b.low; });
  return got >= 0;
}

UnitSearch UnitIndex::find(Dwarf_Addr pc, uint32_t max_units, Dwarf_Die& unit) {
  if (!checked_aranges_) {
    checked_aranges_ = true;
    std::size_t count = 0;
    // No .debug_aranges reads as none (count 0); one that cannot be read (its units'
    // headers are checked too) is an error.
    if (dwarf_getaranges(dwarf_, &aranges_, &count) != 0) broken_ = true;
    if (count == 0) aranges_ = nullptr;
  }
  if (broken_) return UnitSearch::Error;
  Dwarf_Off offset = 0;
  if (aranges_ != nullptr) {
    // dwarf_addrdie(), in its steps: an address no range covers is no error.
    Dwarf_Arange* range = dwarf_getarange_addr(aranges_, pc);
    if (range == nullptr) return UnitSearch::None;
    if (dwarf_getarangeinfo(range, nullptr, nullptr, &offset) != 0) return UnitSearch::Error;
  } else {
    if (!built_ && !build(max_units)) {
      broken_ = true;
      return UnitSearch::Error;
    }
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc,
                               [](Dwarf_Addr a, const Range& r) { return a < r.low; });
    // Ranges of different units do not overlap in real files; the nearest one below decides.
    if (it == ranges_.begin()) return UnitSearch::None;
    --it;
    if (pc >= it->high) return UnitSearch::None;
    offset = it->unit;
  }
  return dwarf_offdie(dwarf_, offset, &unit) != nullptr ? UnitSearch::Found : UnitSearch::Error;
}

}  // namespace ehbt::lines
