// SPDX-License-Identifier: Apache-2.0
// Bounds-checked integer decoding in an explicit byte order. Cores and target memory come from
// machines of either endianness (s390x is big-endian), so nothing here uses host order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ehbt::core {

// Reads a `size`-byte unsigned integer at `off`; false when it would leave `bytes`.
inline bool load_uint(std::span<const std::byte> bytes, uint64_t off, unsigned size,
                      bool big_endian, uint64_t& value) {
  if (size == 0 || size > 8 || off > bytes.size() || bytes.size() - off < size) return false;
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) {
    unsigned idx = big_endian ? i : size - 1 - i;
    v = (v << 8) | std::to_integer<uint64_t>(bytes[off + idx]);
  }
  value = v;
  return true;
}

// A view of bytes with one byte order; every accessor returns 0 past the end and records that
// it did, so a parser can decode a fixed layout and check `ok()` once.
class ByteView {
 public:
  ByteView() = default;
  ByteView(std::span<const std::byte> bytes, bool big_endian)
      : bytes_(bytes), big_endian_(big_endian) {}

  std::span<const std::byte> bytes() const { return bytes_; }
  std::size_t size() const { return bytes_.size(); }
  bool big_endian() const { return big_endian_; }
  bool ok() const { return ok_; }

  uint64_t u(uint64_t off, unsigned size) {
    uint64_t v = 0;
    if (!load_uint(bytes_, off, size, big_endian_, v)) ok_ = false;
    return v;
  }
  uint8_t u8(uint64_t off) { return static_cast<uint8_t>(u(off, 1)); }
  uint16_t u16(uint64_t off) { return static_cast<uint16_t>(u(off, 2)); }
  uint32_t u32(uint64_t off) { return static_cast<uint32_t>(u(off, 4)); }
  uint64_t u64(uint64_t off) { return u(off, 8); }
  int32_t s32(uint64_t off) { return static_cast<int32_t>(u32(off)); }
  int16_t s16(uint64_t off) { return static_cast<int16_t>(u16(off)); }

  // Bytes [off, off + len), clamped to what exists.
  std::span<const std::byte> sub(uint64_t off, uint64_t len) const {
    if (off >= bytes_.size()) return {};
    return bytes_.subspan(off, std::min<uint64_t>(len, bytes_.size() - off));
  }

  // A NUL-terminated (or field-bounded) string starting at off, at most max_len bytes.
  std::string str(uint64_t off, uint64_t max_len) const {
    std::string out;
    for (std::byte b : sub(off, max_len)) {
      if (b == std::byte{0}) break;
      out.push_back(static_cast<char>(b));
    }
    return out;
  }

 private:
  std::span<const std::byte> bytes_;
  bool big_endian_ = false;
  bool ok_ = true;
};

// The fields of one program header (Elf64_Phdr, or Elf32_Phdr widened) that cores and loaded
// images use.
struct Phdr64 {
  uint32_t type = 0, flags = 0;
  uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0;
};

// Decodes the ELF64 program header at `off` of `v` (zeros past the end; check v.ok()).
inline Phdr64 read_phdr64(ByteView& v, uint64_t off) {
  Phdr64 p;
  p.type = v.u32(off);
  p.flags = v.u32(off + 4);
  p.offset = v.u64(off + 8);
  p.vaddr = v.u64(off + 16);
  p.filesz = v.u64(off + 32);
  p.memsz = v.u64(off + 40);
  p.align = v.u64(off + 48);
  return p;
}

// Decodes the ELF32 program header at `off` (Elf32_Phdr: type, offset, vaddr, paddr, filesz,
// memsz, flags, align; u32 each).
inline Phdr64 read_phdr32(ByteView& v, uint64_t off) {
  Phdr64 p;
  p.type = v.u32(off);
  p.offset = v.u32(off + 4);
  p.vaddr = v.u32(off + 8);
  p.filesz = v.u32(off + 16);
  p.memsz = v.u32(off + 20);
  p.flags = v.u32(off + 24);
  p.align = v.u32(off + 28);
  return p;
}

// The program header of an ELF of class 64 (`is64`) or 32.
inline Phdr64 read_phdr(ByteView& v, uint64_t off, bool is64) {
  return is64 ? read_phdr64(v, off) : read_phdr32(v, off);
}

inline uint64_t align_up(uint64_t v, uint64_t a) {
  if (a <= 1) return v;
  uint64_t r = v % a;
  if (r == 0) return v;
  uint64_t add = a - r;
  return v > UINT64_MAX - add ? UINT64_MAX : v + add;  // saturates: callers compare to ends
}

}  // namespace ehbt::core
