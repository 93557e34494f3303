// SPDX-License-Identifier: Apache-2.0
// MiniDebugInfo (.gnu_debugdata): distributions that strip binaries keep a small xz-compressed
// ELF holding a .symtab of the functions .dynsym lacks, so that backtraces still have names.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "ehbt/image.hpp"

namespace ehbt::elf {

// The embedded ELF, or null when the section is absent, corrupt, or would decompress past
// Limits::max_image_bytes (the section is tiny by design; a huge one is hostile).
std::shared_ptr<Image> open_minidebuginfo(std::span<const std::byte> section, const Limits& limits);

}  // namespace ehbt::elf
