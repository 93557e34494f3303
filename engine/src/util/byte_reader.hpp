// SPDX-License-Identifier: Apache-2.0
// A bounds-checked cursor over a span of bytes: fixed-size integers in either byte order,
// LEB128, NUL-terminated strings and sub-spans. Nothing reads past the span; every read
// reports failure instead of guessing. Header-only so the CFI evaluator's loop inlines it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "ehbt/expected.hpp"

namespace ehbt::util {

enum class ReadErrorCode : uint8_t {
  Truncated,    // the value runs past the end of the span
  BadLeb128,    // LEB128 longer than 10 bytes or not fitting in 64 bits
  BadEncoding,  // unknown or unusable DW_EH_PE_* encoding
  MemoryFault,  // a DW_EH_PE_indirect read failed
};

struct ReadError {
  ReadErrorCode code = ReadErrorCode::Truncated;
  // Offset in the span where the value starts (MemoryFault: the address that failed).
  uint64_t where = 0;
};

class ByteReader {
 public:
  ByteReader() = default;
  // `base_addr` is the link-time address of bytes[0], used for pc-relative pointers.
  ByteReader(std::span<const std::byte> bytes, bool big_endian, uint64_t base_addr = 0)
      : bytes_(bytes), base_addr_(base_addr), big_endian_(big_endian) {}

  std::span<const std::byte> bytes() const { return bytes_; }
  bool big_endian() const { return big_endian_; }
  uint64_t base_addr() const { return base_addr_; }
  std::size_t size() const { return bytes_.size(); }
  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ >= bytes_.size(); }
  // Link-time address of the next byte.
  uint64_t address() const { return base_addr_ + pos_; }

  bool seek(uint64_t offset) {
    if (offset > bytes_.size()) return false;
    pos_ = static_cast<std::size_t>(offset);
    return true;
  }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += static_cast<std::size_t>(n);
    return true;
  }
  // Moves forward until address() is a multiple of `alignment` (a power of two).
  bool align(uint64_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return false;
    uint64_t mis = address() & (alignment - 1);
    return mis == 0 || skip(alignment - mis);
  }

  // Unsigned integer of `size` bytes (1..8) in the reader's byte order.
  bool read_uint(unsigned size, uint64_t& out) {
    if (size == 0 || size > 8 || size > remaining()) return false;
    const std::byte* p = bytes_.data() + pos_;
    pos_ += size;
    // The common widths as one load each (tables are read a field at a time, and this is
    // most of what a read costs); the others byte by byte.
    const bool swap = big_endian_ != (std::endian::native == std::endian::big);
    if (size == 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      out = swap ? __builtin_bswap64(v) : v;
      return true;
    }
    if (size == 4) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      out = swap ? __builtin_bswap32(v) : v;
      return true;
    }
    if (size == 2) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      out = swap ? __builtin_bswap16(v) : v;
      return true;
    }
    uint64_t v = 0;
    if (big_endian_) {
      for (unsigned i = 0; i < size; ++i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
    } else {
      for (unsigned i = size; i-- > 0;) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
    }
    out = v;
    return true;
  }
  // Signed integer of `size` bytes (1..8), sign-extended to 64 bits.
  bool read_sint(unsigned size, int64_t& out) {
    uint64_t v = 0;
    if (!read_uint(size, v)) return false;
    if (size < 8) {
      uint64_t sign = uint64_t{1} << (size * 8 - 1);
      v = (v ^ sign) - sign;
    }
    out = static_cast<int64_t>(v);
    return true;
  }

  bool read_u8(uint8_t& out) {
    if (pos_ >= bytes_.size()) return false;
    out = std::to_integer<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool read_u16(uint16_t& out) { return read_narrow(2, out); }
  bool read_u32(uint32_t& out) { return read_narrow(4, out); }
  bool read_u64(uint64_t& out) { return read_uint(8, out); }
  bool read_s8(int8_t& out) { return read_signed_narrow(1, out); }
  bool read_s16(int16_t& out) { return read_signed_narrow(2, out); }
  bool read_s32(int32_t& out) { return read_signed_narrow(4, out); }
  bool read_s64(int64_t& out) { return read_sint(8, out); }

  // Unsigned LEB128: at most 10 bytes, and the 10th may only carry bit 63.
  Expected<uint64_t, ReadError> read_uleb128() {
    const std::size_t start = pos_;
    uint64_t result = 0;
    for (unsigned i = 0;; ++i) {
      if (pos_ >= bytes_.size()) return unexpected(ReadError{ReadErrorCode::Truncated, start});
      const uint8_t b = std::to_integer<uint8_t>(bytes_[pos_++]);
      if (i == 9) {
        // Bit 63 is the only room left; a continuation or higher bits cannot fit.
        if (b > 1) return unexpected(ReadError{ReadErrorCode::BadLeb128, start});
        return result | (uint64_t{b} << 63);
      }
      result |= uint64_t{b & 0x7fu} << (7 * i);
      if ((b & 0x80) == 0) return result;
    }
  }

  // Signed LEB128: at most 10 bytes; the 10th must be a pure sign extension of bit 63.
  Expected<int64_t, ReadError> read_sleb128() {
    const std::size_t start = pos_;
    uint64_t result = 0;
    for (unsigned i = 0;; ++i) {
      if (pos_ >= bytes_.size()) return unexpected(ReadError{ReadErrorCode::Truncated, start});
      const uint8_t b = std::to_integer<uint8_t>(bytes_[pos_++]);
      if (i == 9) {
        // 0x00: bit 63 clear, positive; 0x7f: bit 63 set, negative. Anything else overflows.
        if (b != 0x00 && b != 0x7f) return unexpected(ReadError{ReadErrorCode::BadLeb128, start});
        return static_cast<int64_t>(result | (uint64_t{b & 1u} << 63));
      }
      result |= uint64_t{b & 0x7fu} << (7 * i);
      if ((b & 0x80) == 0) {
        const unsigned shift = 7 * (i + 1);
        if ((b & 0x40) != 0 && shift < 64) result |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(result);
      }
    }
  }

  // `n` bytes as a sub-span of the input.
  bool read_bytes(uint64_t n, std::span<const std::byte>& out) {
    if (n > remaining()) return false;
    out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

  // A NUL-terminated string (the NUL is consumed, not returned).
  bool read_cstring(std::string_view& out) {
    for (std::size_t i = pos_; i < bytes_.size(); ++i) {
      if (bytes_[i] == std::byte{0}) {
        out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), i - pos_);
        pos_ = i + 1;
        return true;
      }
    }
    return false;
  }

 private:
  template <class T>
  bool read_narrow(unsigned size, T& out) {
    uint64_t v = 0;
    if (!read_uint(size, v)) return false;
    out = static_cast<T>(v);
    return true;
  }
  template <class T>
  bool read_signed_narrow(unsigned size, T& out) {
    int64_t v = 0;
    if (!read_sint(size, v)) return false;
    out = static_cast<T>(v);
    return true;
  }

  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
  uint64_t base_addr_ = 0;
  bool big_endian_ = false;
};

}  // namespace ehbt::util
