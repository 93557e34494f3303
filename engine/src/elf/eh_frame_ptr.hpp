// SPDX-License-Identifier: Apache-2.0
// Finds .eh_frame from the header of .eh_frame_hdr, for images without section headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ehbt::elf {

// Decodes eh_frame_ptr of a version-1 .eh_frame_hdr that starts at link-time `hdr_addr`.
// Supports absptr, udata2/4/8 and sdata2/4/8 applied absolutely, pc-relative or relative to
// the header (datarel); anything else (indirect, leb128, omitted) yields nullopt.
std::optional<uint64_t> decode_eh_frame_ptr(std::span<const std::byte> hdr, uint64_t hdr_addr,
                                            bool big_endian, uint8_t address_size);

}  // namespace ehbt::elf
