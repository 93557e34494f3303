// SPDX-License-Identifier: Apache-2.0
// Decoding ELF64 and ELF32 headers, program headers and notes out of target memory.
#include "core/target_elf.hpp"

#include <elf.h>

#include <algorithm>

#include "core/byte_order.hpp"
#include "util/hex.hpp"

namespace ehbt::core {
namespace {

// A note segment bigger than this is not a real one; build-id notes are ~36 bytes.
constexpr uint64_t kMaxNoteBytes = 64 * 1024;
// Build-ids are 16 (md5/uuid) or 20 (sha1) bytes; accept up to 64.
constexpr uint64_t kMaxBuildIdBytes = 64;

// Reads `count` program headers at `addr`, `entsize` bytes apart, one at a time: only the
// 56 (ELF32: 32) bytes of each that are decoded are ever held, so a header that claims 65535
// entries of 65535 bytes costs nothing before its first unreadable entry. False when one
// cannot be read or no PT_LOAD was found.
bool read_phdrs(Memory& mem, uint64_t addr, uint64_t count, uint64_t entsize, TargetElf& elf) {
  const bool is64 = elf.address_size == 8;
  for (uint64_t i = 0; i < count; ++i) {
    std::byte buf[sizeof(Elf64_Phdr)];
    const std::span<std::byte> one(buf, is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr));
    const uint64_t at = addr + i * entsize;
    if (at < addr || !mem.read_exact(at, one)) return false;
    ByteView v(one, elf.big_endian);
    const Phdr64 ph = read_phdr(v, 0, is64);
    switch (ph.type) {
      case PT_LOAD:
        if (ph.memsz != 0 && ph.vaddr + ph.memsz > ph.vaddr) {
          elf.loads.push_back(Segment{ph.vaddr, ph.memsz, ph.offset, ph.filesz, ph.flags});
        }
        break;
      case PT_DYNAMIC:
        elf.dynamic_vaddr = ph.vaddr;
        elf.dynamic_size = ph.memsz;
        break;
      case PT_INTERP:
        elf.interp_vaddr = ph.vaddr;
        elf.interp_offset = ph.offset;
        elf.interp_size = ph.filesz;
        break;
      case PT_NOTE:
        elf.notes.push_back(NoteRange{ph.vaddr, ph.offset, ph.filesz, ph.align == 8 ? 8u : 4u});
        break;
      case PT_PHDR:
        elf.phdr_vaddr = ph.vaddr;
        break;
      default:
        break;
    }
  }
  std::sort(elf.loads.begin(), elf.loads.end(),
            [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
  return !elf.loads.empty();
}

}  // namespace

uint64_t TargetElf::header_vaddr() const {
  if (loads.empty()) return 0;
  const Segment& first = loads.front();
  // The first segment maps file offset PAGESTART(offset); for the usual offset-0 segment the
  // header sits at its vaddr. Segments whose offset exceeds their vaddr are inconsistent.
  return first.offset <= first.vaddr ? first.vaddr - first.offset : first.vaddr;
}

std::pair<uint64_t, uint64_t> TargetElf::load_range(uint64_t page_size) const {
  if (loads.empty()) return {0, 0};
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Segment& s : loads) {
    lo = std::min(lo, s.vaddr);
    hi = std::max(hi, s.vaddr + s.memsz);
  }
  if (page_size != 0 && (page_size & (page_size - 1)) == 0) lo &= ~(page_size - 1);
  return {lo, hi};
}

std::optional<TargetElf> read_target_elf(Memory& mem, uint64_t addr, bool big_endian,
                                         uint8_t address_size, uint32_t max_phdrs) {
  if (address_size != 4 && address_size != 8) return std::nullopt;
  const bool is64 = address_size == 8;
  std::byte buf[sizeof(Elf64_Ehdr)];
  const std::span<std::byte> ehdr(buf, is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr));
  if (!mem.read_exact(addr, ehdr)) return std::nullopt;
  const std::byte cls{static_cast<unsigned char>(is64 ? ELFCLASS64 : ELFCLASS32)};
  if (ehdr[0] != std::byte{0x7f} || ehdr[1] != std::byte{'E'} || ehdr[2] != std::byte{'L'} ||
      ehdr[3] != std::byte{'F'} || ehdr[4] != cls) {
    return std::nullopt;
  }
  if (ehdr[5] != std::byte{static_cast<unsigned char>(big_endian ? 2 : 1)}) return std::nullopt;
  ByteView h(ehdr, big_endian);
  TargetElf elf;
  elf.big_endian = big_endian;
  elf.address_size = address_size;
  elf.type = h.u16(16);
  elf.machine = h.u16(18);
  // Elf32_Ehdr: e_entry 24, e_phoff 28, e_phentsize 42, e_phnum 44.
  elf.entry = is64 ? h.u64(24) : h.u32(24);
  const uint64_t phoff = is64 ? h.u64(32) : h.u32(28);
  const uint16_t entsize = h.u16(is64 ? 54 : 42);
  const uint16_t phnum = h.u16(is64 ? 56 : 44);
  const std::size_t phdr_size = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (entsize < phdr_size || phnum == 0 || phnum == PN_XNUM || phnum > max_phdrs) {
    return std::nullopt;
  }
  if (addr + phoff < addr) return std::nullopt;
  if (!read_phdrs(mem, addr + phoff, phnum, entsize, elf)) return std::nullopt;
  return elf;
}

std::optional<TargetElf> read_target_phdrs(Memory& mem, uint64_t addr, uint64_t count,
                                           bool big_endian, uint8_t address_size,
                                           uint32_t max_phdrs) {
  if (address_size != 4 && address_size != 8) return std::nullopt;
  if (count == 0 || count >= PN_XNUM || count > max_phdrs) return std::nullopt;
  TargetElf elf;
  elf.big_endian = big_endian;
  elf.address_size = address_size;
  const std::size_t phdr_size = address_size == 8 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (!read_phdrs(mem, addr, count, phdr_size, elf)) return std::nullopt;
  return elf;
}

namespace {

// Scans the notes in `buf` for NT_GNU_BUILD_ID.
std::string build_id_in(std::span<const std::byte> buf, bool big_endian, uint64_t align) {
  ByteView v(buf, big_endian);
  uint64_t off = 0;
  while (off + 12 <= buf.size()) {
    uint64_t namesz = v.u32(off);
    uint64_t descsz = v.u32(off + 4);
    uint32_t type = v.u32(off + 8);
    uint64_t desc_off = align_up(off + 12 + namesz, align);
    uint64_t next = align_up(desc_off + descsz, align);
    if (desc_off > buf.size() || descsz > buf.size() - desc_off) break;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && v.str(off + 12, 4) == "GNU" && descsz > 0 &&
        descsz <= kMaxBuildIdBytes) {
      return util::bytes_hex(v.sub(desc_off, descsz));
    }
    if (next <= off) break;
    off = next;
  }
  return {};
}

std::string read_note_build_id(Memory& mem, const NoteRange& n, uint64_t addr, bool big_endian) {
  if (n.size < 12 || n.size > kMaxNoteBytes) return {};
  std::vector<std::byte> buf(n.size);
  if (!mem.read_exact(addr, buf)) return {};
  return build_id_in(buf, big_endian, n.align);
}

}  // namespace

std::string read_build_id(Memory& mem, const TargetElf& elf, uint64_t bias) {
  for (const NoteRange& n : elf.notes) {
    std::string id = read_note_build_id(mem, n, bias + n.vaddr, elf.big_endian);
    if (!id.empty()) return id;
  }
  return {};
}

std::string read_build_id_at_offsets(Memory& mem, const TargetElf& elf, uint64_t offset0,
                                     uint64_t file_limit) {
  for (const NoteRange& n : elf.notes) {
    if (n.offset > file_limit || n.size > file_limit - n.offset) continue;
    std::string id = read_note_build_id(mem, n, offset0 + n.offset, elf.big_endian);
    if (!id.empty()) return id;
  }
  return {};
}

std::optional<std::string> read_c_string(Memory& mem, uint64_t addr, std::size_t max_len) {
  std::string out;
  std::byte chunk[64];
  while (out.size() < max_len) {
    std::size_t want = std::min(sizeof chunk, max_len - out.size());
    // A string may end just before unreadable memory: take what a short read gives.
    std::size_t got = mem.read(addr + out.size(), std::span(chunk, want));
    if (got == 0) return std::nullopt;
    for (std::size_t i = 0; i < got; ++i) {
      if (chunk[i] == std::byte{0}) return out;
      out.push_back(static_cast<char>(chunk[i]));
    }
  }
  return std::nullopt;
}

}  // namespace ehbt::core
