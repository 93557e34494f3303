// SPDX-License-Identifier: Apache-2.0
// The bytes of a core, however the spool stored them: a plain ELF core is mapped as it is; a
// compressed one (told by content) is decompressed into a sparse anonymous temporary file
// that is mapped instead and disappears with the mapping.
#pragma once

#include <string>

#include "core/mapped_file.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::core {

// Errors are one line naming the file and why it is unusable.
Expected<MappedFile, std::string> open_core_source(const std::string& path, const Limits& limits);

}  // namespace ehbt::core
