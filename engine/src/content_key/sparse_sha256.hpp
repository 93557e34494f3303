// SPDX-License-Identifier: Apache-2.0
// The content key ehbt-triage identifies a core by ("seen before"): a SHA-256 over the file's
// content in a canonical sparse form, so that a sparse core, a fully written copy of it and
// the decompressed content of a compressed copy all get one key, and reading it touches only
// the file's data extents (a 16-thread CPython core is 140 MB long and 4 MB of data).
#pragma once

#include <string>

#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt {

struct ContentKeyError {
  int error_number = 0;  // errno of the failed call (EINVAL for a file that is not regular)
  std::string message;   // one line naming the file
};

// The forms of the key. A store keeps the one it was made with: the keys of two forms never
// match, so a store of /1 keys must go on getting /1 keys to know its cores again.
enum class ContentKeyVersion : int {
  kSparseSha256v1 = 1,  // 64 KiB blocks
  kSparseSha256v2 = 2,  // 4 KiB blocks (pages): hashes only the data a core holds, ~40% less
};

// Hex SHA-256 of
//   "ehbt-sparse-sha256/<version> <size in decimal>\n"
//   then for every block of the file (64 KiB in /1, 4 KiB in /2; the last one shorter when
//   the size is not a multiple) that is not all zeros, in file order: its offset (8 bytes,
//   little-endian) and its bytes.
// Not sha256sum's value. Holes are zeros and are never read.
Expected<std::string, ContentKeyError> sparse_sha256(
    const std::string& path, const Limits& limits = {},
    ContentKeyVersion version = ContentKeyVersion::kSparseSha256v2);

}  // namespace ehbt
