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

std::string hex(uint64_t v) {
  std::string s;
  append_hex(s, v);
  return s;
}

}  // namespace ehbt::util
