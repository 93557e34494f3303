// SPDX-License-Identifier: Apache-2.0
#include "report/numbers.hpp"

#include <charconv>

namespace ehbt::report {
namespace {

template <typename T>
void append_number(std::string& out, T v, bool plus_sign) {
  char buf[24];
  char* p = buf;
  if (plus_sign && v >= 0) *p++ = '+';
  const auto res = std::to_chars(p, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(res.ptr - buf));
}

}  // namespace

std::string signed_offset(int64_t v) {
  std::string s;
  append_number(s, v, true);
  return s;
}

void append_decimal(std::string& out, int64_t v) {
  append_number(out, v, false);
}
void append_decimal(std::string& out, uint64_t v) {
  append_number(out, v, false);
}

}  // namespace ehbt::report
