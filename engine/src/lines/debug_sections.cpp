// SPDX-License-Identifier: Apache-2.0
// An ELF file's DWARF sections from its section headers (see debug_sections.hpp).
#include "lines/debug_sections.hpp"

#include <gelf.h>

#include <array>
#include <cstring>

namespace ehbt::lines {
namespace {

// A .zdebug_ section starts "ZLIB" and the inflated size, 8 bytes big-endian.
bool gnu_inflated_size(Elf_Scn* scn, uint64_t& size) {
  Elf_Data* raw = elf_rawdata(scn, nullptr);
  if (raw == nullptr || raw->d_buf == nullptr || raw->d_size < 12) return false;
  const auto* p = static_cast<const unsigned char*>(raw->d_buf);
  if (std::memcmp(p, "ZLIB", 4) != 0) return false;
  size = 0;
  for (int i = 4; i < 12; ++i) size = (size << 8) | p[i];
  return true;
}

}  // namespace

DebugSections scan_debug_sections(Elf* elf) {
  DebugSections out;
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    const std::string_view n(name);
    DebugSection s;
    s.scn = scn;
    s.stored = s.inflated = sh.sh_size;
    s.align = sh.sh_addralign == 0 ? 1 : sh.sh_addralign;
    if (n.starts_with(".debug_")) {
      s.name = n;
      if ((sh.sh_flags & SHF_COMPRESSED) != 0) {
        s.compression = Compression::Shf;
        GElf_Chdr ch;
        // A header that cannot be read leaves the stored size: libdw fails on it the same way.
        if (gelf_getchdr(scn, &ch) != nullptr) {
          s.inflated = ch.ch_size;
          s.align = ch.ch_addralign == 0 ? 1 : ch.ch_addralign;
        }
      }
    } else if (n.starts_with(".zdebug_")) {
      s.name = ".debug_" + std::string(n.substr(8));
      s.compression = Compression::Gnu;
      gnu_inflated_size(scn, s.inflated);
    } else {
      continue;
    }
    out.bytes += s.inflated;
    if (s.name == ".debug_info" && sh.sh_size > 0) out.has_info = true;
    if (s.compression != Compression::None) out.any_compressed = true;
    out.list.push_back(std::move(s));
  }
  return out;
}

bool needed_for_lines(std::string_view name) {
  // What libdw reads for a unit's DIEs, its ranges, its line table and the strings they name
  // (.debug_info, _abbrev, _line, _line_str, _str, _str_offsets, _addr, _ranges, _rnglists,
  // _aranges, _types, ...) stays; what only variables' locations, macros, accelerated name
  // lookups or unwinding read goes.
  static constexpr std::array<std::string_view, 10> kUnread = {
      ".debug_loc",   ".debug_loclists",     ".debug_macro",    ".debug_macinfo",
      ".debug_frame", ".debug_pubnames",     ".debug_pubtypes", ".debug_gnu_pubnames",
      ".debug_names", ".debug_gnu_pubtypes",
  };
  for (std::string_view u : kUnread) {
    if (name == u) return false;
  }
  return true;
}

}  // namespace ehbt::lines
