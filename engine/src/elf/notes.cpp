// SPDX-License-Identifier: Apache-2.0
// Notes are a sequence of (namesz, descsz, type, name, desc) records whose name and desc are
// padded to the note alignment. The three header words are 4 bytes in both ELF classes.
// With 8-byte alignment (e.g. NT_GNU_PROPERTY_TYPE_0 segments) the offsets, not the sizes,
// are rounded: a 4-byte name after the 12-byte header needs no padding.
#include "elf/notes.hpp"

#include <elf.h>

#include <cstring>

#include "elf/byte_view.hpp"
#include "util/hex.hpp"

namespace ehbt::elf {
namespace {

// Caps the walk: no real note segment holds more than a handful of notes.
constexpr unsigned kMaxNotes = 4096;

uint64_t pad(uint64_t n, uint64_t align) {
  return (n + (align - 1)) & ~(align - 1);
}

}  // namespace

std::string find_build_id(std::span<const std::byte> notes, bool big_endian, uint64_t align) {
  if (align != 8) align = 4;
  uint64_t off = 0;
  for (unsigned i = 0; i < kMaxNotes; ++i) {
    auto namesz = load_uint(notes, off, 4, big_endian);
    auto descsz = load_uint(notes, off + 4, 4, big_endian);
    auto type = load_uint(notes, off + 8, 4, big_endian);
    if (!namesz || !descsz || !type) break;
    uint64_t name_off = off + 12;
    // The descriptor and the next note start at aligned offsets (the buffer itself is
    // aligned). Sizes are 32-bit, so this cannot overflow 64-bit offsets.
    uint64_t desc_off = pad(name_off + *namesz, align);
    uint64_t next = pad(desc_off + *descsz, align);
    if (!in_bounds(name_off, *namesz, notes.size()) || !in_bounds(desc_off, *descsz, notes.size()))
      break;
    auto name = slice(notes, name_off, *namesz);
    bool gnu = *namesz == 4 && std::memcmp(name.data(), "GNU", 4) == 0;
    if (gnu && *type == NT_GNU_BUILD_ID && *descsz > 0) {
      return util::bytes_hex(slice(notes, desc_off, *descsz));
    }
    if (next <= off || next > notes.size()) break;
    off = next;
  }
  return {};
}

}  // namespace ehbt::elf
