// SPDX-License-Identifier: Apache-2.0
// ThreadListStream: each thread's id, registers and the stack memory the writer kept.
#include "core/byte_order.hpp"
#include "minidump/format.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {

uint64_t list_start(uint64_t stream_size, uint64_t count, uint64_t record) {
  return stream_size == 8 + count * record ? 8 : 4;
}

Expected<std::vector<ThreadState>, std::string> read_thread_list(
    std::span<const std::byte> file, std::span<const std::byte> stream, Arch arch,
    const Limits& limits, std::vector<core::CoreSegment>& stacks) {
  core::ByteView v(stream, false);
  const uint64_t count = v.u32(0);
  if (!v.ok()) return unexpected(std::string("the minidump's thread list is cut short"));
  const uint64_t first = list_start(stream.size(), count, kThreadSize);
  std::vector<ThreadState> threads;
  for (uint64_t i = 0; i < count && i < limits.max_threads; ++i) {
    const uint64_t at = first + i * kThreadSize;
    if (at + kThreadSize > stream.size()) break;  // cut short: the threads before it stay
    ThreadState t;
    t.tid = v.u32(at);
    const uint64_t stack_start = v.u64(at + 24);
    const uint64_t stack_size = v.u32(at + 32);
    const uint64_t stack_rva = v.u32(at + 36);
    const uint64_t ctx_size = v.u32(at + 40);
    const uint64_t ctx_rva = v.u32(at + 44);
    auto regs = decode_context(arch, file_range(file, ctx_rva, ctx_size));
    if (!regs) continue;  // no registers to start from: nothing to walk
    t.regs = *regs;
    threads.push_back(std::move(t));
    // The stack is usually in the memory list too; the reader keeps one copy of each range.
    auto bytes = file_range(file, stack_rva, stack_size);
    if (!bytes.empty() && stack_start + bytes.size() > stack_start) {
      core::CoreSegment s;
      s.vaddr = stack_start;
      s.memsz = bytes.size();
      s.dumped = bytes;
      s.file_offset = stack_rva;
      stacks.push_back(s);
    }
  }
  return threads;
}

std::optional<ExceptionRecord> read_exception(std::span<const std::byte> file,
                                              std::span<const std::byte> stream, Arch arch) {
  if (stream.size() < kExceptionStreamSize) return std::nullopt;
  core::ByteView v(stream, false);
  ExceptionRecord e;
  e.tid = v.u32(0);
  e.code = v.u32(8);
  e.flags = v.u32(12);
  e.address = v.u64(24);
  const uint64_t ctx_size = v.u32(160);
  const uint64_t ctx_rva = v.u32(164);
  if (!v.ok()) return std::nullopt;
  if (ctx_size != 0) e.context = decode_context(arch, file_range(file, ctx_rva, ctx_size));
  return e;
}

}  // namespace ehbt::minidump
