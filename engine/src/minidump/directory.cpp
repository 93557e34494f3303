// SPDX-License-Identifier: Apache-2.0
// MINIDUMP_HEADER and the stream directory.
#include "core/byte_order.hpp"
#include "minidump/format.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {

bool is_minidump(std::span<const std::byte> head) {
  uint64_t sig = 0;
  return core::load_uint(head, 0, 4, false, sig) && sig == kSignature;
}

std::span<const std::byte> file_range(std::span<const std::byte> file, uint64_t rva,
                                      uint64_t size) {
  if (rva >= file.size()) return {};
  return file.subspan(rva, std::min<uint64_t>(size, file.size() - rva));
}

Expected<std::vector<Stream>, std::string> read_directory(std::span<const std::byte> file,
                                                          const Limits& limits,
                                                          uint64_t& expected_size) {
  if (file.size() < kHeaderSize) return unexpected(std::string("too short for a minidump header"));
  core::ByteView h(file, false);
  if (h.u32(0) != kSignature) return unexpected(std::string("not a minidump (no MDMP signature)"));
  // The high half of Version is the writer's own (Breakpad, LLDB: 0); the low half is fixed.
  if ((h.u32(4) & 0xffff) != kVersion) {
    return unexpected("unsupported minidump version " + std::to_string(h.u32(4) & 0xffff));
  }
  const uint64_t count = h.u32(8);
  const uint64_t dir_rva = h.u32(12);
  if (count > limits.max_minidump_streams) {
    return unexpected("the minidump claims " + std::to_string(count) + " streams (more than " +
                      std::to_string(limits.max_minidump_streams) + ")");
  }
  const uint64_t dir_end = dir_rva + count * kDirectoryEntrySize;
  if (dir_end > file.size()) {
    return unexpected(std::string("the minidump's stream directory runs past the end of the file"));
  }
  expected_size = std::max<uint64_t>(expected_size, dir_end);
  std::vector<Stream> streams;
  streams.reserve(count);
  core::ByteView d(file, false);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = dir_rva + i * kDirectoryEntrySize;
    Stream s;
    s.type = d.u32(at);
    s.size = d.u32(at + 4);
    s.rva = d.u32(at + 8);
    if (s.type == 0) continue;  // UnusedStream: writers reserve entries they do not fill
    s.bytes = file_range(file, s.rva, s.size);
    expected_size = std::max<uint64_t>(expected_size, uint64_t{s.rva} + s.size);
    streams.push_back(s);
  }
  return streams;
}

}  // namespace ehbt::minidump
