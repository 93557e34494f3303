// SPDX-License-Identifier: Apache-2.0
#include "cli_paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace ehbt::cli {

std::optional<std::string> check_option_path(std::string_view option, const std::string& path,
                                             PathKind kind) {
  const std::string subject = std::string(option) + " " + path + ": ";
  const bool want_dir = kind == PathKind::Directory;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return subject + (want_dir ? "no such directory" : "no such file");
    return subject + std::strerror(errno);
  }
  if (want_dir && !S_ISDIR(st.st_mode)) return subject + "not a directory";
  if (!want_dir && !S_ISREG(st.st_mode)) return subject + "not a regular file";
  return std::nullopt;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace ehbt::cli
