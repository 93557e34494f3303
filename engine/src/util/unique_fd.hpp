// SPDX-License-Identifier: Apache-2.0
// A file descriptor closed when it goes out of scope (or kept, release()).
#pragma once

#include <unistd.h>

#include <utility>

namespace ehbt::util {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace ehbt::util
