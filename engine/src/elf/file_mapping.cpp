// SPDX-License-Identifier: Apache-2.0
#include "elf/file_mapping.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ehbt::elf {

FileMapping::~FileMapping() {
  reset();
}

FileMapping::FileMapping(FileMapping&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

FileMapping& FileMapping::operator=(FileMapping&& other) noexcept {
  if (this != &other) {
    reset();
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void FileMapping::reset() {
  if (addr_ != nullptr) munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

Expected<FileMapping, std::string> FileMapping::map(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return unexpected(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return unexpected(std::string("not a regular file"));
  FileMapping m;
  if (st.st_size <= 0) return m;
  void* p = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return unexpected(std::string("cannot map: ") + std::strerror(errno));
  m.addr_ = p;
  m.size_ = static_cast<std::size_t>(st.st_size);
  return m;
}

}  // namespace ehbt::elf
