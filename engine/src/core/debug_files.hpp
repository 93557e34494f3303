// SPDX-License-Identifier: Apache-2.0
// Separate debug files, found the way GDB and eu-stack find them: by build-id under each
// debug directory (--debug-dir, then usr/lib/debug in each sysroot, then the host's), then by
// .gnu_debuglink next to the file, in its .debug/ directory and under each debug directory.
// Every candidate is checked: its build-id must equal the module's, and a debuglink target
// must also have the CRC-32 the link records. Nothing unchecked is ever attached.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/debuginfod_fetch.hpp"
#include "ehbt/core.hpp"

namespace ehbt::core {

// The candidate paths in lookup order, for a module named `core_path` in the target whose
// file was found at `file_path` ("" when none was). Exposed for tests.
std::vector<std::string> debug_file_candidates(const Image& image, const std::string& core_path,
                                               const std::string& file_path,
                                               const TargetOptions& options);

// Opens the first candidate that passes the checks; sets `found` to its path.
// With a debuginfod session that is on, a debug file no directory holds is fetched by
// build-id; a fetch that failed (other than "not found") is said in `warnings` when given.
std::shared_ptr<const Image> find_debug_file(const Image& image, const std::string& core_path,
                                             const std::string& file_path,
                                             const TargetOptions& options, std::string& found,
                                             DebuginfodSession* debuginfod = nullptr,
                                             std::vector<Warning>* warnings = nullptr);

// CRC-32 (the one .gnu_debuglink records) of a whole file; nothing when unreadable.
std::optional<uint32_t> file_crc32(const std::string& path);

}  // namespace ehbt::core
