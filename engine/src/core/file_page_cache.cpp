// SPDX-License-Identifier: Apache-2.0
// Least-recently-used over a handful of slots: a linear scan of eight entries is cheaper than
// any index, and the window (Memory::set_window) serves most reads before they get here.
#include "core/file_page_cache.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <new>

namespace ehbt::core {

std::size_t FilePageCache::read_direct(uint64_t offset, std::span<std::byte> out) const {
  std::size_t done = 0;
  // Each turn reads at least one byte or ends the loop, so it runs at most out.size() times.
  while (done < out.size()) {
    const uint64_t at = offset + done;
    if (at < offset || at > static_cast<uint64_t>(INT64_MAX)) break;  // beyond off_t
    const ssize_t n = pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

const std::byte* FilePageCache::page(uint64_t offset, std::size_t& valid, std::size_t& slot) {
  ++clock_;
  std::size_t oldest = 0;
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (slots_[i].offset == offset) {
      slots_[i].used = clock_;
      valid = slots_[i].valid;
      slot = i;
      return buffers_.get() + i * kPage;
    }
    if (slots_[i].used < slots_[oldest].used) oldest = i;
  }
  if (!buffers_) {
    buffers_.reset(new (std::nothrow) std::byte[kSlots * kPage]);
    if (!buffers_) {
      valid = 0;
      return nullptr;
    }
  }
  std::byte* buf = buffers_.get() + oldest * kPage;
  Slot& s = slots_[oldest];
  s.offset = offset;
  s.valid = read_direct(offset, {buf, kPage});
  s.used = clock_;
  valid = s.valid;
  slot = oldest;
  return buf;
}

}  // namespace ehbt::core
