// SPDX-License-Identifier: Apache-2.0
// The output side of decompressing a core: an anonymous temporary file written so that runs
// of zero blocks stay holes. Most of a core is untouched memory the kernel wrote as holes; a
// 17 GB sparse core must not turn into 17 GB of disk. The file has no name (O_TMPFILE, or
// unlinked at once), so nothing is left behind however the process ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ehbt/expected.hpp"

namespace ehbt::core {

struct SparseSinkCaps {
  uint64_t max_bytes = 0;       // logical size of the decompressed file
  uint64_t max_disk_bytes = 0;  // bytes of non-zero blocks written (0: free space decides)
};

class SparseSink {
 public:
  // A temporary file in `dir` ($TMPDIR or /tmp when empty).
  static Expected<SparseSink, std::string> create(const std::string& dir, SparseSinkCaps caps);

  SparseSink() = default;
  SparseSink(SparseSink&& other) noexcept { *this = std::move(other); }
  SparseSink& operator=(SparseSink&& other) noexcept;
  SparseSink(const SparseSink&) = delete;
  SparseSink& operator=(const SparseSink&) = delete;
  ~SparseSink();

  // Appends bytes. Fails once a cap would be passed or the disk is full.
  Expected<void, std::string> write(std::span<const std::byte> bytes);
  // Writes what is buffered and sets the final size (a trailing hole stays a hole).
  Expected<void, std::string> finish();

  uint64_t size() const { return size_; }              // logical bytes appended so far
  uint64_t data_bytes() const { return data_bytes_; }  // bytes of non-zero blocks written
  int fd() const { return fd_; }
  // Gives up ownership of the descriptor (the caller maps and closes it).
  int release();

 private:
  Expected<void, std::string> flush();

  int fd_ = -1;
  std::string dir_;
  SparseSinkCaps caps_;
  uint64_t size_ = 0;
  uint64_t flushed_ = 0;  // file offset where buf_ starts
  uint64_t data_bytes_ = 0;
  std::vector<std::byte> buf_;
};

}  // namespace ehbt::core
