// SPDX-License-Identifier: Apache-2.0
// Digits from a table into a stack buffer: snprintf's format parsing cost more than the rest
// of rendering a frame.
#include "util/hex.hpp"

#include <bit>

namespace ehbt::util {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

}  // namespace

std::size_t write_hex(char (&out)[18], uint64_t v) {
  // One digit for 0, else one per nibble up to the highest set bit.
  const std::size_t digits = v == 0 ? 1 : (static_cast<std::size_t>(std::bit_width(v)) + 3) / 4;
  out[0] = '0';
  out[1] = 'x';
  for (std::size_t i = digits + 1; i >= 2; --i) {
    out[i] = kDigits[v & 0xf];
    v >>= 4;
  }
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
