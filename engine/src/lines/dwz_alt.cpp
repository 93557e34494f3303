// SPDX-License-Identifier: Apache-2.0
// Candidate paths of a dwz alternate file (see dwz_alt.hpp).
#include "lines/dwz_alt.hpp"

namespace ehbt::lines {
namespace {

constexpr std::string_view kSystemDebugDir = "/usr/lib/debug";

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void add_unique(std::vector<std::string>& out, std::string path) {
  for (const std::string& p : out) {
    if (p == path) return;
  }
  out.push_back(std::move(path));
}

}  // namespace

std::vector<std::string> dwz_alt_candidates(const std::string& debug_path,
                                            std::string_view link_name,
                                            std::string_view build_id_hex) {
  std::vector<std::string> out;
  if (!link_name.empty()) {
    if (link_name.front() == '/') {
      // Debian's "/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug": inside the sysroot the
      // debug file was found in, when it was found under one.
      const std::size_t at = debug_path.find(kSystemDebugDir);
      if (at != std::string::npos && at > 0) {
        add_unique(out, debug_path.substr(0, at) + std::string(link_name));
      }
      add_unique(out, std::string(link_name));
    } else {
      add_unique(out, dir_of(debug_path) + "/" + std::string(link_name));
    }
  }
  if (build_id_hex.size() >= 4) {
    const std::string rest = "/.build-id/" + std::string(build_id_hex.substr(0, 2)) + "/" +
                             std::string(build_id_hex.substr(2)) + ".debug";
    // The debug directory the debug file was found in by build-id (--debug-dir, a sysroot's).
    const std::size_t at = debug_path.rfind("/.build-id/");
    if (at != std::string::npos) add_unique(out, debug_path.substr(0, at) + rest);
    add_unique(out, std::string(kSystemDebugDir) + rest);
  }
  return out;
}

}  // namespace ehbt::lines
