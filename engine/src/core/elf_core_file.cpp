// SPDX-License-Identifier: Apache-2.0
// ELF core decoding: ELF64 or ELF32 header, program headers (PT_LOAD, PT_NOTE) and the CORE
// notes, whose words are the core's address size.
#include "core/elf_core_file.hpp"

#include <elf.h>

#include <algorithm>

#include "core/byte_order.hpp"

namespace ehbt::core {
namespace {

// struct elf_prpsinfo (64-bit): pr_fname[16] at 40, pr_psargs[80] at 56. i386 (4-byte
// pr_flag, 2-byte uid/gid): pr_fname at 28, pr_psargs at 44.
constexpr std::size_t kPsFname = 40;
constexpr std::size_t kPsFname32 = 28;
constexpr std::size_t kPsFnameLen = 16;
constexpr std::size_t kPsArgs = 56;
constexpr std::size_t kPsArgs32 = 44;
constexpr std::size_t kPsArgsLen = 80;
// pr_pid: after pr_flag, pr_uid and pr_gid (64-bit: 8 + 4 + 4 bytes; i386: 4 + 2 + 2).
constexpr std::size_t kPsPid = 24;
constexpr std::size_t kPsPid32 = 12;

// ELF32 header fields (Elf32_Ehdr) and Elf32_Shdr::sh_info; the ELF64 ones are used inline.
constexpr std::size_t kEh32Phoff = 28, kEh32Shoff = 32, kEh32Phentsize = 42, kEh32Phnum = 44,
                      kEh32Shentsize = 46;
constexpr std::size_t kSh32Info = 28, kSh64Info = 44;

// auxv entries kept: the kernel writes a few dozen (AT_VECTOR_SIZE is under 64).
constexpr std::size_t kMaxAuxvEntries = 1024;

bool note_name_is(std::span<const std::byte> name, std::string_view want) {
  // namesz counts the terminating NUL; tolerate producers that omit it.
  std::size_t n = name.size();
  while (n > 0 && name[n - 1] == std::byte{0}) --n;
  if (n != want.size()) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<char>(name[i]) != want[i]) return false;
  }
  return true;
}

// NT_FILE: count, page size, then `count` triples {start, end, page offset}, then the names;
// every number is one word of the core's address size `w`.
void parse_nt_file(ByteView d, unsigned w, CoreNotes& notes, uint32_t max_files) {
  uint64_t count = d.u(0, w);
  uint64_t page_size = d.u(w, w);
  if (!d.ok()) return;
  // Each entry needs a triple of words and at least one byte of name.
  if (count > (d.size() - 2 * w) / (3 * w + 1)) return;
  uint64_t names = 2 * w + count * 3 * w;
  uint64_t name_off = names;
  notes.has_file_note = true;
  for (uint64_t i = 0; i < count; ++i) {
    FileMapping m;
    const uint64_t at = 2 * w + i * 3 * w;
    m.start = d.u(at, w);
    m.end = d.u(at + w, w);
    uint64_t pages = d.u(at + 2 * w, w);
    if (!d.ok() || name_off >= d.size()) return;
    m.path = d.str(name_off, d.size() - name_off);
    name_off += m.path.size() + 1;
    // The file offset is recorded in pages; an overflowing product is nonsense: drop it.
    if (page_size != 0 && pages > UINT64_MAX / page_size) continue;
    m.offset = pages * page_size;
    if (m.end <= m.start) continue;
    if (notes.files.size() >= max_files) return;
    notes.files.push_back(std::move(m));
  }
}

void parse_note(Arch arch, bool be, uint32_t type, std::span<const std::byte> name,
                std::span<const std::byte> desc, const Limits& limits, CoreNotes& notes) {
  if (!note_name_is(name, "CORE")) return;
  ByteView d(desc, be);
  const unsigned w = arch_info(arch).address_size;
  const bool is32 = w == 4;
  switch (type) {
    case kNtPrstatus:
      if (notes.threads.size() >= limits.max_threads) break;
      if (auto st = decode_prstatus(arch, desc, be)) notes.threads.push_back(*st);
      break;
    case kNtPrpsinfo: {
      const std::size_t args = is32 ? kPsArgs32 : kPsArgs;
      if (desc.size() < args + kPsArgsLen) break;
      notes.has_prpsinfo = true;
      notes.fname = d.str(is32 ? kPsFname32 : kPsFname, kPsFnameLen);
      notes.psargs = d.str(args, kPsArgsLen);
      notes.pid = d.u32(is32 ? kPsPid32 : kPsPid);
      break;
    }
    case kNtSiginfo:
      if (!notes.siginfo) notes.siginfo = decode_siginfo(arch, desc, be);
      break;
    case kNtAuxv:
      // Entries of two words {tag, value}.
      if (!notes.auxv.empty()) break;
      for (uint64_t off = 0; off + 2 * w <= desc.size() && notes.auxv.size() < kMaxAuxvEntries;
           off += 2 * w) {
        uint64_t tag = d.u(off, w);
        if (tag == kAtNull) break;
        notes.auxv.emplace_back(tag, d.u(off + w, w));
      }
      break;
    case kNtFile:
      if (!notes.has_file_note && desc.size() >= 2 * w)
        parse_nt_file(d, w, notes, limits.max_file_mappings);
      break;
    default:
      break;
  }
}

// Calls fn(type, name, desc) for each note of one PT_NOTE segment, in order. A note whose
// sizes run past the segment ends the walk of that segment (nothing after it can be located).
// Each note takes at least 12 bytes, so the walk ends within seg.size() / 12 notes.
template <typename Fn>
void for_each_note(std::span<const std::byte> seg, bool be, Fn&& fn) {
  ByteView v(seg, be);
  uint64_t off = 0;
  while (off + 12 <= seg.size()) {
    uint64_t namesz = v.u32(off);
    uint64_t descsz = v.u32(off + 4);
    uint32_t type = v.u32(off + 8);
    uint64_t name_off = off + 12;
    uint64_t desc_off = align_up(name_off + namesz, 4);
    uint64_t next = align_up(desc_off + descsz, 4);
    if (desc_off > seg.size() || descsz > seg.size() - desc_off) return;
    fn(type, seg.subspan(name_off, namesz), seg.subspan(desc_off, descsz));
    if (next <= off) return;
    off = next;
  }
}

// Decodes the notes of one PT_NOTE segment; what was decoded before a bad note stays.
void parse_notes(Arch arch, bool be, std::span<const std::byte> seg, const Limits& limits,
                 CoreNotes& notes) {
  // The threads' room first: each holds a register set (~800 bytes), and growing the vector
  // note by note copies them all at every doubling into fresh memory, each page of it a
  // page fault (~50 KB more for a 33-thread core).
  uint64_t prstatus = 0;
  for_each_note(seg, be, [&](uint32_t type, auto, auto) { prstatus += type == kNtPrstatus; });
  const uint64_t room =
      limits.max_threads - std::min<uint64_t>(notes.threads.size(), limits.max_threads);
  notes.threads.reserve(notes.threads.size() + std::min(prstatus, room));
  for_each_note(seg, be, [&](uint32_t type, auto name, auto desc) {
    parse_note(arch, be, type, name, desc, limits, notes);
  });
}

}  // namespace

std::optional<uint64_t> auxv_value(const std::vector<std::pair<uint64_t, uint64_t>>& auxv,
                                   uint64_t tag) {
  for (const auto& [t, v] : auxv) {
    if (t == tag) return v;
  }
  return std::nullopt;
}

Expected<ParsedCore, std::string> parse_core(std::span<const std::byte> file,
                                             const Limits& limits) {
  if (file.empty()) return unexpected(std::string("empty file"));
  if (file.size() < 16 || file[0] != std::byte{0x7f} || file[1] != std::byte{'E'} ||
      file[2] != std::byte{'L'} || file[3] != std::byte{'F'}) {
    return unexpected(std::string("not an ELF file"));
  }
  if (file[4] != std::byte{ELFCLASS64} && file[4] != std::byte{ELFCLASS32}) {
    return unexpected(std::string("bad ELF class"));
  }
  const bool is64 = file[4] == std::byte{ELFCLASS64};
  if (file[5] != std::byte{1} && file[5] != std::byte{2}) {
    return unexpected(std::string("bad ELF byte order"));
  }
  ParsedCore core;
  core.big_endian = file[5] == std::byte{2};
  if (file.size() < (is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr))) {
    return unexpected(std::string("truncated ELF header"));
  }
  ByteView h(file, core.big_endian);
  uint16_t type = h.u16(16);
  uint16_t machine = h.u16(18);
  const uint64_t phoff = is64 ? h.u64(32) : h.u32(kEh32Phoff);
  const uint64_t shoff = is64 ? h.u64(40) : h.u32(kEh32Shoff);
  const uint16_t phentsize = h.u16(is64 ? 54 : kEh32Phentsize);
  uint64_t phnum = h.u16(is64 ? 56 : kEh32Phnum);
  const uint16_t shentsize = h.u16(is64 ? 58 : kEh32Shentsize);
  if (type != ET_CORE) {
    return unexpected("not a core file (ELF type " + std::to_string(type) + ")");
  }
  auto arch = arch_from_elf_machine(machine);
  if (!arch) return unexpected("unsupported core machine " + std::to_string(machine));
  // The class must be the architecture's: an ELFCLASS32 EM_S390 core is s390 (31-bit).
  if (arch_info(*arch).address_size != (is64 ? 8 : 4)) {
    return unexpected(std::string(is64 ? "64" : "32") + "-bit core of machine " +
                      std::to_string(machine) + " is not supported");
  }
  core.arch = *arch;
  const std::size_t shdr_size = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
  const std::size_t phdr_size = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  // More than 0xfffe program headers: the real count is in section header 0's sh_info.
  if (phnum == PN_XNUM) {
    if (shoff == 0 || shentsize < shdr_size || shoff > file.size() ||
        file.size() - shoff < shdr_size) {
      return unexpected(std::string("truncated section header 0 (PN_XNUM)"));
    }
    phnum = h.u32(shoff + (is64 ? kSh64Info : kSh32Info));
  }
  if (phentsize < phdr_size) return unexpected(std::string("bad program header size"));
  if (phnum == 0) return unexpected(std::string("no program headers"));
  if (phoff > file.size() || (file.size() - phoff) / phentsize < phnum) {
    return unexpected(std::string("truncated program headers"));
  }
  // Each PT_LOAD becomes a CoreSegment; real cores have one per mapping (vm.max_map_count,
  // 65530 by default), and the count is bounded by the file size checked above.
  bool saw_note = false;
  CoreTruncation& cut = core.truncation;
  cut.file_size = file.size();
  cut.expected_size = file.size();
  for (uint64_t i = 0; i < phnum; ++i) {
    const Phdr64 ph = read_phdr(h, phoff + i * phentsize, is64);
    // Bytes this segment should have that the file does not (an empty one has none).
    const bool past_end =
        ph.filesz != 0 && (ph.offset > file.size() || ph.filesz > file.size() - ph.offset);
    if (past_end && (ph.type == PT_NOTE || ph.type == PT_LOAD)) {
      uint64_t end = ph.offset + ph.filesz < ph.offset ? UINT64_MAX : ph.offset + ph.filesz;
      cut.expected_size = std::max(cut.expected_size, end);
    }
    if (ph.type == PT_NOTE) {
      saw_note = true;
      cut.notes_cut |= past_end;
      parse_notes(core.arch, core.big_endian, h.sub(ph.offset, ph.filesz), limits, core.notes);
    } else if (ph.type == PT_LOAD) {
      if (ph.memsz == 0 || ph.vaddr + ph.memsz < ph.vaddr) continue;
      if (past_end) ++cut.segments_cut;
      CoreSegment s;
      s.vaddr = ph.vaddr;
      s.memsz = ph.memsz;
      s.flags = ph.flags;
      s.dumped = h.sub(ph.offset, std::min(ph.filesz, ph.memsz));
      s.file_offset = ph.offset;
      core.segments.push_back(s);
    }
  }
  if (!saw_note) return unexpected(std::string("no PT_NOTE segment"));
  if (cut.notes_cut) {
    // The notes hold the threads, the signal and the file list; with their end lost, what
    // remains cannot be trusted to be the whole story (GDB and eu-stack refuse such a core).
    return unexpected("truncated core: " + std::to_string(cut.file_size) + " of " +
                      std::to_string(cut.expected_size) +
                      " bytes, its notes are cut off (nothing usable remains)");
  }
  if (core.notes.threads.empty())
    return unexpected(std::string("no threads (NT_PRSTATUS) in notes"));
  std::stable_sort(core.segments.begin(), core.segments.end(),
                   [](const CoreSegment& a, const CoreSegment& b) { return a.vaddr < b.vaddr; });
  mark_executable_mappings(core.notes.files, core.segments);
  return core;
}

void mark_executable_mappings(std::vector<FileMapping>& files,
                              const std::vector<CoreSegment>& segments) {
  for (FileMapping& f : files) {
    // The last segment starting at or below the mapping's start is the one holding it.
    auto it = std::upper_bound(segments.begin(), segments.end(), f.start,
                               [](uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
    if (it == segments.begin()) continue;
    --it;
    f.executable = f.start - it->vaddr < it->memsz && (it->flags & PF_X) != 0;
  }
}

}  // namespace ehbt::core
