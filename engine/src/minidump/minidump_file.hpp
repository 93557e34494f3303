// SPDX-License-Identifier: Apache-2.0
// A minidump (MDMP) decoded: what the writer (Crashpad, Breakpad, LLDB) recorded of a
// process -- threads with registers, the exception (the signal on Linux), the memory it kept
// (stacks, a little around pointers), the module list with build-ids and the Linux streams.
// Knows nothing of files or modules on this machine: minidump_target.cpp does that.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/elf_core_file.hpp"
#include "ehbt/arch.hpp"
#include "ehbt/core.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::minidump {

// One directory entry. `bytes` is the stream's data, cut to what the file holds.
struct Stream {
  uint32_t type = 0;
  uint32_t rva = 0;
  uint32_t size = 0;  // as the directory says
  std::span<const std::byte> bytes;
};

// MINIDUMP_EXCEPTION_STREAM on Linux: Breakpad and Crashpad put the signal number in
// ExceptionCode, si_code in ExceptionFlags and si_addr in ExceptionAddress.
struct ExceptionRecord {
  uint32_t tid = 0;
  uint32_t code = 0;
  uint32_t flags = 0;
  uint64_t address = 0;
  std::optional<RegisterSet> context;  // the registers at the signal, when recorded
};

// A module as the module list names it. The build-id is in hex; `guid_only` when the writer
// kept only a GUID made of its first 16 bytes (PDB70), so only those can be compared.
struct ModuleRecord {
  uint64_t base = 0;
  uint64_t size = 0;
  std::string name;
  std::string build_id;
  bool guid_only = false;
};

struct ParsedMinidump {
  Arch arch = Arch::X86_64;
  std::vector<ThreadState> threads;  // in the thread list's order
  std::optional<ExceptionRecord> exception;
  // The memory the writer kept, as core segments (vaddr, bytes, offset in the file).
  std::vector<core::CoreSegment> memory;
  std::vector<ModuleRecord> modules;
  std::vector<std::pair<uint64_t, uint64_t>> auxv;  // LinuxAuxv
  std::vector<core::FileMapping> maps;              // LinuxMaps
  std::string cmdline;                              // LinuxCmdLine, arguments joined by spaces
  std::string process_name;                         // LinuxProcStatus "Name:"
  // What the file lacks: the size the directory and descriptors promise against the file's.
  uint64_t file_size = 0;
  uint64_t expected_size = 0;
  uint32_t cut_ranges = 0;  // memory ranges whose bytes run past the end of the file
  bool truncated() const { return expected_size > file_size; }
};

// Whether `head` starts with the minidump signature.
bool is_minidump(std::span<const std::byte> head);

// Decodes a whole minidump. Unusable input (no signature, a directory past the end, no
// thread list, an unknown CPU, no thread) gives a one-line reason; streams and ranges cut
// by truncation keep what is there (ParsedMinidump says how much is missing); unknown
// streams are skipped.
Expected<ParsedMinidump, std::string> parse_minidump(std::span<const std::byte> file,
                                                     const Limits& limits);

// ---- the pieces, one file each ----------------------------------------------------------

// The header and the stream directory, each entry checked against the file.
Expected<std::vector<Stream>, std::string> read_directory(std::span<const std::byte> file,
                                                          const Limits& limits,
                                                          uint64_t& expected_size);

// Where a list's records start after its count: writers that align records to 8 bytes put
// 4 bytes of padding after a 4-byte count (the stream is then 4 bytes longer than needed).
uint64_t list_start(uint64_t stream_size, uint64_t count, uint64_t record);

// Bytes [rva, rva + size) of the file, cut to what it holds (empty past its end).
std::span<const std::byte> file_range(std::span<const std::byte> file, uint64_t rva, uint64_t size);

// The CPU from MINIDUMP_SYSTEM_INFO; nothing for a CPU the engine does not unwind.
Expected<Arch, std::string> system_info_arch(std::span<const std::byte> stream);
// The CPU a thread context's flags name (when there is no system info).
std::optional<Arch> context_arch(std::span<const std::byte> context);
// The registers a walk starts from, out of a CONTEXT_AMD64, an ARM64 context (Windows',
// Crashpad's and Breakpad's current one, Breakpad's older one, LLDB's: the general
// registers, sp and pc are at the same offsets in all) or a CONTEXT_X86.
std::optional<RegisterSet> decode_context(Arch arch, std::span<const std::byte> context);

Expected<std::vector<ThreadState>, std::string> read_thread_list(
    std::span<const std::byte> file, std::span<const std::byte> stream, Arch arch,
    const Limits& limits, std::vector<core::CoreSegment>& stacks);
std::optional<ExceptionRecord> read_exception(std::span<const std::byte> file,
                                              std::span<const std::byte> stream, Arch arch);
// MemoryListStream and Memory64ListStream: ranges appended to `out`; `cut` counts those the
// file ends in, `expected_size` grows to the end of the last one's bytes.
void read_memory_list(std::span<const std::byte> file, std::span<const std::byte> stream,
                      const Limits& limits, std::vector<core::CoreSegment>& out, uint32_t& cut,
                      uint64_t& expected_size);
void read_memory64_list(std::span<const std::byte> file, std::span<const std::byte> stream,
                        const Limits& limits, std::vector<core::CoreSegment>& out, uint32_t& cut,
                        uint64_t& expected_size);
std::vector<ModuleRecord> read_module_list(std::span<const std::byte> file,
                                           std::span<const std::byte> stream, const Limits& limits);
// A MINIDUMP_STRING (UTF-16LE, length in bytes) at `rva`, as UTF-8; nothing when it leaves
// the file.
std::optional<std::string> read_string(std::span<const std::byte> file, uint64_t rva);

// Linux streams.
std::vector<std::pair<uint64_t, uint64_t>> read_auxv(std::span<const std::byte> stream,
                                                     unsigned word, const Limits& limits);
std::vector<core::FileMapping> read_maps(std::span<const std::byte> stream, const Limits& limits);
std::string read_cmdline(std::span<const std::byte> stream);
std::string read_status_name(std::span<const std::byte> stream);

}  // namespace ehbt::minidump
