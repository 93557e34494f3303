// SPDX-License-Identifier: Apache-2.0
#include "util/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ehbt::util {

std::string OpenFailure::message() const {
  if (error == 0) return "not a regular file";
  return std::strerror(error);
}

Expected<int, OpenFailure> open_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return unexpected(OpenFailure{errno});
  if (!S_ISREG(st.st_mode)) return unexpected(OpenFailure{0});
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return unexpected(OpenFailure{errno});
  // The path may have been replaced between the stat and the open.
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = S_ISREG(st.st_mode) ? errno : 0;
    ::close(fd);
    return unexpected(OpenFailure{err});
  }
  return fd;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace ehbt::util
