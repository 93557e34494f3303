// SPDX-License-Identifier: Apache-2.0
// FNV-1a, 64 bits: the checksum and name hash of the cache directory's files (lines/). Not a
// defence against anyone (the directory is the user's own, mode 0700): it tells a torn or
// damaged record, or another key, from the one looked for.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ehbt::util {

inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;

inline void fnv1a(uint64_t& h, const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
}

inline void fnv1a_u64(uint64_t& h, uint64_t v) {
  fnv1a(h, &v, sizeof v);
}

}  // namespace ehbt::util
