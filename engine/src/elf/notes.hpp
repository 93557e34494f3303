// SPDX-License-Identifier: Apache-2.0
// ELF note parsing (PT_NOTE segments, SHT_NOTE sections): the GNU build-id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ehbt::elf {

// Returns the NT_GNU_BUILD_ID descriptor of the first such note in `notes` as lowercase hex,
// or "" when there is none. `align` is the note alignment (4, or 8 for 8-aligned note
// segments); malformed notes end the walk.
std::string find_build_id(std::span<const std::byte> notes, bool big_endian, uint64_t align);

}  // namespace ehbt::elf
