// SPDX-License-Identifier: Apache-2.0
#include "cli_numbers.hpp"

#include <cinttypes>
#include <cstdio>

namespace ehbt::cli {

std::string signed_offset(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+" PRId64, v);
  return buf;
}

}  // namespace ehbt::cli
