// SPDX-License-Identifier: Apache-2.0
// .debug_aranges read straight from its bytes: which unit (by the offset of its header in
// .debug_info) covers an address. libdw's dwarf_getaranges() answers the same but first
// reads the header of every unit the table names (thousands in libc's debug file) to turn
// each offset into its first DIE's; reading the table alone leaves that to the one unit a pc
// needs. Only a table libdw would read the same way is accepted: anything else is Malformed
// and the caller asks libdw (unit_index.cpp), so an odd file is answered as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ehbt::lines {

struct ArangeEntry {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint64_t unit = 0;  // offset of the unit's header in .debug_info
};

enum class ArangesStatus {
  Ok,         // `entries` is the table (may be empty: no ranges at all)
  Malformed,  // not a table libdw reads the same way: ask libdw
  TooLarge,   // more than max_entries ranges
};

struct ArangesTable {
  ArangesStatus status = ArangesStatus::Malformed;
  // In libdw's order (dwarf_getaranges: by address, ties in section order), so that
  // find_arange picks what dwarf_getarange_addr picks.
  std::vector<ArangeEntry> entries;
};

// `section` is .debug_aranges (uncompressed), `big_endian` the file's byte order, `info_size`
// the bytes of .debug_info (every unit offset must lie inside it).
ArangesTable parse_aranges(std::span<const std::byte> section, bool big_endian, uint64_t info_size,
                           uint32_t max_entries);

// The entry covering `pc`, by dwarf_getarange_addr's bisection; null when none does.
const ArangeEntry* find_arange(const std::vector<ArangeEntry>& entries, uint64_t pc);

}  // namespace ehbt::lines
