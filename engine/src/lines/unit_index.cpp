// SPDX-License-Identifier: Apache-2.0
// Finding the unit that covers a pc (see unit_index.hpp).
#include "lines/unit_index.hpp"

#include <dwarf.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <span>

namespace ehbt::lines {
namespace {

// The bytes of section `name` of the file libdw reads, when they are there as they are in
// the file: libdw has inflated compressed sections already, but one still marked compressed,
// a .zdebug_ one, or two of one name, are left to libdw. `found` says whether it exists.
bool section_bytes(Elf* elf, const char* name, std::span<const std::byte>& bytes, bool& found) {
  found = false;
  std::size_t strndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &strndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) return false;
    const char* n = elf_strptr(elf, strndx, shdr.sh_name);
    if (n == nullptr) continue;
    if (n[0] == '.' && n[1] == 'z' && std::strcmp(n + 2, name + 1) == 0) return false;
    if (std::strcmp(n, name) != 0) continue;
    if (found || (shdr.sh_flags & SHF_COMPRESSED) != 0 || shdr.sh_type == SHT_NOBITS) {
      return false;
    }
    found = true;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || (data->d_buf == nullptr && data->d_size != 0)) return false;
    bytes = {static_cast<const std::byte*>(data->d_buf), data->d_size};
  }
  return true;
}

}  // namespace

void UnitIndex::choose(const Limits& limits) {
  source_ = Source::Libdw;
  Elf* elf = dwarf_getelf(dwarf_);
  std::span<const std::byte> aranges, info;
  bool has_aranges = false, has_info = false;
  if (!section_bytes(elf, ".debug_aranges", aranges, has_aranges) ||
      !section_bytes(elf, ".debug_info", info, has_info) || !has_info) {
    return;
  }
  if (!has_aranges) {
    source_ = Source::Units;  // as dwarf_getaranges' count of 0 for no section
    return;
  }
  const char* ident = elf_getident(elf, nullptr);
  if (ident == nullptr) return;
  ArangesTable table =
      parse_aranges(aranges, ident[EI_DATA] == ELFDATA2MSB, info.size(), limits.max_aranges);
  if (table.status != ArangesStatus::Ok) return;
  table_ = std::move(table.entries);
  source_ = table_.empty() ? Source::Units : Source::Table;
}

bool UnitIndex::table_unit(Dwarf* dwarf, const ArangeEntry& entry, Dwarf_Die& unit) {
  Dwarf_Off next = 0;
  std::size_t header = 0;
  if (dwarf_next_unit(dwarf, entry.unit, &next, &header, nullptr, nullptr, nullptr, nullptr,
                      nullptr, nullptr) != 0) {
    return false;
  }
  // libdw finds the unit holding the offset by reading every unit header before it, so an
  // entry that names no unit's start would land in another: the unit found must start there.
  Dwarf_Die cu;
  return dwarf_offdie(dwarf, entry.unit + header, &unit) != nullptr &&
         dwarf_diecu(&unit, &cu, nullptr, nullptr) != nullptr &&
         dwarf_dieoffset(&cu) == entry.unit + header;
}

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

UnitSearch UnitIndex::find(Dwarf_Addr pc, const Limits& limits, Dwarf_Die& unit) {
  if (source_ == Source::Unchecked) choose(limits);
  if (source_ == Source::Table) {
    const ArangeEntry* entry = find_arange(table_, pc);
    if (entry == nullptr) return UnitSearch::None;
    if (table_unit(dwarf_, *entry, unit)) return UnitSearch::Found;
    // Not a table libdw reads as this one does: from now on libdw's answers, all of them.
    source_ = Source::Libdw;
    table_.clear();
  }
  return find_libdw(pc, limits.max_line_dies, unit);
}

std::optional<uint64_t> UnitIndex::table_offset(Dwarf_Addr pc, const Limits& limits) {
  if (source_ == Source::Unchecked) choose(limits);
  if (source_ != Source::Table) return std::nullopt;
  const ArangeEntry* entry = find_arange(table_, pc);
  if (entry == nullptr) return std::nullopt;
  return entry->unit;
}

std::size_t UnitIndex::ranges_before(uint64_t offset, std::size_t cap) const {
  std::size_t n = 0;
  for (const ArangeEntry& e : table_) {
    if (e.unit < offset && ++n >= cap) break;
  }
  return n;
}

UnitSearch UnitIndex::find_in(Dwarf* other, Dwarf_Addr pc, const Limits& limits, Dwarf_Die& unit) {
  if (source_ == Source::Unchecked) choose(limits);
  if (source_ != Source::Table) return UnitSearch::Error;
  const ArangeEntry* entry = find_arange(table_, pc);
  if (entry == nullptr || !table_unit(other, *entry, unit)) return UnitSearch::Error;
  return UnitSearch::Found;
}

UnitSearch UnitIndex::find_libdw(Dwarf_Addr pc, uint32_t max_units, Dwarf_Die& unit) {
  if (!checked_aranges_ && source_ == Source::Libdw) {
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
