// SPDX-License-Identifier: Apache-2.0
// ImageStore: one parsed Image per file, shared by every target that maps it.
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "ehbt/core.hpp"
#include "util/regular_file.hpp"

namespace ehbt {
namespace {

// The file's identity: its device and inode (so that every path to one file, such as /lib
// and /usr/lib, shares one entry) and its size and modification time (so that a file replaced
// by a new build is opened afresh). From one stat() of the path: canonicalising the path
// instead cost a readlink() per component, for every module of every core of a batch. The
// size is also what the image maps, counted against the store's byte cap.
struct Identity {
  std::string key;
  uint64_t bytes = 0;
};

Identity identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
              std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
              std::to_string(st.st_mtim.tv_nsec),
          static_cast<uint64_t>(st.st_size)};
}

// True when the file could be read and does not start with the ELF magic (shorter files
// included). A file that cannot be opened or read is not known to be anything: that may
// change (permissions, descriptors) without changing its identity.
bool known_not_elf(const std::string& path) {
  auto opened = util::open_regular_file(path);
  if (!opened) return false;
  const int fd = *opened;
  unsigned char magic[SELFMAG] = {};
  const ssize_t got = ::pread(fd, magic, sizeof magic, 0);
  ::close(fd);
  if (got < 0) return false;
  return got < static_cast<ssize_t>(sizeof magic) || std::memcmp(magic, ELFMAG, SELFMAG) != 0;
}

}  // namespace

std::shared_ptr<const Image> ImageStore::open(const std::string& path, const Limits& limits) {
  Identity id = identity(path);
  std::string& key = id.key;
  if (key.empty()) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = images_.find(key);
    if (it != images_.end()) {
      recency_.splice(recency_.begin(), recency_, it->second);  // now the most recent
      return it->second->image;
    }
    // Not an image (a locale archive, a font, gconv's cache: cores map many such files):
    // known from an earlier target, not opened and mapped again for each one.
    if (unusable_.count(key) != 0) return nullptr;
  }
  // Parse outside the lock: another target may be opening a different file meanwhile.
  auto img = Image::open(path, limits);
  if (!img) {
    // Remembered only when the file is not ELF at all: another failure (no descriptor left,
    // a limit) may not happen again.
    if (known_not_elf(path)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (unusable_.insert(key).second) {
        unusable_order_.push_back(std::move(key));
        if (max_images_ != 0 && unusable_order_.size() > max_images_) {
          unusable_.erase(unusable_order_.front());
          unusable_order_.pop_front();
        }
      }
    }
    return nullptr;
  }
  std::shared_ptr<const Image> shared(std::move(img.value()));
  std::lock_guard<std::mutex> lock(mu_);
  // If two targets opened it at once, both get the copy stored first.
  if (auto it = images_.find(key); it != images_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second);
    return it->second->image;
  }
  recency_.push_front(Held{key, shared, id.bytes});
  images_.emplace(std::move(key), recency_.begin());
  bytes_ += id.bytes;
  evict_locked();
  return shared;
}

void ImageStore::evict_locked() {
  // The front (just opened) is never dropped: the caller is about to use it.
  while (recency_.size() > 1 && ((max_images_ != 0 && recency_.size() > max_images_) ||
                                 (max_bytes_ != 0 && bytes_ > max_bytes_))) {
    Held& oldest = recency_.back();
    bytes_ -= oldest.bytes;
    images_.erase(oldest.key);
    recency_.pop_back();  // a target holding the image keeps it alive
  }
}

std::size_t ImageStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return images_.size();
}

uint64_t ImageStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace ehbt
