// SPDX-License-Identifier: Apache-2.0
// Finding and opening ehbt's cache directory (see cache_dir.hpp).
#include "lines/cache_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace ehbt::lines {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// mkdir -p with mode 0700 for what it makes; whether `path` is a directory afterwards.
bool make_dirs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return false;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string ehbt_cache_dir() {
  if (std::string dir = env("EHBT_CACHE_DIR"); !dir.empty()) return dir;
  // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return xdg + "/ehbt";
  }
  // Without $HOME there is no cache (the password database is not asked: the CLI is linked
  // statically, where NSS lookups are best avoided).
  const std::string home = env("HOME");
  if (home.empty()) return {};
  return home + "/.cache/ehbt";
}

int open_private_dir(const std::string& root, const char* sub) {
  if (root.empty() || !make_dirs(root)) return -1;
  const int parent = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return -1;
  if (::mkdirat(parent, sub, 0700) != 0 && errno != EEXIST) {
    ::close(parent);
    return -1;
  }
  const int fd = ::openat(parent, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(parent);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace ehbt::lines
