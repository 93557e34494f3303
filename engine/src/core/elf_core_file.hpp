// SPDX-License-Identifier: Apache-2.0
// The ELF core format itself: header, program headers and notes of a core mapped in memory,
// decoded with the core's own byte order. Knows nothing of modules or files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/prstatus.hpp"
#include "core/siginfo.hpp"
#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::core {

// One PT_LOAD: [vaddr, vaddr + memsz) was mapped; only `dumped` (the first filesz bytes that
// really are in the file) has contents. The rest must come from the module's file.
struct CoreSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint32_t flags = 0;
  std::span<const std::byte> dumped;
  uint64_t file_offset = 0;  // where `dumped` starts in the core file
};

// One NT_FILE entry: [start, end) maps `path` from byte `offset`.
struct FileMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string path;
  // Mapped with execute permission: 'x' in /proc/PID/maps; for a core, set from the PF_X of
  // the PT_LOAD holding it (mark_executable_mappings), NT_FILE itself carries no permissions.
  bool executable = false;
};

// Sets FileMapping::executable from the core's segments (sorted by vaddr).
void mark_executable_mappings(std::vector<FileMapping>& files,
                              const std::vector<CoreSegment>& segments);

struct CoreNotes {
  std::vector<PrStatus> threads;  // NT_PRSTATUS, in note order
  std::optional<SigInfoNote> siginfo;
  bool has_prpsinfo = false;
  std::string fname;   // pr_fname: at most 16 bytes of the executable's name
  std::string psargs;  // pr_psargs: the start of the command line
  uint32_t pid = 0;    // pr_pid: the process id (0: no NT_PRPSINFO)
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
  bool has_file_note = false;
  std::vector<FileMapping> files;
};

// How much of the core is missing: what its program headers promise against the file's size.
struct CoreTruncation {
  uint64_t file_size = 0;
  uint64_t expected_size = 0;  // the end of the last segment's bytes; > file_size when cut
  uint64_t segments_cut = 0;   // PT_LOADs whose dumped bytes run past the end of the file
  bool notes_cut = false;      // a PT_NOTE runs past the end (its last notes are lost)
  bool cut() const { return expected_size > file_size; }
};

struct ParsedCore {
  Arch arch = Arch::X86_64;
  bool big_endian = false;
  std::vector<CoreSegment> segments;  // sorted by vaddr
  CoreNotes notes;
  CoreTruncation truncation;
};

// Decodes a whole core image. Unusable input (not ELF, not ET_CORE, unsupported class or
// machine, truncated headers, notes cut off by truncation, no notes, no thread) gives a
// one-line reason. Malformed individual notes are skipped; segments cut off by truncation
// keep the bytes that are there (ParsedCore::truncation says how much is missing).
Expected<ParsedCore, std::string> parse_core(std::span<const std::byte> file, const Limits& limits);

// Note types and auxv tags used here (values from <elf.h>, repeated so the decoder does not
// depend on the host's headers).
inline constexpr uint32_t kNtPrstatus = 1;
inline constexpr uint32_t kNtPrpsinfo = 3;
inline constexpr uint32_t kNtAuxv = 6;
inline constexpr uint32_t kNtSiginfo = 0x53494749;
inline constexpr uint32_t kNtFile = 0x46494c45;

inline constexpr uint64_t kAtNull = 0;
inline constexpr uint64_t kAtPhdr = 3;
inline constexpr uint64_t kAtPhnum = 5;
inline constexpr uint64_t kAtPagesz = 6;
inline constexpr uint64_t kAtBase = 7;
inline constexpr uint64_t kAtEntry = 9;
inline constexpr uint64_t kAtExecfn = 31;
inline constexpr uint64_t kAtSysinfoEhdr = 33;

// The value of an auxv tag, if present.
std::optional<uint64_t> auxv_value(const std::vector<std::pair<uint64_t, uint64_t>>& auxv,
                                   uint64_t tag);

}  // namespace ehbt::core
