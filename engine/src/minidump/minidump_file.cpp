// SPDX-License-Identifier: Apache-2.0
// parse_minidump: the directory, then each stream the engine uses; the rest are skipped.
#include "minidump/minidump_file.hpp"

#include <algorithm>

#include "core/byte_order.hpp"
#include "minidump/format.hpp"

namespace ehbt::minidump {
namespace {

const Stream* find(const std::vector<Stream>& streams, uint32_t type) {
  for (const Stream& s : streams) {
    if (s.type == type) return &s;  // the first of a kind, as other readers take it
  }
  return nullptr;
}

// One copy of each range: the stacks are usually in the memory list as well (sorted by
// start, the longer copy of a start first).
void sort_unique(std::vector<core::CoreSegment>& segs) {
  std::stable_sort(segs.begin(), segs.end(), [](const auto& a, const auto& b) {
    return a.vaddr != b.vaddr ? a.vaddr < b.vaddr : a.dumped.size() > b.dumped.size();
  });
  segs.erase(std::unique(segs.begin(), segs.end(),
                         [](const auto& a, const auto& b) { return a.vaddr == b.vaddr; }),
             segs.end());
}

}  // namespace

Expected<ParsedMinidump, std::string> parse_minidump(std::span<const std::byte> file,
                                                     const Limits& limits) {
  ParsedMinidump md;
  md.file_size = file.size();
  auto streams = read_directory(file, limits, md.expected_size);
  if (!streams) return unexpected(streams.error());

  const Stream* thread_list = find(*streams, kThreadListStream);
  if (thread_list == nullptr || thread_list->bytes.empty()) {
    return unexpected(std::string("the minidump has no thread list"));
  }
  if (const Stream* sys = find(*streams, kSystemInfoStream)) {
    auto arch = system_info_arch(sys->bytes);
    if (!arch) return unexpected(arch.error());
    md.arch = *arch;
  } else {
    // No system info: the first thread's context names its CPU.
    std::optional<Arch> arch;
    if (thread_list->bytes.size() >= 4 + kThreadSize) {
      core::ByteView v(thread_list->bytes, false);
      arch = context_arch(file_range(file, v.u32(4 + 44), v.u32(4 + 40)));
    }
    if (!arch) return unexpected(std::string("the minidump names no CPU the engine unwinds"));
    md.arch = *arch;
  }

  auto threads = read_thread_list(file, thread_list->bytes, md.arch, limits, md.memory);
  if (!threads) return unexpected(threads.error());
  md.threads = std::move(*threads);
  if (md.threads.empty()) {
    return unexpected(std::string("the minidump records no thread with registers"));
  }
  if (const Stream* s = find(*streams, kExceptionStream)) {
    md.exception = read_exception(file, s->bytes, md.arch);
  }
  if (const Stream* s = find(*streams, kMemoryListStream)) {
    read_memory_list(file, s->bytes, limits, md.memory, md.cut_ranges, md.expected_size);
  }
  if (const Stream* s = find(*streams, kMemory64ListStream)) {
    read_memory64_list(file, s->bytes, limits, md.memory, md.cut_ranges, md.expected_size);
  }
  sort_unique(md.memory);
  if (const Stream* s = find(*streams, kModuleListStream)) {
    md.modules = read_module_list(file, s->bytes, limits);
  }
  const unsigned word = arch_info(md.arch).address_size;
  if (const Stream* s = find(*streams, kLinuxAuxv)) md.auxv = read_auxv(s->bytes, word, limits);
  if (const Stream* s = find(*streams, kLinuxMaps)) md.maps = read_maps(s->bytes, limits);
  if (const Stream* s = find(*streams, kLinuxCmdLine)) md.cmdline = read_cmdline(s->bytes);
  if (const Stream* s = find(*streams, kLinuxProcStatus)) {
    md.process_name = read_status_name(s->bytes);
  }
  // LinuxDsoDebug (the dynamic linker's list) repeats the module list's names and bases;
  // LinuxCpuInfo, LinuxEnviron, MiscInfo and the rest say nothing a walk needs.
  return md;
}

}  // namespace ehbt::minidump
