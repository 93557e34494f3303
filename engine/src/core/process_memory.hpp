// SPDX-License-Identifier: Apache-2.0
// Memory of another live process: process_vm_readv, falling back to /proc/PID/mem, through
// a page cache while the process is stopped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ehbt/memory.hpp"

namespace ehbt::core {

class ProcessMemory final : public Memory {
 public:
  // `max_cached_pages` (Limits::max_cached_pages) bounds the cache; 0 turns it off.
  explicit ProcessMemory(int pid, uint32_t max_cached_pages = 0)
      : pid_(pid), max_cached_pages_(max_cached_pages) {}
  ~ProcessMemory() override;
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // The mappings of /proc/PID/maps (sorted [start, end) pairs), read by the target that
  // opened this memory; region_of answers from them.
  void set_regions(std::vector<MemoryRegion> regions) { regions_ = std::move(regions); }
  std::optional<MemoryRegion> region_of(uint64_t addr) override {
    return find_region(regions_, addr);
  }

  // Caching pays only while the target cannot change its memory: on while every thread we
  // read is stopped, off (and emptied) once any runs again.
  void set_caching(bool on);
  // Reads the pages of [begin, end) into the cache in one system call per 1,024 pages (while
  // caching is on), leaving out pages already there and stopping where the target's memory
  // or the cache's capacity ends. Returns whether all of the range is now cached.
  bool prefetch(uint64_t begin, uint64_t end);
  // prefetch() of several ranges ([begin, end) each) in as few system calls as their pages
  // allow (one per 1,024 pages): the threads' stacks at a stop, read together. A range the
  // joint read does not complete is read again on its own. Returns whether all are cached.
  bool prefetch_all(std::span<const std::pair<uint64_t, uint64_t>> ranges);
  // The process runs again, but the pages cached so far were all read while it was stopped:
  // they stay and keep answering reads (a snapshot of the stopped process); any other read
  // goes to the running process and is not kept.
  void keep_cached();
  // Allocates `pages` page buffers now (at most the cache's cap) for the cache to fill
  // later: a fresh buffer is a page fault of this process's own (~12 us on a VM), and taken
  // before the target is stopped, that cost stays out of the stop.
  void reserve_pages(std::size_t pages);
  // System calls made to read target memory so far (for benchmarks and tests).
  uint64_t syscalls() const { return syscalls_; }

 private:
  static constexpr uint64_t kPage = 4096;
  struct Page {
    bool readable = false;
    std::array<std::byte, kPage> bytes;
  };
  std::size_t read_chunk(uint64_t addr, std::span<std::byte> out);
  std::size_t read_direct(uint64_t addr, std::span<std::byte> out);
  const Page* page(uint64_t page_addr);  // nullptr: not cached and nothing may be added
  std::unique_ptr<Page> new_page();      // from spare_ when it has one

  int pid_;
  int mem_fd_ = -1;  // /proc/PID/mem, opened on first need
  bool vm_readv_ok_ = true;
  uint32_t max_cached_pages_;
  bool caching_ = false;
  bool frozen_ = false;  // keep_cached(): serve the cached pages, add none
  uint64_t syscalls_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  std::vector<std::unique_ptr<Page>> spare_;  // reserve_pages()
  std::vector<MemoryRegion> regions_;         // set_regions(), sorted
};

}  // namespace ehbt::core
