// SPDX-License-Identifier: Apache-2.0
// Checking the paths options name before anything is opened: a nonexistent --exe, --sysroot
// or --debug-dir used to be accepted silently (the run then looked elsewhere and said nothing
// about the typing mistake), and a FIFO given where a file belongs blocked the run forever.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ehbt::cli {

enum class PathKind { RegularFile, Directory };

// nullopt when `path` (links followed) is of `kind`; else the usage error naming both:
// "--sysroot /nope: no such directory", "--exe /tmp/fifo: not a regular file".
// stat(2) only: nothing is opened.
std::optional<std::string> check_option_path(std::string_view option, const std::string& path,
                                             PathKind kind);

// Whether stat(2) finds anything at `path`.
bool path_exists(const std::string& path);

}  // namespace ehbt::cli
