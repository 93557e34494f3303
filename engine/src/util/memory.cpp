// SPDX-License-Identifier: Apache-2.0
// Memory adapters: sparse buffers, the calling process, layers, and fault injection.
#include "ehbt/memory.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "ehbt/limits.hpp"

namespace ehbt {

std::optional<MemoryRegion> find_region(std::span<const MemoryRegion> sorted, uint64_t addr) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), addr,
                             [](uint64_t a, const MemoryRegion& r) { return a < r.start; });
  if (it == sorted.begin() || !std::prev(it)->contains(addr)) return std::nullopt;
  return *std::prev(it);
}

bool Memory::read_uint_slow(uint64_t addr, unsigned size, bool big_endian, uint64_t& value) {
  if (size == 0 || size > 8) return false;
  std::byte buf[8];
  if (!read_exact(addr, std::span(buf, size))) return false;
  uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    // The target's byte order is the host's: the bytes are the value (zero-extended).
    if (!big_endian) {
      std::memcpy(&v, buf, size);
      value = v;
      return true;
    }
  }
  for (unsigned i = 0; i < size; ++i) {
    unsigned idx = big_endian ? i : size - 1 - i;
    v = (v << 8) | std::to_integer<uint64_t>(buf[idx]);
  }
  value = v;
  return true;
}

std::vector<std::byte> read_prefix(Memory& mem, uint64_t addr, uint64_t size) {
  constexpr uint64_t kChunk = 64u << 10;
  if (addr + size < addr) size = UINT64_MAX - addr;  // never wrap around
  std::vector<std::byte> out;
  uint64_t done = 0;
  while (done < size) {
    const uint64_t n = std::min(kChunk, size - done);
    out.resize(static_cast<std::size_t>(done + n));
    const std::size_t got =
        mem.read(addr + done, std::span(out).subspan(static_cast<std::size_t>(done)));
    done += std::min<uint64_t>(got, n);
    if (got < n) break;
  }
  out.resize(static_cast<std::size_t>(done));
  return out;
}

void BufferMemory::add(uint64_t addr, std::vector<std::byte> bytes) {
  if (bytes.empty()) return;
  clear_window();  // the windowed segment may be replaced
  segments_[addr] = std::move(bytes);
}

void BufferMemory::add(uint64_t addr, std::span<const std::byte> bytes) {
  add(addr, std::vector<std::byte>(bytes.begin(), bytes.end()));
}

bool BufferMemory::write_uint(uint64_t addr, uint64_t value, unsigned size, bool big_endian) {
  if (size == 0 || size > 8) return false;
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) return false;
  --it;
  uint64_t off = addr - it->first;
  if (off > it->second.size() || it->second.size() - off < size) return false;
  for (unsigned i = 0; i < size; ++i) {
    unsigned shift = big_endian ? 8 * (size - 1 - i) : 8 * i;
    it->second[off + i] = static_cast<std::byte>((value >> shift) & 0xff);
  }
  return true;
}

std::size_t BufferMemory::read(uint64_t addr, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    uint64_t a = addr + done;
    if (a < addr) break;  // wrapped around the address space
    auto it = segments_.upper_bound(a);
    if (it == segments_.begin()) break;
    --it;
    uint64_t off = a - it->first;
    if (off >= it->second.size()) break;
    std::size_t n = std::min<std::size_t>(out.size() - done, it->second.size() - off);
    std::memcpy(out.data() + done, it->second.data() + off, n);
    done += n;
    // This segment, up to where the next one starts (a read there would be served by it).
    const auto next = std::next(it);
    const uint64_t end = next == segments_.end() ? UINT64_MAX : next->first;
    set_window(it->first, it->second.data(),
               std::min<uint64_t>(it->second.size(), end - it->first));
  }
  return done;
}

void BufferMemory::add_region(uint64_t start, uint64_t end) {
  if (end <= start) return;
  auto it = std::upper_bound(regions_.begin(), regions_.end(), start,
                             [](uint64_t a, const MemoryRegion& r) { return a < r.start; });
  regions_.insert(it, MemoryRegion{start, end});
}

SelfMemory::SelfMemory() : pid_(getpid()) {}

std::optional<MemoryRegion> SelfMemory::region_of(uint64_t addr) {
  if (auto r = find_region(maps_, addr)) return r;
  // Not known yet, or mapped since the last read: read the maps again (once per such query;
  // only walks without tables ask).
  maps_.clear();
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return std::nullopt;
  char line[512];
  // Bounded like a core's file list (the kernel's vm.max_map_count is 65530 by default).
  const uint32_t cap = Limits{}.max_file_mappings;
  while (maps_.size() < cap && std::fgets(line, sizeof line, f) != nullptr) {
    uint64_t start = 0, end = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) == 2 && start < end)
      maps_.push_back(MemoryRegion{start, end});
    // A line longer than the buffer (a long path): skip its rest.
    while (std::strchr(line, '\n') == nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    }
  }
  std::fclose(f);
  std::sort(maps_.begin(), maps_.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
  return find_region(maps_, addr);
}

std::size_t SelfMemory::read(uint64_t addr, std::span<std::byte> out) {
  if (out.empty()) return 0;
  iovec local{out.data(), out.size()};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), out.size()};
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

std::size_t LayeredMemory::read(uint64_t addr, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    std::size_t best = 0;
    for (Memory* layer : layers_) {
      best = layer->read(addr + done, out.subspan(done));
      if (best > 0) break;
    }
    if (best == 0) break;
    done += best;
  }
  return done;
}

std::optional<MemoryRegion> LayeredMemory::region_of(uint64_t addr) {
  for (Memory* layer : layers_) {
    if (auto r = layer->region_of(addr)) return r;
  }
  return std::nullopt;
}

std::size_t FaultyMemory::read(uint64_t addr, std::span<std::byte> out) {
  ++reads_;
  if (fail_every_ != 0 && reads_ % fail_every_ == 0) return 0;
  if (short_reads_ && out.size() > 1) return inner_.read(addr, out.first(out.size() / 2));
  return inner_.read(addr, out);
}

}  // namespace ehbt
