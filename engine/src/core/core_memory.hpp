// SPDX-License-Identifier: Apache-2.0
// The memory of an ELF core: the dumped bytes of its PT_LOAD segments, and for ranges the
// kernel (or qemu) did not dump, the contents of the module files whose build-id matched.
// Given the core's file descriptor, the dumped bytes are read from the file through a small
// page cache (file_page_cache.hpp) instead of from the segments' spans into a mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/elf_core_file.hpp"
#include "core/file_page_cache.hpp"
#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::core {

class CoreMemory final : public Memory {
 public:
  // Without `fd`, reads copy from each segment's `dumped` span; with it, they read the same
  // bytes from the file at the segment's `file_offset` (the span then only gives the length).
  // The descriptor stays the caller's and must outlive this object.
  explicit CoreMemory(std::vector<CoreSegment> segments, int fd = -1);

  // Serves [start, end) from `image` (link address = target address - bias) wherever the
  // core has no dumped bytes. Only for files known to be the ones the target mapped.
  void add_file_backing(uint64_t start, uint64_t end, std::shared_ptr<const Image> image,
                        uint64_t bias);

  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // The PT_LOAD segment holding addr (one per mapping of the process, dumped or not).
  std::optional<MemoryRegion> region_of(uint64_t addr) override {
    return find_region(regions_, addr);
  }

 private:
  struct Backing {
    uint64_t start, end, bias;
    std::shared_ptr<const Image> image;
  };
  // Dumped bytes at `addr`, or the start of the next dumped range above it.
  const CoreSegment* dumped_at(uint64_t addr, uint64_t& next_start) const;
  const Backing* backing_at(uint64_t addr) const;
  // Copies the dumped bytes [addr, addr + out.size()) of `s` (all inside it) into `out`;
  // `window_end` bounds the window it may leave (where the next segment starts). Returns the
  // bytes copied: fewer only when the file no longer holds them.
  std::size_t read_dumped(const CoreSegment& s, uint64_t addr, std::span<std::byte> out,
                          uint64_t window_end);

  std::vector<CoreSegment> segments_;     // only those with dumped bytes, sorted, non-empty
  std::vector<Backing> backings_;         // sorted by start
  std::vector<MemoryRegion> regions_;     // every PT_LOAD, sorted, overlaps dropped
  std::unique_ptr<FilePageCache> pages_;  // null: read the spans
  // The cache slot the window shows, so that reusing that slot for another page drops the
  // window first; kNoSlot when the window is elsewhere or unset.
  static constexpr std::size_t kNoSlot = SIZE_MAX;
  std::size_t window_slot_ = kNoSlot;
};

}  // namespace ehbt::core
