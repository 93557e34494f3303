// SPDX-License-Identifier: Apache-2.0
// Writing a debug file's DWARF inflated (see uncompressed_copy.hpp), through libelf, which
// lays the file out and writes its headers in the source's class and byte order.
#include "lines/uncompressed_copy.hpp"

#include <gelf.h>

#include <cstring>
#include <string>
#include <vector>

namespace ehbt::lines {
namespace {

// One section of the copy: its header fields and the bytes it holds (owned by the source Elf).
struct OutSection {
  std::string name;
  GElf_Word type = SHT_PROGBITS;
  GElf_Xword flags = 0;
  GElf_Addr addr = 0;
  GElf_Xword entsize = 0;
  uint64_t align = 1;
  void* bytes = nullptr;
  std::size_t size = 0;
};

// The inflated bytes of a kept .debug_* section, or false when libelf cannot inflate it.
bool inflate(const DebugSection& s, OutSection& out) {
  if (s.compression == Compression::Shf && elf_compress(s.scn, 0, 0) < 0) return false;
  if (s.compression == Compression::Gnu && elf_compress_gnu(s.scn, 0, 0) < 0) return false;
  // Raw bytes: .debug_* sections are byte arrays to libelf (no conversion either way).
  Elf_Data* d = s.compression == Compression::None ? elf_rawdata(s.scn, nullptr)
                                                   : elf_getdata(s.scn, nullptr);
  if (d == nullptr || d->d_size != s.inflated) return false;
  GElf_Shdr sh;
  if (gelf_getshdr(s.scn, &sh) == nullptr) return false;
  out.name = s.name;
  out.type = sh.sh_type;
  out.flags = sh.sh_flags & ~static_cast<GElf_Xword>(SHF_COMPRESSED);
  out.entsize = sh.sh_entsize;
  out.align = s.align;
  out.bytes = d->d_buf;
  out.size = d->d_size;
  return true;
}

// The notes (the build-id is one) and the dwz link, raw, as the source stores them.
void add_links(Elf* source, std::vector<OutSection>& out) {
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(source, &shstrndx) != 0) return;
  for (Elf_Scn* scn = elf_nextscn(source, nullptr); scn != nullptr;
       scn = elf_nextscn(source, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* name = elf_strptr(source, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    if (sh.sh_type != SHT_NOTE && std::strcmp(name, ".gnu_debugaltlink") != 0) continue;
    Elf_Data* d = elf_rawdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) continue;
    OutSection o;
    o.name = name;
    o.type = sh.sh_type;
    o.flags = sh.sh_flags;
    o.addr = sh.sh_addr;
    o.align = sh.sh_addralign == 0 ? 1 : sh.sh_addralign;
    o.bytes = d->d_buf;
    o.size = d->d_size;
    out.push_back(std::move(o));
  }
}

// A section of `elf` holding `s`, named by offset `name` in the section name table. The
// section's index, or 0.
std::size_t add_section(Elf* elf, const OutSection& s, std::size_t name) {
  Elf_Scn* scn = elf_newscn(elf);
  if (scn == nullptr) return 0;
  Elf_Data* d = elf_newdata(scn);
  if (d == nullptr) return 0;
  d->d_buf = s.bytes;
  d->d_size = s.size;
  d->d_type = ELF_T_BYTE;
  d->d_align = s.align;
  d->d_off = 0;
  d->d_version = EV_CURRENT;
  GElf_Shdr sh;
  if (gelf_getshdr(scn, &sh) == nullptr) return 0;
  sh.sh_name = static_cast<GElf_Word>(name);
  sh.sh_type = s.type;
  sh.sh_flags = s.flags;
  sh.sh_addr = s.addr;
  sh.sh_entsize = s.entsize;
  sh.sh_addralign = s.align;
  return gelf_update_shdr(scn, &sh) != 0 ? elf_ndxscn(scn) : 0;
}

uint64_t write_sections(Elf* source, std::vector<OutSection>& sections, Elf* out) {
  GElf_Ehdr from;
  if (gelf_getehdr(source, &from) == nullptr) return 0;
  const int elf_class = gelf_getclass(source);
  if (elf_class == ELFCLASSNONE || gelf_newehdr(out, elf_class) == nullptr) return 0;
  GElf_Ehdr eh;
  if (gelf_getehdr(out, &eh) == nullptr) return 0;
  std::memcpy(eh.e_ident, from.e_ident, EI_NIDENT);
  eh.e_type = from.e_type;
  eh.e_machine = from.e_machine;
  eh.e_version = EV_CURRENT;
  eh.e_entry = from.e_entry;
  eh.e_flags = from.e_flags;

  // The section name table, complete before any section points into it.
  OutSection strtab;
  strtab.type = SHT_STRTAB;
  strtab.name = ".shstrtab";
  std::string names(1, '\0');
  std::vector<std::size_t> offsets;
  for (const OutSection& s : sections) {
    offsets.push_back(names.size());
    names.append(s.name).push_back('\0');
  }
  const std::size_t strtab_name = names.size();
  names.append(strtab.name).push_back('\0');
  strtab.bytes = names.data();
  strtab.size = names.size();

  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (add_section(out, sections[i], offsets[i]) == 0) return 0;
  }
  const std::size_t strtab_index = add_section(out, strtab, strtab_name);
  if (strtab_index == 0 || strtab_index >= SHN_LORESERVE) return 0;
  eh.e_shstrndx = static_cast<GElf_Half>(strtab_index);
  if (gelf_update_ehdr(out, &eh) == 0) return 0;
  const off_t written = elf_update(out, ELF_C_WRITE);
  return written > 0 ? static_cast<uint64_t>(written) : 0;
}

}  // namespace

uint64_t write_uncompressed_copy(Elf* source, const DebugSections& sections, int fd) {
  std::vector<OutSection> out;
  add_links(source, out);
  for (const DebugSection& s : sections.list) {
    if (!needed_for_lines(s.name)) continue;
    OutSection o;
    if (!inflate(s, o)) return 0;
    out.push_back(std::move(o));
  }
  Elf* elf = elf_begin(fd, ELF_C_WRITE, nullptr);
  if (elf == nullptr) return 0;
  const uint64_t written = write_sections(source, out, elf);
  elf_end(elf);
  return written;
}

}  // namespace ehbt::lines
