// SPDX-License-Identifier: Apache-2.0
// The memory of an ELF core: the dumped bytes of its PT_LOAD segments, and for ranges the
// kernel (or qemu) did not dump, the contents of the module files whose build-id matched.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/elf_core_file.hpp"
#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::core {

class CoreMemory final : public Memory {
 public:
  explicit CoreMemory(std::vector<CoreSegment> segments);

  // Serves [start, end) from `image` (link address = target address - bias) wherever the
  // core has no dumped bytes. Only for files known to be the ones the target mapped.
  void add_file_backing(uint64_t start, uint64_t end, std::shared_ptr<const Image> image,
                        uint64_t bias);

  std::size_t read(uint64_t addr, std::span<std::byte> out) override;

 private:
  struct Backing {
    uint64_t start, end, bias;
    std::shared_ptr<const Image> image;
  };
  // Dumped bytes at `addr`, or the start of the next dumped range above it.
  const CoreSegment* dumped_at(uint64_t addr, uint64_t& next_start) const;
  const Backing* backing_at(uint64_t addr) const;

  std::vector<CoreSegment> segments_;  // only those with dumped bytes, sorted, non-empty
  std::vector<Backing> backings_;      // sorted by start
};

}  // namespace ehbt::core
