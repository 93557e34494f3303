// SPDX-License-Identifier: Apache-2.0
// Digits made eight at a time in a register rather than one at a time from a table: a report
// writes four addresses a frame (snprintf's format parsing cost more than the rest of
// rendering a frame; a digit at a time, about 100 instructions an address).
#include "util/hex.hpp"

#include <bit>
#include <cstring>

namespace ehbt::util {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

// The eight hex digits of x as ASCII, the most significant digit in the lowest byte of the
// result's memory (ready to be copied out as text).
[[gnu::always_inline]] inline uint64_t eight_digits(uint32_t x) {
  // Each nibble to a byte of its own, the least significant nibble in the lowest byte.
  uint64_t y = x;
  y = ((y & 0xffff0000u) << 16) | (y & 0x0000ffffu);
  y = ((y & 0x0000ff000000ff00u) << 8) | (y & 0x000000ff000000ffu);
  y = ((y & 0x00f000f000f000f0u) << 4) | (y & 0x000f000f000f000fu);
  // '0' + n, and 'a' - '0' - 10 = 39 more where n > 9 (n + 6 carries into bit 4).
  const uint64_t letters = ((y + 0x0606060606060606u) >> 4) & 0x0101010101010101u;
  y += 0x3030303030303030u + letters * 39;
  // The lowest byte holds the last digit: in memory order, the first digit comes first only
  // on a big-endian host.
  if constexpr (std::endian::native == std::endian::little) y = __builtin_bswap64(y);
  return y;
}

}  // namespace

std::size_t write_hex(char (&out)[18], uint64_t v) {
  // One digit for 0, else one per nibble up to the highest set bit.
  const std::size_t digits = v == 0 ? 1 : (static_cast<std::size_t>(std::bit_width(v)) + 3) / 4;
  // All 16 digits, then the last `digits` of them copied eight bytes at a time (fixed-size
  // copies are moves; a copy of `digits` bytes is a call): bytes past the digits are written
  // into out's spare room or read from all's, and never counted.
  char all[24] = {};
  const uint64_t high = eight_digits(static_cast<uint32_t>(v >> 32));
  const uint64_t low = eight_digits(static_cast<uint32_t>(v));
  std::memcpy(all, &high, 8);
  std::memcpy(all + 8, &low, 8);
  out[0] = '0';
  out[1] = 'x';
  std::memcpy(out + 2, all + 16 - digits, 8);
  if (digits > 8) std::memcpy(out + 2 + digits - 8, all + 8, 8);
  return digits + 2;
}

void append_hex(std::string& out, uint64_t v) {
  char buf[18];
  out.append(buf, write_hex(buf, v));
}

void append_hex16(std::string& out, uint64_t v) {
  char buf[18] = {'0', 'x'};
  for (int i = 17; i >= 2; --i) {
    buf[i] = kDigits[v & 0xf];
    v >>= 4;
  }
  out.append(buf, sizeof buf);
}

std::string bytes_hex(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = std::to_integer<unsigned>(b);
    out.push_back(kDigits[v >> 4]);
    out.push_back(kDigits[v & 0xf]);
  }
  return out;
}

std::string hex(uint64_t v) {
  std::string s;
  append_hex(s, v);
  return s;
}

}  // namespace ehbt::util
