// SPDX-License-Identifier: Apache-2.0
// The sparse handle (see sparse_dwarf.hpp).
#include "lines/sparse_dwarf.hpp"

#include <dwarf.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "lines/debug_sections.hpp"
#include "lines/dwarf_file.hpp"

namespace ehbt::lines {
namespace {

// A DWARF 5 unit header with no DIEs: 4 bytes of length, version, unit type, address size,
// 4 bytes of abbreviation offset.
constexpr uint64_t kFillerHeader = 12;

struct Unit {
  uint64_t start = 0, end = 0;  // [start, end) in .debug_info, end clipped as libdw clips it
  uint64_t abbrev = 0;
  uint8_t address_size = 8;
};

void put(std::byte* at, uint64_t value, unsigned bytes, bool big_endian) {
  for (unsigned i = 0; i < bytes; ++i) {
    const unsigned shift = 8 * (big_endian ? bytes - 1 - i : i);
    at[i] = static_cast<std::byte>((value >> shift) & 0xff);
  }
}

// A partial unit covering [at, at + size): libdw interns it (DWARF 5: without reading a DIE)
// and steps over it. `next` lends a valid abbreviation offset and address size.
void write_filler(std::byte* buf, uint64_t at, uint64_t size, const Unit& next, bool big_endian) {
  std::byte* p = buf + at;
  put(p, size - 4, 4, big_endian);
  put(p + 4, 5, 2, big_endian);
  put(p + 6, DW_UT_partial, 1, big_endian);
  put(p + 7, next.address_size, 1, big_endian);
  put(p + 8, next.abbrev, 4, big_endian);
}

bool fillable(uint64_t gap) {
  return gap == 0 || (gap >= kFillerHeader && gap - 4 < 0xfffffff0);
}

// The units of `wanted` (sorted) that the chain of headers from offset 0 lands on, as
// libdw's walk (__libdw_intern_next_unit) would: each header readable, versions 2 to 5, ends
// past the section clipped to it.
std::vector<Unit> chain_units(Dwarf* full, uint64_t info_size, const std::vector<uint64_t>& wanted,
                              uint32_t max_units) {
  std::vector<Unit> out;
  uint64_t off = 0;
  uint32_t read = 0;
  for (uint64_t target : wanted) {
    while (off <= target && off < info_size) {
      if (++read > max_units) return out;
      Dwarf_Off next = 0;
      Dwarf_Half version = 0;
      Dwarf_Off abbrev = 0;
      uint8_t address_size = 0, offset_size = 0;
      if (dwarf_next_unit(full, off, &next, nullptr, &version, &abbrev, &address_size, &offset_size,
                          nullptr, nullptr) != 0 ||
          version < 2 || version > 5 || offset_size != 4) {
        return out;
      }
      const uint64_t end = next > info_size ? info_size : next;
      if (off == target) out.push_back(Unit{off, end, abbrev, address_size});
      if (end <= off) return out;
      off = end;
    }
  }
  return out;
}

// Whether DIEs of the unit can refer only to DIEs of the same unit (or of the dwz file):
// no abbreviation names a form that reaches another unit of .debug_info.
bool self_contained(Dwarf_Die& cu, uint32_t max_abbrevs) {
  Dwarf_Off offset = 0;
  uint32_t read = 0;
  while (true) {
    std::size_t length = 0;
    Dwarf_Abbrev* abbrev = dwarf_getabbrev(&cu, offset, &length);
    if (abbrev == DWARF_END_ABBREV) return true;
    if (abbrev == nullptr || length == 0) return false;
    // Attribute after attribute until libdw says there is none at that index (its count is
    // not used: libdw adds to it when an abbreviation already read is read again).
    for (std::size_t i = 0;; ++i) {
      if (++read > max_abbrevs) return false;
      unsigned int name = 0, form = 0;
      if (dwarf_getabbrevattr_data(abbrev, i, &name, &form, nullptr, nullptr) != 0) break;
      if (form == DW_FORM_ref_addr || form == DW_FORM_ref_sig8 || form == DW_FORM_indirect) {
        return false;
      }
    }
    offset += length;
  }
}

Elf_Scn* section_named(Elf* elf, const char* wanted) {
  std::size_t strndx = 0;
  if (elf_getshdrstrndx(elf, &strndx) != 0) return nullptr;
  Elf_Scn* found = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return nullptr;
    const char* name = elf_strptr(elf, strndx, sh.sh_name);
    if (name == nullptr || std::strcmp(name, wanted) != 0) continue;
    if (found != nullptr || sh.sh_type == SHT_NOBITS) return nullptr;  // two: libdw decides
    found = scn;
  }
  return found;
}

}  // namespace

SparseDwarf::~SparseDwarf() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
  if (elf_ != nullptr) elf_end(elf_);
  if (map_ != nullptr) munmap(map_, map_size_);
}

bool SparseDwarf::holds(uint64_t unit) const {
  return std::binary_search(units_.begin(), units_.end(), unit);
}

std::unique_ptr<SparseDwarf> SparseDwarf::open(const DwarfFile& full, std::vector<uint64_t> units,
                                               uint32_t max_units) {
  if (full.fd() < 0 || full.dwarf() == nullptr || units.empty()) return nullptr;
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());

  std::unique_ptr<SparseDwarf> s(new SparseDwarf);
  // A libelf handle of its own: its .debug_info descriptor is pointed at the private mapping, which
  // the full handle's must never see.
  s->elf_ = elf_begin(full.fd(), ELF_C_READ_MMAP, nullptr);
  if (s->elf_ == nullptr || elf_kind(s->elf_) != ELF_K_ELF) return nullptr;
  const DebugSections sections = scan_debug_sections(s->elf_);
  if (!sections.has_info || sections.any_compressed) return nullptr;
  Elf_Scn* info_scn = section_named(s->elf_, ".debug_info");
  Elf_Data* info = info_scn != nullptr ? elf_getdata(info_scn, nullptr) : nullptr;
  if (info == nullptr || info->d_buf == nullptr || info->d_size == 0) return nullptr;
  const char* ident = elf_getident(s->elf_, nullptr);
  if (ident == nullptr) return nullptr;
  const bool big_endian = ident[EI_DATA] == ELFDATA2MSB;
  const uint64_t size = info->d_size;

  const std::vector<Unit> chain = chain_units(full.dwarf(), size, units, max_units);
  if (chain.empty()) return nullptr;
  // The section mapped privately from the file: the units read are the file's pages (no
  // copy), and only the pages a filler header is written into become the process's own.
  GElf_Shdr sh;
  if (gelf_getshdr(info_scn, &sh) == nullptr || sh.sh_size != size) return nullptr;
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return nullptr;
  const uint64_t map_from = sh.sh_offset & ~static_cast<uint64_t>(page - 1);
  const uint64_t lead = sh.sh_offset - map_from;
  void* map = mmap(nullptr, lead + size, PROT_READ | PROT_WRITE, MAP_PRIVATE, full.fd(),
                   static_cast<off_t>(map_from));
  if (map == MAP_FAILED) return nullptr;
  s->map_ = map;
  s->map_size_ = lead + size;
  std::byte* buf = static_cast<std::byte*>(map) + lead;
  std::vector<Unit> placed;
  uint64_t laid_to = 0;  // [0, laid_to) is laid out
  for (const Unit& u : chain) {
    if (!fillable(u.start - laid_to)) continue;  // left inside the next filler: not held
    if (u.start > laid_to) write_filler(buf, laid_to, u.start - laid_to, u, big_endian);
    laid_to = u.end;
    placed.push_back(u);
  }
  if (placed.empty()) return nullptr;
  // Past the last unit: one filler to the end where it fits; libdw's search for a unit
  // placed here stops before it either way.
  if (size - laid_to >= kFillerHeader && fillable(size - laid_to)) {
    write_filler(buf, laid_to, size - laid_to, placed.back(), big_endian);
  }
  // libelf's descriptor for the section, which dwarf_begin_elf reads: that mapping from now on.
  // (libelf frees only what it allocated itself, never d_buf.)
  info->d_buf = buf;
  s->dwarf_ = dwarf_begin_elf(s->elf_, DWARF_C_READ, nullptr);
  if (s->dwarf_ == nullptr) return nullptr;
  if (Dwarf* alt = full.alt_dwarf()) dwarf_setalt(s->dwarf_, alt);

  for (const Unit& u : placed) {
    Dwarf_Off next = 0;
    std::size_t header = 0;
    Dwarf_Die cu, found;
    uint8_t unit_type = 0;
    if (dwarf_next_unit(s->dwarf_, u.start, &next, &header, nullptr, nullptr, nullptr, nullptr,
                        nullptr, nullptr) != 0 ||
        dwarf_offdie(s->dwarf_, u.start + header, &cu) == nullptr ||
        dwarf_diecu(&cu, &found, nullptr, nullptr) == nullptr ||
        dwarf_dieoffset(&found) != u.start + header ||
        dwarf_cu_info(cu.cu, nullptr, &unit_type, nullptr, nullptr, nullptr, nullptr, nullptr) !=
            0 ||
        unit_type != DW_UT_compile || !self_contained(cu, max_units)) {
      continue;
    }
    s->units_.push_back(u.start);
  }
  if (s->units_.empty()) return nullptr;
  return s;
}

}  // namespace ehbt::lines
