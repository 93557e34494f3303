// SPDX-License-Identifier: Apache-2.0
// ImageStore: one parsed Image per file, shared by every target that maps it.
#include <sys/stat.h>

#include <climits>
#include <cstdlib>

#include "ehbt/core.hpp"

namespace ehbt {
namespace {

// The file's identity: its canonical path (symlinks such as /lib -> /usr/lib collapse) and
// size + modification time, so a file replaced by a new build is opened afresh.
std::string identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  std::string real = path;
  if (char* r = realpath(path.c_str(), nullptr)) {
    real = r;
    std::free(r);
  }
  return real + '\n' + std::to_string(st.st_size) + '\n' + std::to_string(st.st_mtim.tv_sec) + '.' +
         std::to_string(st.st_mtim.tv_nsec) + '\n' + std::to_string(st.st_ino);
}

}  // namespace

std::shared_ptr<const Image> ImageStore::open(const std::string& path, const Limits& limits) {
  std::string key = identity(path);
  if (key.empty()) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = images_.find(key);
    if (it != images_.end()) return it->second;
  }
  // Parse outside the lock: another target may be opening a different file meanwhile.
  auto img = Image::open(path, limits);
  if (!img) return nullptr;
  std::shared_ptr<const Image> shared(std::move(img.value()));
  std::lock_guard<std::mutex> lock(mu_);
  // If two targets opened it at once, both get the copy stored first.
  return images_.emplace(key, shared).first->second;
}

std::size_t ImageStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return images_.size();
}

}  // namespace ehbt
