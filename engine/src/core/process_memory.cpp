// SPDX-License-Identifier: Apache-2.0
// Reads another process's memory. process_vm_readv does not split one iovec at a fault on
// every kernel, so a read that comes back short is retried page by page to return exactly
// the readable prefix. While the process is stopped, whole pages are read and kept: a walk
// reads the stack 8 bytes at a time, and one system call per page instead of per word took a
// 2,300-frame walk from ~6,900 system calls to a few hundred.
#include "core/process_memory.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ehbt::core {

ProcessMemory::~ProcessMemory() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

std::size_t ProcessMemory::read_chunk(uint64_t addr, std::span<std::byte> out) {
  ++syscalls_;
  if (vm_readv_ok_) {
    iovec local{out.data(), out.size()};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), out.size()};
    ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EFAULT || errno == EIO) return 0;
    if (errno != ENOSYS && errno != EPERM) return 0;
    vm_readv_ok_ = false;  // not available here: use /proc/PID/mem from now on
  }
  if (mem_fd_ < 0) {
    std::string path = "/proc/" + std::to_string(pid_) + "/mem";
    mem_fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return 0;
  }
  if (addr > static_cast<uint64_t>(INT64_MAX)) return 0;  // beyond off_t
  ssize_t n = pread(mem_fd_, out.data(), out.size(), static_cast<off_t>(addr));
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

std::size_t ProcessMemory::read_direct(uint64_t addr, std::span<std::byte> out) {
  if (out.empty()) return 0;
  std::size_t got = read_chunk(addr, out);
  if (got == out.size()) return got;
  // Short: find the readable prefix page by page.
  std::size_t done = 0;
  while (done < out.size()) {
    uint64_t a = addr + done;
    if (a < addr) break;
    std::size_t n =
        static_cast<std::size_t>(std::min<uint64_t>(out.size() - done, kPage - (a % kPage)));
    std::size_t r = read_chunk(a, out.subspan(done, n));
    done += r;
    if (r < n) break;
  }
  return done;
}

const ProcessMemory::Page* ProcessMemory::page(uint64_t page_addr) {
  auto it = pages_.find(page_addr);
  if (it != pages_.end()) return it->second.get();
  if (frozen_) return nullptr;
  // Full: start over rather than track recency; a walk's working set is a few stack pages.
  if (pages_.size() >= max_cached_pages_) pages_.clear();
  auto p = new_page();
  // Mappings are whole pages: a page reads completely or not at all.
  p->readable = read_chunk(page_addr, p->bytes) == kPage;
  return pages_.emplace(page_addr, std::move(p)).first->second.get();
}

std::size_t ProcessMemory::read(uint64_t addr, std::span<std::byte> out) {
  if (out.empty()) return 0;
  // Large reads (an image copied from memory) gain nothing from the cache.
  if (!caching_ || max_cached_pages_ == 0 || out.size() > 4 * kPage) {
    return read_direct(addr, out);
  }
  std::size_t done = 0;
  // At most five pages for a read of at most four pages' length.
  while (done < out.size()) {
    const uint64_t a = addr + done;
    if (a < addr) break;  // wrapped past the top of the address space
    const uint64_t base = a & ~(kPage - 1);
    const std::size_t off = static_cast<std::size_t>(a - base);
    const std::size_t n = std::min<std::size_t>(out.size() - done, kPage - off);
    const Page* p = page(base);
    if (p == nullptr) {
      const std::size_t got = read_direct(a, out.subspan(done, n));
      done += got;
      if (got < n) break;
      continue;
    }
    if (!p->readable) break;
    std::memcpy(out.data() + done, p->bytes.data() + off, n);
    done += n;
  }
  return done;
}

bool ProcessMemory::prefetch(uint64_t begin, uint64_t end) {
  if (!caching_ || frozen_ || begin >= end) return false;
  begin &= ~(kPage - 1);
  // IOV_MAX local buffers per call; one remote range, so a short read is a readable prefix.
  constexpr std::size_t kBatch = 1024;
  std::vector<std::unique_ptr<Page>> fresh;
  std::vector<iovec> local;
  uint64_t a = begin;
  while (a < end) {
    fresh.clear();
    local.clear();
    const uint64_t run = a;
    // Consecutive pages not cached yet, as many as the cache may still take.
    while (a < end && fresh.size() < kBatch && !pages_.contains(a) &&
           pages_.size() + fresh.size() < max_cached_pages_) {
      fresh.push_back(new_page());
      local.push_back(iovec{fresh.back()->bytes.data(), kPage});
      a += kPage;
    }
    if (fresh.empty()) {
      if (a < end && pages_.contains(a)) {
        a += kPage;
        continue;
      }
      return false;  // the cache is full
    }
    ++syscalls_;
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(run)), local.size() * kPage};
    const ssize_t n =
        vm_readv_ok_ ? process_vm_readv(pid_, local.data(), local.size(), &remote, 1, 0) : -1;
    const std::size_t whole = n > 0 ? static_cast<std::size_t>(n) / kPage : 0;
    for (std::size_t i = 0; i < whole; ++i) {
      fresh[i]->readable = true;
      pages_.emplace(run + i * kPage, std::move(fresh[i]));
    }
    if (whole < fresh.size()) return false;  // the rest reads on demand, page by page
  }
  return true;
}

bool ProcessMemory::prefetch_all(std::span<const std::pair<uint64_t, uint64_t>> ranges) {
  if (!caching_ || frozen_) return false;
  constexpr std::size_t kBatch = 1024;  // IOV_MAX, for the local and the remote vectors
  struct Part {
    std::size_t range;  // index in `ranges`
    std::size_t first;  // its first page's index in `fresh`
    std::size_t pages;
    uint64_t begin;
  };
  bool all = true;
  std::vector<std::unique_ptr<Page>> fresh;
  std::vector<iovec> local, remote;
  std::vector<Part> parts;
  std::vector<std::size_t> alone;  // read by prefetch() once the batch is in
  std::size_t next = 0;
  while (next < ranges.size()) {
    fresh.clear();
    local.clear();
    remote.clear();
    parts.clear();
    alone.clear();
    // Ranges wholly uncached, as many as fit the batch and the cache's room; any other range
    // (partly cached already, longer than a batch, or past the cap) goes to prefetch(), after
    // the batch, so that the cap counts the batch's pages.
    for (; next < ranges.size(); ++next) {
      const uint64_t begin = ranges[next].first & ~(kPage - 1);
      const uint64_t end = ranges[next].second;
      if (begin >= end) continue;
      const uint64_t pages = (end - begin + kPage - 1) / kPage;
      bool uncached = pages <= kBatch;
      for (uint64_t k = 0; uncached && k < pages; ++k) {
        uncached = !pages_.contains(begin + k * kPage);
      }
      if (!uncached || pages_.size() + fresh.size() + pages > max_cached_pages_) {
        alone.push_back(next);
        continue;
      }
      if (fresh.size() + pages > kBatch || remote.size() == kBatch) break;  // the next batch
      parts.push_back(Part{next, fresh.size(), static_cast<std::size_t>(pages), begin});
      for (uint64_t k = 0; k < pages; ++k) {
        fresh.push_back(new_page());
        local.push_back(iovec{fresh.back()->bytes.data(), kPage});
      }
      remote.push_back(iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(begin)),
                             static_cast<std::size_t>(pages * kPage)});
    }
    if (!parts.empty()) {
      ++syscalls_;
      const ssize_t n = vm_readv_ok_ ? process_vm_readv(pid_, local.data(), local.size(),
                                                        remote.data(), remote.size(), 0)
                                     : -1;
      // The bytes land in order: what was read is a prefix of the pages.
      const std::size_t whole = n > 0 ? static_cast<std::size_t>(n) / kPage : 0;
      for (const Part& part : parts) {
        const std::size_t got = whole > part.first ? std::min(part.pages, whole - part.first) : 0;
        for (std::size_t k = 0; k < got; ++k) {
          fresh[part.first + k]->readable = true;
          pages_.emplace(part.begin + k * kPage, std::move(fresh[part.first + k]));
        }
        // Cut short (an unreadable page, or a range after one): read alone, as prefetch() would.
        if (got < part.pages) alone.push_back(part.range);
      }
    }
    for (std::size_t r : alone) all = prefetch(ranges[r].first, ranges[r].second) && all;
  }
  return all;
}

void ProcessMemory::reserve_pages(std::size_t pages) {
  pages = std::min<std::size_t>(pages, max_cached_pages_);
  // make_unique value-initialises the page: writing every byte is what faults it in now.
  while (spare_.size() < pages) spare_.push_back(std::make_unique<Page>());
}

std::unique_ptr<ProcessMemory::Page> ProcessMemory::new_page() {
  if (spare_.empty()) return std::make_unique<Page>();
  std::unique_ptr<Page> p = std::move(spare_.back());
  spare_.pop_back();
  p->readable = false;
  return p;
}

void ProcessMemory::set_caching(bool on) {
  caching_ = on;
  frozen_ = false;
  if (!on) pages_.clear();
}

void ProcessMemory::keep_cached() {
  if (caching_) frozen_ = true;
}

}  // namespace ehbt::core
