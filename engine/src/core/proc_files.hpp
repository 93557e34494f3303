// SPDX-License-Identifier: Apache-2.0
// Reading a live process's /proc files: mappings, auxv, thread list, names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/elf_core_file.hpp"

namespace ehbt::core {

// Parses /proc/PID/maps text: file-backed and special ([vdso], [stack]) mappings alike.
std::vector<FileMapping> parse_proc_maps(std::string_view text, std::size_t max_lines);

// The whole of a small /proc file ("" on error), at most max_bytes.
std::string read_proc_file(const std::string& path, std::size_t max_bytes);

// /proc/PID/auxv in host byte order.
std::vector<std::pair<uint64_t, uint64_t>> read_proc_auxv(int pid);

// Thread ids in /proc/PID/task, ascending, the main thread first.
std::vector<int> list_threads(int pid);

// readlink(), "" on error.
std::string read_link(const std::string& path);

}  // namespace ehbt::core
