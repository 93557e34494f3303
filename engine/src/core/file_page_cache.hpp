// SPDX-License-Identifier: Apache-2.0
// A few pages of a file, read with pread into buffers that are reused: what a core's memory
// is read through. A walk reads one thread's stack a word at a time, a few pages per thread,
// and the next thread's stack lies elsewhere in the file; mapping the core instead costs a
// page fault per page touched and page-table work again when it is unmapped, which on a VM
// (the machines this project measures on) is several times the cost of copying the page.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace ehbt::core {

class FilePageCache {
 public:
  static constexpr uint64_t kPage = 4096;
  // Enough for the stack pages of the frame being stepped and its neighbours, plus the odd
  // page of a module's data the resolver reads; each buffer is one page fault of our own the
  // first time it is used, so fewer is cheaper for the many small cores.
  static constexpr std::size_t kSlots = 8;

  // `fd` stays the caller's: it must outlive the cache.
  explicit FilePageCache(int fd) : fd_(fd) {}
  FilePageCache(const FilePageCache&) = delete;
  FilePageCache& operator=(const FilePageCache&) = delete;

  // The page of the file at `offset` (a multiple of kPage): its bytes, of which `valid` were
  // in the file (fewer in the last page, none past the end or on a read error). `slot` says
  // which buffer holds them: the bytes stay put until that slot is reused, and a slot is
  // reused only for a page not cached, the least recently used first.
  const std::byte* page(uint64_t offset, std::size_t& valid, std::size_t& slot);
  // Reads [offset, offset + out.size()) straight into `out` (a short read is retried; it
  // stops at the end of the file or an error). Returns the bytes read.
  std::size_t read_direct(uint64_t offset, std::span<std::byte> out) const;

 private:
  struct Slot {
    uint64_t offset = UINT64_MAX;  // UINT64_MAX: empty
    std::size_t valid = 0;
    uint64_t used = 0;  // clock_ at the last use
  };
  int fd_;
  uint64_t clock_ = 0;
  std::array<Slot, kSlots> slots_{};
  std::unique_ptr<std::byte[]> buffers_;  // kSlots pages, allocated on first use
};

}  // namespace ehbt::core
