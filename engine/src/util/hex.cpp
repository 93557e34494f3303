// SPDX-License-Identifier: Apache-2.0
// Digits from a table into a stack buffer: snprintf's format parsing cost more than the rest
// of rendering a frame.
#include "util/hex.hpp"

namespace ehbt::util {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

}  // namespace

void append_hex(std::string& out, uint64_t v) {
  char buf[18];
  char* end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = kDigits[v & 0xf];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  out.append(p, static_cast<std::size_t>(end - p));
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
