// SPDX-License-Identifier: Apache-2.0
// How the text renderings print numbers that are not addresses (addresses: hex() in
// report/json_writer.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace ehbt::report {

// An offset with its sign always shown: "+16", "-8", "+0" (objdump's and readelf's notation
// for register-relative locations).
std::string signed_offset(int64_t v);

// Decimal digits of v appended to `out` (std::to_chars: no locale, no temporary string).
void append_decimal(std::string& out, int64_t v);
void append_decimal(std::string& out, uint64_t v);

}  // namespace ehbt::report
