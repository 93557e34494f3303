// SPDX-License-Identifier: Apache-2.0
// Reads from dumped core segments first, then from matched module files.
#include "core/core_memory.hpp"

#include <algorithm>
#include <cstring>

namespace ehbt::core {

CoreMemory::CoreMemory(std::vector<CoreSegment> segments, int fd) {
  for (auto& s : segments) {
    if (!s.dumped.empty()) segments_.push_back(s);
    if (s.memsz != 0 && s.vaddr + s.memsz > s.vaddr)
      regions_.push_back({s.vaddr, s.vaddr + s.memsz});
  }
  std::sort(regions_.begin(), regions_.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
  // A hostile core may overlap its segments: keep the first of overlapping ones, so that the
  // list stays a partition find_region can search.
  std::size_t kept = 0;
  for (const MemoryRegion& r : regions_) {
    if (kept == 0 || r.start >= regions_[kept - 1].end) regions_[kept++] = r;
  }
  regions_.resize(kept);
  std::stable_sort(segments_.begin(), segments_.end(),
                   [](const CoreSegment& a, const CoreSegment& b) { return a.vaddr < b.vaddr; });
  if (fd >= 0) pages_ = std::make_unique<FilePageCache>(fd);
}

void CoreMemory::add_file_backing(uint64_t start, uint64_t end, std::shared_ptr<const Image> image,
                                  uint64_t bias) {
  if (!image || end <= start) return;
  Backing b{start, end, bias, std::move(image)};
  auto it = std::upper_bound(backings_.begin(), backings_.end(), start,
                             [](uint64_t a, const Backing& x) { return a < x.start; });
  backings_.insert(it, std::move(b));
}

const CoreSegment* CoreMemory::dumped_at(uint64_t addr, uint64_t& next_start) const {
  next_start = UINT64_MAX;
  auto it = std::upper_bound(segments_.begin(), segments_.end(), addr,
                             [](uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
  if (it != segments_.end()) next_start = it->vaddr;
  if (it == segments_.begin()) return nullptr;
  const CoreSegment& s = *(it - 1);
  if (addr - s.vaddr < s.dumped.size()) return &s;
  return nullptr;
}

const CoreMemory::Backing* CoreMemory::backing_at(uint64_t addr) const {
  auto it = std::upper_bound(backings_.begin(), backings_.end(), addr,
                             [](uint64_t a, const Backing& x) { return a < x.start; });
  // Backings may overlap (a bogus module range); look back a few, nearest start first.
  for (int i = 0; i < 4 && it != backings_.begin(); ++i) {
    --it;
    if (addr < it->end) return &*it;
  }
  return nullptr;
}

std::size_t CoreMemory::read_dumped(const CoreSegment& s, uint64_t addr, std::span<std::byte> out,
                                    uint64_t window_end) {
  const uint64_t off = addr - s.vaddr;
  // The window: this segment, up to where the next one starts (dumped_at picks that one there).
  const uint64_t seg_end = s.vaddr + std::min<uint64_t>(s.dumped.size(), window_end - s.vaddr);
  if (!pages_) {
    std::memcpy(out.data(), s.dumped.data() + off, out.size());
    set_window(s.vaddr, s.dumped.data(), seg_end - s.vaddr);
    return out.size();
  }
  constexpr uint64_t kPage = FilePageCache::kPage;
  const uint64_t file_at = s.file_offset + off;
  // A read this long (headers, a string table copied whole) is not repeated word by word.
  if (out.size() > 2 * kPage) return pages_->read_direct(file_at, out);
  std::size_t done = 0;
  // At most three pages; a page the file ends in stops the loop at its end (in_page >= valid).
  while (done < out.size()) {
    const uint64_t f = file_at + done;
    const uint64_t page_at = f - f % kPage;
    std::size_t valid = 0, slot = 0;
    const std::byte* page = pages_->page(page_at, valid, slot);
    if (slot == window_slot_) {  // reloaded, or about to be shown again below
      clear_window();
      window_slot_ = kNoSlot;
    }
    const std::size_t in_page = static_cast<std::size_t>(f - page_at);
    if (page == nullptr || in_page >= valid) break;  // the file is shorter than its headers say
    const std::size_t n = std::min(out.size() - done, valid - in_page);
    std::memcpy(out.data() + done, page + in_page, n);
    done += n;
    // The part of this page that holds the segment's bytes, as target addresses.
    const uint64_t lo = std::max(page_at, s.file_offset) - s.file_offset + s.vaddr;
    const uint64_t hi = std::min(page_at + valid - s.file_offset + s.vaddr, seg_end);
    if (hi > lo) {
      set_window(lo, page + (lo - s.vaddr + s.file_offset - page_at), hi - lo);
      window_slot_ = slot;
    }
  }
  return done;
}

std::size_t CoreMemory::read(uint64_t addr, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    uint64_t a = addr + done;
    if (a < addr) break;  // wrapped around the address space
    std::size_t want = out.size() - done;
    uint64_t next_dumped = 0;
    if (const CoreSegment* s = dumped_at(a, next_dumped)) {
      uint64_t off = a - s->vaddr;
      std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(want, s->dumped.size() - off));
      const std::size_t got = read_dumped(*s, a, out.subspan(done, n), next_dumped);
      done += got;
      if (got < n) break;
      continue;
    }
    const Backing* b = backing_at(a);
    if (b == nullptr) break;
    // Never let the file shadow dumped bytes that follow: they are the target's real state.
    uint64_t limit = std::min(b->end, next_dumped);
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(want, limit - a));
    std::size_t got = b->image->read(a - b->bias, out.subspan(done, n));
    if (got == 0) break;
    done += got;
    if (got < n) break;
  }
  return done;
}

}  // namespace ehbt::core
