// SPDX-License-Identifier: Apache-2.0
// mmap of a whole file, read-only and private.
#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/regular_file.hpp"

namespace ehbt::core {

Expected<MappedFile, std::string> MappedFile::open(const std::string& path) {
  auto fd = util::open_regular_file(path);
  if (!fd) return unexpected(path + ": " + fd.error().message());
  return adopt(*fd, path);
}

Expected<MappedFile, std::string> MappedFile::adopt(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return unexpected(path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return unexpected(path + ": not a regular file");
  }
  MappedFile f;
  f.size_ = static_cast<std::size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return unexpected(path + ": mmap: " + std::strerror(e));
    }
    f.data_ = p;
    // Reads of a core jump between a few pages of many segments (thread stacks, heap, the
    // notes), and most of a many-thread core is holes. With the default readahead every fault
    // also pulls in and zero-fills its neighbours -- megabytes of page cache per core for a
    // few kilobytes used. A hint only: failure changes nothing but speed. The same holds for
    // reads through the descriptor (core memory is read with pread): the file's own
    // readahead is turned off too.
    madvise(p, f.size_, MADV_RANDOM);
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  }
  f.fd_ = fd;
  return f;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ehbt::core
