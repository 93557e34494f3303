// SPDX-License-Identifier: Apache-2.0
// The one address format of the engine's texts and the CLI's documents.
#pragma once

#include <cstdint>
#include <string>

namespace ehbt::util {

// "0x" followed by lowercase hex digits, no padding: "0x1f2e", "0x0".
std::string hex(uint64_t v);

}  // namespace ehbt::util
