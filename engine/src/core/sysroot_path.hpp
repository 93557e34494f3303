// SPDX-License-Identifier: Apache-2.0
// Looking a path up inside a sysroot the way a chroot would: `..` never climbs above the root,
// and symbolic links, absolute or relative, are followed inside it. A core names the files it
// mapped; a hostile or simply foreign core (`/usr/lib/../../../etc/passwd`, a sysroot whose
// `lib` is an absolute link to `/usr/lib`) must not lead ehbt to open files outside the tree
// the user pointed it at.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ehbt::core {

// Symbolic links followed in one lookup, as the kernel allows (ELOOP beyond).
inline constexpr unsigned kMaxSymlinkHops = 40;

// The host path of `path` looked up inside `root`, every symbolic link resolved (so opening it
// follows none that lead out), or nothing when a component is missing, unreadable or the links
// loop. `root` itself is trusted as given.
std::optional<std::string> resolve_in_root(const std::string& root, std::string_view path);

}  // namespace ehbt::core
