// SPDX-License-Identifier: Apache-2.0
// Where a dwz-processed debug file's alternate file (.gnu_debugaltlink: the DIEs and strings
// dwz moved out of several debug files) may be, as GDB and libdw look for it: the name the
// link records (relative to the debug file's directory, or absolute, inside the debug file's
// sysroot), then by build-id under the debug directory the debug file itself came from and
// the host's /usr/lib/debug.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ehbt::lines {

std::vector<std::string> dwz_alt_candidates(const std::string& debug_path,
                                            std::string_view link_name,
                                            std::string_view build_id_hex);

}  // namespace ehbt::lines
