// SPDX-License-Identifier: Apache-2.0
// A file mapped read-only into memory (never read whole), unmapped on destruction.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ehbt/expected.hpp"

namespace ehbt::elf {

class FileMapping {
 public:
  FileMapping() = default;
  ~FileMapping();
  FileMapping(FileMapping&& other) noexcept;
  FileMapping& operator=(FileMapping&& other) noexcept;
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  // Maps `fd` (a regular file) PROT_READ/MAP_PRIVATE. An empty file maps to an empty span.
  static Expected<FileMapping, std::string> map(int fd);

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }

 private:
  void reset();
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ehbt::elf
