// SPDX-License-Identifier: Apache-2.0
// Target memory. Every read can fail; none throws. A read returns how many bytes it copied;
// fewer than asked means the rest faulted. One thread at a time: reads update caches.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace ehbt {

// One mapping of the target's address space: [start, end).
struct MemoryRegion {
  uint64_t start = 0;
  uint64_t end = 0;
  bool contains(uint64_t addr) const { return addr >= start && addr < end; }
};

// The region of `sorted` (ascending, non-overlapping) that holds `addr`, or nothing.
std::optional<MemoryRegion> find_region(std::span<const MemoryRegion> sorted, uint64_t addr);

class Memory {
 public:
  Memory() = default;
  // A copy or move starts with no window: the window points into the bytes of the original.
  Memory(const Memory&) {}
  Memory& operator=(const Memory&) {
    clear_window();
    return *this;
  }
  virtual ~Memory() = default;
  virtual std::size_t read(uint64_t addr, std::span<std::byte> out) = 0;

  // The mapping that holds `addr`: a core's PT_LOAD segment, a line of /proc/PID/maps.
  // Nothing when this memory does not know its mappings (or none holds addr): no bound then.
  // A walk takes the region of a frame's stack pointer as that frame's stack: a scan reads no
  // word beyond it, a caller found without a table has its frame in it (unwind/validate.hpp).
  virtual std::optional<MemoryRegion> region_of(uint64_t addr) {
    (void)addr;
    return std::nullopt;
  }

  // Reads exactly out.size() bytes or reports a fault.
  bool read_exact(uint64_t addr, std::span<std::byte> out) {
    if (const std::byte* in = in_window(addr, out.size())) {
      std::memcpy(out.data(), in, out.size());
      return true;
    }
    return read(addr, out) == out.size();
  }

  // Reads an unsigned integer of `size` bytes (1, 2, 4 or 8) in the given byte order.
  bool read_uint(uint64_t addr, unsigned size, bool big_endian, uint64_t& value) {
    // The walk's common read, a host-order word inside the window, without a call.
    if (size == 8 && big_endian == (std::endian::native == std::endian::big)) {
      if (const std::byte* in = in_window(addr, 8)) {
        std::memcpy(&value, in, 8);
        return true;
      }
    }
    return read_uint_slow(addr, size, big_endian, value);
  }

 protected:
  // A window: [start, start + size) holds `data` exactly as read() would return it, so that
  // read_exact serves reads inside it without the virtual call (a walk reads one stack, a
  // word at a time, over and over). An implementation sets it to the bytes a read just came
  // from, and clears it whenever they may change or go away.
  void set_window(uint64_t start, const std::byte* data, uint64_t size) {
    window_start_ = start;
    window_data_ = data;
    window_size_ = size;
  }
  void clear_window() { set_window(0, nullptr, 0); }

 private:
  // The window's bytes for [addr, addr + n), or null when the range is not wholly inside it.
  const std::byte* in_window(uint64_t addr, std::size_t n) const {
    const uint64_t off = addr - window_start_;
    return off < window_size_ && n <= window_size_ - off ? window_data_ + off : nullptr;
  }
  bool read_uint_slow(uint64_t addr, unsigned size, bool big_endian, uint64_t& value);

  uint64_t window_start_ = 0;
  uint64_t window_size_ = 0;
  const std::byte* window_data_ = nullptr;
};

// Up to `size` bytes at `addr`, stopping at the first fault. The buffer grows in 64 KiB steps
// as reads succeed, so a size taken from untrusted input costs only what the memory really
// holds, never a zero-filled buffer of the claimed size.
std::vector<std::byte> read_prefix(Memory& mem, uint64_t addr, uint64_t size);

// Sparse memory made of byte segments; everything else faults. For tests and for images
// assembled from pieces (core segments, file sections).
class BufferMemory final : public Memory {
 public:
  void add(uint64_t addr, std::vector<std::byte> bytes);
  void add(uint64_t addr, std::span<const std::byte> bytes);
  // Little/big-endian word writes, creating or extending nothing: the word must lie in a segment.
  bool write_uint(uint64_t addr, uint64_t value, unsigned size, bool big_endian);
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // Declares [start, end) one mapping (independent of the segments, which may split or span
  // it). Without any, region_of knows nothing.
  void add_region(uint64_t start, uint64_t end);
  std::optional<MemoryRegion> region_of(uint64_t addr) override {
    return find_region(regions_, addr);
  }

 private:
  std::map<uint64_t, std::vector<std::byte>> segments_;  // start -> bytes, non-overlapping
  std::vector<MemoryRegion> regions_;                    // sorted
};

// The calling process's own memory, read with process_vm_readv so a bad address faults
// instead of crashing (for in-process tests and self-backtraces).
// The process id is taken once at construction (getpid() is a system call per read
// otherwise): construct it in the process that reads, not before a fork().
class SelfMemory final : public Memory {
 public:
  SelfMemory();
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // From /proc/self/maps, read on first need and again when addr is in none of its lines
  // (a mapping made since).
  std::optional<MemoryRegion> region_of(uint64_t addr) override;

 private:
  int pid_;
  std::vector<MemoryRegion> maps_;
};

// Adapts a callable (addr, out) -> bytes read. Used by language bindings.
class CallbackMemory final : public Memory {
 public:
  using Fn = std::function<std::size_t(uint64_t, std::span<std::byte>)>;
  explicit CallbackMemory(Fn fn) : fn_(std::move(fn)) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    return fn_ ? fn_(addr, out) : 0;
  }

 private:
  Fn fn_;
};

// Reads from the first memory that has the bytes, byte range by byte range (a core's
// dumped segments, then the files they came from).
class LayeredMemory final : public Memory {
 public:
  void push(Memory* layer) { layers_.push_back(layer); }
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // The first layer's that knows one.
  std::optional<MemoryRegion> region_of(uint64_t addr) override;

 private:
  std::vector<Memory*> layers_;
};

// Fault injection: fails every Nth read, or makes reads short. Wraps another memory.
class FaultyMemory final : public Memory {
 public:
  FaultyMemory(Memory& inner, uint64_t fail_every, bool short_reads = false)
      : inner_(inner), fail_every_(fail_every), short_reads_(short_reads) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  std::optional<MemoryRegion> region_of(uint64_t addr) override { return inner_.region_of(addr); }
  uint64_t reads() const { return reads_; }

 private:
  Memory& inner_;
  uint64_t fail_every_;
  bool short_reads_;
  uint64_t reads_ = 0;
};

}  // namespace ehbt
