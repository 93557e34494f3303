// SPDX-License-Identifier: Apache-2.0
// Bounds-checked access to ELF bytes of either byte order. Every offset and size that comes
// from a file or from target memory is untrusted, so the checks never overflow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ehbt::elf {

// True when [offset, offset + size) lies inside a buffer of `total` bytes.
inline bool in_bounds(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

// The sub-span [offset, offset + size), or an empty span when it does not fit.
inline std::span<const std::byte> slice(std::span<const std::byte> bytes, uint64_t offset,
                                        uint64_t size) {
  if (!in_bounds(offset, size, bytes.size())) return {};
  return bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
}

// Reads an unsigned integer of `size` bytes (1, 2, 4 or 8) at `offset`.
inline std::optional<uint64_t> load_uint(std::span<const std::byte> bytes, uint64_t offset,
                                         unsigned size, bool big_endian) {
  if (size == 0 || size > 8 || !in_bounds(offset, size, bytes.size())) return std::nullopt;
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) {
    unsigned idx = big_endian ? i : size - 1 - i;
    v = (v << 8) | std::to_integer<uint64_t>(bytes[static_cast<std::size_t>(offset) + idx]);
  }
  return v;
}

// Sign-extends the low `size` bytes of v.
inline int64_t sign_extend(uint64_t v, unsigned size) {
  if (size >= 8) return static_cast<int64_t>(v);
  unsigned shift = 64 - 8 * size;
  return static_cast<int64_t>(v << shift) >> shift;
}

// x + y, or nullopt on unsigned overflow.
inline std::optional<uint64_t> checked_add(uint64_t x, uint64_t y) {
  uint64_t r = x + y;
  if (r < x) return std::nullopt;
  return r;
}

}  // namespace ehbt::elf
