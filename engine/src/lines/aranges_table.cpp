// SPDX-License-Identifier: Apache-2.0
// Reading .debug_aranges (see aranges_table.hpp). The layout is DWARF's (section 6.1.2): sets,
// each a header (unit length, version 2, offset of the unit in .debug_info, address size,
// segment selector size), padding to twice the address size, then (address, length) pairs
// ending with a pair of zeros.
#include "lines/aranges_table.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "elf/byte_view.hpp"

namespace ehbt::lines {

ArangesTable parse_aranges(std::span<const std::byte> section, bool big_endian, uint64_t info_size,
                           uint32_t max_entries) {
  ArangesTable out;
  const uint64_t size = section.size();
  uint64_t pos = 0;
  // Libc's table has thousands of pairs: whole words, not elf::load_uint's byte loop.
  const bool swap = big_endian != (std::endian::native == std::endian::big);
  auto read = [&](unsigned bytes, uint64_t& value) {
    if (!elf::in_bounds(pos, bytes, size)) return false;
    const std::byte* p = section.data() + pos;
    pos += bytes;
    switch (bytes) {
      case 1:
        value = std::to_integer<uint64_t>(*p);
        return true;
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        value = swap ? __builtin_bswap16(v) : v;
        return true;
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        value = swap ? __builtin_bswap32(v) : v;
        return true;
      }
      default: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        value = swap ? __builtin_bswap64(v) : v;
        return true;
      }
    }
  };
  while (pos < size) {
    const uint64_t set_start = pos;
    uint64_t length = 0;
    if (!read(4, length)) return out;
    unsigned offset_size = 4;
    if (length == 0xffffffff) {
      if (!read(8, length)) return out;
      offset_size = 8;
    } else if (length >= 0xfffffff0) {
      return out;  // a reserved escape code
    }
    if (length > size - pos) return out;  // the set runs past the section
    const uint64_t set_end = pos + length;
    uint64_t version = 0, unit = 0, address_size = 0, segment_size = 0;
    if (!read(2, version) || version != 2) return out;
    if (!read(offset_size, unit) || !read(1, address_size) || !read(1, segment_size)) return out;
    // libdw checks that the unit's 4-byte length field lies inside .debug_info.
    if (info_size < 4 || unit > info_size - 4) return out;
    if ((address_size != 4 && address_size != 8) || segment_size != 0) return out;
    const uint64_t pair = 2 * address_size;
    pos += (pair - (pos - set_start) % pair) % pair;
    while (true) {
      uint64_t addr = 0, len = 0;
      if (!read(static_cast<unsigned>(address_size), addr) ||
          !read(static_cast<unsigned>(address_size), len)) {
        return out;
      }
      if (pos > set_end) return out;
      if (addr == 0 && len == 0) {
        // The end of the set, which must be where its length says: libdw versions differ on
        // a pair of zeros before that, and on pairs past it.
        if (pos != set_end) return out;
        break;
      }
      if (out.entries.size() >= max_entries) {
        out.entries.clear();
        out.status = ArangesStatus::TooLarge;
        return out;
      }
      out.entries.push_back(ArangeEntry{addr, len, unit});
    }
  }
  auto by_addr = [](const ArangeEntry& a, const ArangeEntry& b) { return a.addr < b.addr; };
  // Linkers mostly lay units out in address order: then there is nothing to sort.
  if (!std::is_sorted(out.entries.begin(), out.entries.end(), by_addr)) {
    std::stable_sort(out.entries.begin(), out.entries.end(), by_addr);
  }
  out.status = ArangesStatus::Ok;
  return out;
}

const ArangeEntry* find_arange(const std::vector<ArangeEntry>& entries, uint64_t pc) {
  // dwarf_getarange_addr's search, step for step: on overlapping ranges (not in real files)
  // another search could stop at another entry.
  std::size_t lo = 0, hi = entries.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const ArangeEntry& e = entries[mid];
    if (pc < e.addr) {
      hi = mid;
    } else if (pc > e.addr && pc - e.addr >= e.length) {
      lo = mid + 1;
    } else {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace ehbt::lines
