// SPDX-License-Identifier: Apache-2.0
// MemoryListStream (each range with its own place in the file) and Memory64ListStream (the
// ranges' bytes one after another from a base offset, as full-memory dumps write them).
#include "core/byte_order.hpp"
#include "minidump/format.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {

namespace {

// Adds [start, start + size) whose bytes are at `rva`, keeping what the file holds of them.
void add_range(std::span<const std::byte> file, uint64_t start, uint64_t size, uint64_t rva,
               std::vector<core::CoreSegment>& out, uint32_t& cut, uint64_t& expected_size) {
  if (size == 0 || start + size < start) return;  // empty, or wraps around the address space
  expected_size = std::max(expected_size, rva + size);
  auto bytes = file_range(file, rva, size);
  if (bytes.size() < size) ++cut;
  if (bytes.empty()) return;
  core::CoreSegment s;
  s.vaddr = start;
  s.memsz = bytes.size();
  s.dumped = bytes;
  s.file_offset = rva;
  out.push_back(s);
}

}  // namespace

void read_memory_list(std::span<const std::byte> file, std::span<const std::byte> stream,
                      const Limits& limits, std::vector<core::CoreSegment>& out, uint32_t& cut,
                      uint64_t& expected_size) {
  core::ByteView v(stream, false);
  const uint64_t count = v.u32(0);
  if (!v.ok()) return;
  const uint64_t first = list_start(stream.size(), count, kMemoryDescriptorSize);
  for (uint64_t i = 0; i < count && i < limits.max_minidump_memory_ranges; ++i) {
    const uint64_t at = first + i * kMemoryDescriptorSize;
    if (at + kMemoryDescriptorSize > stream.size()) break;
    add_range(file, v.u64(at), v.u32(at + 8), v.u32(at + 12), out, cut, expected_size);
  }
}

void read_memory64_list(std::span<const std::byte> file, std::span<const std::byte> stream,
                        const Limits& limits, std::vector<core::CoreSegment>& out, uint32_t& cut,
                        uint64_t& expected_size) {
  core::ByteView v(stream, false);
  const uint64_t count = v.u64(0);
  uint64_t rva = v.u64(8);
  if (!v.ok()) return;
  for (uint64_t i = 0; i < count && i < limits.max_minidump_memory_ranges; ++i) {
    const uint64_t at = 16 + i * kMemoryDescriptor64Size;
    if (at + kMemoryDescriptor64Size > stream.size()) break;
    const uint64_t start = v.u64(at);
    const uint64_t size = v.u64(at + 8);
    if (rva + size < rva) break;  // the ranges would run past 2^64: the list is bogus
    add_range(file, start, size, rva, out, cut, expected_size);
    rva += size;
  }
}

}  // namespace ehbt::minidump
