// SPDX-License-Identifier: Apache-2.0
// A file mapped read-only into memory (cores are hundreds of megabytes: never read whole), with
// its descriptor kept open for reading by pread where mapping a page costs more than copying it
// (core_memory.hpp).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ehbt/expected.hpp"

namespace ehbt::core {

class MappedFile {
 public:
  static Expected<MappedFile, std::string> open(const std::string& path);
  // Maps an open descriptor and takes it over; `name` is for messages.
  static Expected<MappedFile, std::string> adopt(int fd, const std::string& name);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  // The open file (-1 for a default-constructed one); valid as long as this object.
  int fd() const { return fd_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace ehbt::core
