// SPDX-License-Identifier: Apache-2.0
// ELF headers as they lie in a target's memory (the kernel dumps the first page of every
// mapped ELF file; a live process has it all): program headers, the build-id note, the
// dynamic section. Everything is read through the fallible Memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::core {

struct NoteRange {
  uint64_t vaddr = 0, offset = 0, size = 0, align = 4;
};

struct TargetElf {
  bool big_endian = false;
  uint8_t address_size = 8;  // 4 for ELFCLASS32
  uint16_t type = 0;         // ET_EXEC, ET_DYN (0 when only program headers were read)
  uint16_t machine = 0;      // 0 when only program headers were read
  uint64_t entry = 0;
  std::vector<Segment> loads;             // PT_LOAD, link-time
  std::optional<uint64_t> phdr_vaddr;     // PT_PHDR
  std::optional<uint64_t> dynamic_vaddr;  // PT_DYNAMIC
  uint64_t dynamic_size = 0;
  std::optional<uint64_t> interp_vaddr;  // PT_INTERP
  uint64_t interp_offset = 0;
  uint64_t interp_size = 0;
  // A second target address where the file's first page is visible (see
  // read_build_id_at_offsets), when the one at the load base was not dumped.
  std::optional<uint64_t> page0_alias;
  std::vector<NoteRange> notes;  // PT_NOTE

  // The link-time address of file offset 0: where the first mapping begins, relative to the
  // bias (target address of the ELF header = bias + this).
  uint64_t header_vaddr() const;
  // [lowest, highest) link-time addresses covered by PT_LOAD segments; page_size aligns the
  // start down, like the loader's mapping.
  std::pair<uint64_t, uint64_t> load_range(uint64_t page_size) const;
};

// Reads the ELF header at `addr` and its program headers. `big_endian` and `address_size`
// (8: ELFCLASS64, 4: ELFCLASS32) are the target's; a header of the other order or class is
// rejected, as is one claiming more than `max_phdrs` program headers
// (Limits::max_program_headers).
std::optional<TargetElf> read_target_elf(Memory& mem, uint64_t addr, bool big_endian,
                                         uint8_t address_size, uint32_t max_phdrs);

// Decodes `count` program headers at `addr` without an ELF header (AT_PHDR/AT_PHNUM).
std::optional<TargetElf> read_target_phdrs(Memory& mem, uint64_t addr, uint64_t count,
                                           bool big_endian, uint8_t address_size,
                                           uint32_t max_phdrs);

// The NT_GNU_BUILD_ID of an ELF whose notes are mapped at bias + vaddr; "" if unreadable.
std::string read_build_id(Memory& mem, const TargetElf& elf, uint64_t bias);

// The same, reading each note at `offset0 + its file offset`: for a mapping that shows the
// file's first page somewhere else (a data segment whose first page is file page 0), as long
// as the note lies below `file_limit` (the end of what that mapping shows of the file).
std::string read_build_id_at_offsets(Memory& mem, const TargetElf& elf, uint64_t offset0,
                                     uint64_t file_limit);

// A NUL-terminated string at addr, at most max_len bytes; nothing when unreadable or
// unterminated.
std::optional<std::string> read_c_string(Memory& mem, uint64_t addr, std::size_t max_len);

}  // namespace ehbt::core
