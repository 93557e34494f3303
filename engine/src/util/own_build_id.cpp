// SPDX-License-Identifier: Apache-2.0
// Reading our own build-id from the loaded program headers (see own_build_id.hpp).
#include "util/own_build_id.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "util/hex.hpp"

namespace ehbt::util {
namespace {

struct Search {
  uintptr_t address = 0;  // an address inside the object looked for
  std::string id;
};

// The NT_GNU_BUILD_ID note among `size` bytes of notes at `p` (4-byte aligned, as the
// linker lays out PT_NOTE segments of ELF notes), "" when none.
std::string build_id_note(const unsigned char* p, std::size_t size) {
  std::size_t at = 0;
  auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  while (size - at >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) note;
    std::memcpy(&note, p + at, sizeof note);
    at += sizeof note;
    const std::size_t name_size = align4(note.n_namesz), desc_size = align4(note.n_descsz);
    if (name_size > size - at || desc_size > size - at - name_size) break;
    const unsigned char* name = p + at;
    const unsigned char* desc = name + name_size;
    at += name_size + desc_size;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
        note.n_descsz > 0 && note.n_descsz <= 64) {
      return bytes_hex({reinterpret_cast<const std::byte*>(desc), note.n_descsz});
    }
  }
  return {};
}

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  bool ours = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && !ours; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    ours = ph.p_type == PT_LOAD && search->address >= start && search->address - start < ph.p_memsz;
  }
  if (!ours) return 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && search->id.empty(); ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    search->id = build_id_note(reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr),
                               ph.p_memsz);
  }
  return 1;  // found the object: stop
}

}  // namespace

const std::string& own_build_id() {
  static const std::string id = [] {
    Search search;
    search.address = reinterpret_cast<uintptr_t>(&own_build_id);
    dl_iterate_phdr(visit, &search);
    return search.id;
  }();
  return id;
}

}  // namespace ehbt::util
