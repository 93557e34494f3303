// SPDX-License-Identifier: Apache-2.0
#include "util/hex.hpp"

#include <cinttypes>
#include <cstdio>

namespace ehbt::util {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

}  // namespace ehbt::util
