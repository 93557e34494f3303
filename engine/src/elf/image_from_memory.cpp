// SPDX-License-Identifier: Apache-2.0
// Images rebuilt from target memory alone, the way the kernel's user unwinder finds unwind
// tables: ELF header -> program headers -> PT_GNU_EH_FRAME -> .eh_frame_hdr -> .eh_frame.
// Small images whose file layout equals their memory layout (the vDSO) are read whole and
// parsed as files, because their section headers are mapped too.
#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "elf/byte_view.hpp"
#include "elf/eh_frame_ptr.hpp"
#include "elf/image_impl.hpp"
#include "elf/notes.hpp"

namespace ehbt {
namespace {

using elf::load_uint;

// Images whose loadable span is below this are candidates for the whole-image read.
constexpr uint64_t kSmallImage = 1u << 20;
// Caps for pieces that are small in every real image.
constexpr uint64_t kMaxNoteBytes = 64u << 10;
constexpr uint64_t kMaxDynamicBytes = 1u << 20;

std::string hex_addr(uint64_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

struct Phdr {
  uint32_t type = 0, flags = 0;
  uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0;
};

// Reads up to `size` bytes at `addr`, stopping at the first fault, charged to `budget`.
std::vector<std::byte> read_prefix(Memory& mem, uint64_t addr, uint64_t size, uint64_t& budget) {
  std::vector<std::byte> out = ehbt::read_prefix(mem, addr, std::min(size, budget));
  budget -= out.size();
  return out;
}

// Exactly `size` bytes at `addr`, or nothing.
std::optional<std::vector<std::byte>> read_all(Memory& mem, uint64_t addr, uint64_t size,
                                               uint64_t& budget) {
  if (size > budget) return std::nullopt;
  auto bytes = read_prefix(mem, addr, size, budget);
  if (bytes.size() != size) return std::nullopt;
  return bytes;
}

}  // namespace

Expected<std::shared_ptr<Image>, std::string> Image::from_memory(Memory& mem, uint64_t load_addr,
                                                                 std::string name,
                                                                 const Limits& limits) {
  return ImageLoader::from_memory(mem, load_addr, std::move(name), limits);
}

ImageLoader::Result ImageLoader::from_memory(Memory& mem, uint64_t load_addr, std::string name,
                                             const Limits& limits) {
  std::byte ehdr_buf[sizeof(Elf64_Ehdr)] = {};
  const std::span<const std::byte> ehdr(ehdr_buf);
  if (!mem.read_exact(load_addr, std::span(ehdr_buf, EI_NIDENT)))
    return unexpected("cannot read ELF header at " + hex_addr(load_addr));
  if (std::memcmp(ehdr_buf, ELFMAG, SELFMAG) != 0)
    return unexpected("not an ELF image at " + hex_addr(load_addr));
  const unsigned cls = std::to_integer<unsigned>(ehdr_buf[EI_CLASS]);
  const unsigned data = std::to_integer<unsigned>(ehdr_buf[EI_DATA]);
  if (cls != ELFCLASS32 && cls != ELFCLASS64)
    return unexpected("unsupported ELF class " + std::to_string(cls));
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return unexpected("unsupported ELF byte order " + std::to_string(data));
  const bool is64 = cls == ELFCLASS64;
  const bool be = data == ELFDATA2MSB;
  const std::size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (!mem.read_exact(load_addr, std::span(ehdr_buf, ehsize)))
    return unexpected("cannot read ELF header at " + hex_addr(load_addr));

  // Field offsets differ between the classes only after e_entry.
  const unsigned w = is64 ? 8 : 4;
  auto u = [&](uint64_t off, unsigned size) { return load_uint(ehdr, off, size, be).value_or(0); };
  const uint16_t e_type = static_cast<uint16_t>(u(16, 2));
  const uint16_t e_machine = static_cast<uint16_t>(u(18, 2));
  const uint64_t e_entry = u(24, w);
  const uint64_t e_phoff = u(24 + w, w);
  const uint64_t e_shoff = u(24 + 2 * w, w);
  const uint64_t tail = 24 + 3 * w + 4;  // e_flags precedes e_ehsize
  const uint16_t e_phentsize = static_cast<uint16_t>(u(tail + 2, 2));
  const uint16_t e_phnum = static_cast<uint16_t>(u(tail + 4, 2));
  const uint16_t e_shentsize = static_cast<uint16_t>(u(tail + 6, 2));
  const uint16_t e_shnum = static_cast<uint16_t>(u(tail + 8, 2));

  auto arch = arch_from_elf_machine(e_machine);
  if (!arch) return unexpected("unsupported machine " + std::to_string(e_machine));
  const std::size_t phentsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (e_phnum == 0) return unexpected(std::string("no program headers"));
  if (e_phnum == PN_XNUM) return unexpected(std::string("unsupported program header count"));
  if (e_phnum > limits.max_program_headers)
    return unexpected("too many program headers " + std::to_string(e_phnum));
  if (e_phentsize != phentsize)
    return unexpected("bad program header entry size " + std::to_string(e_phentsize));

  uint64_t budget = limits.max_image_bytes;
  const uint64_t ph_addr = load_addr + e_phoff;
  if (ph_addr < load_addr) return unexpected(std::string("truncated program headers"));
  auto ph_bytes = read_all(mem, ph_addr, uint64_t{e_phnum} * phentsize, budget);
  if (!ph_bytes) return unexpected("cannot read program headers at " + hex_addr(ph_addr));

  std::vector<Phdr> phdrs;
  for (unsigned i = 0; i < e_phnum; ++i) {
    const std::span<const std::byte> p =
        std::span<const std::byte>(*ph_bytes).subspan(i * phentsize, phentsize);
    auto f = [&](uint64_t off, unsigned size) { return load_uint(p, off, size, be).value_or(0); };
    Phdr ph;
    ph.type = static_cast<uint32_t>(f(0, 4));
    if (is64) {
      ph.flags = static_cast<uint32_t>(f(4, 4));
      ph.offset = f(8, 8), ph.vaddr = f(16, 8), ph.filesz = f(32, 8), ph.memsz = f(40, 8);
      ph.align = f(48, 8);
    } else {
      ph.offset = f(4, 4), ph.vaddr = f(8, 4), ph.filesz = f(16, 4), ph.memsz = f(20, 4);
      ph.flags = static_cast<uint32_t>(f(24, 4)), ph.align = f(28, 4);
    }
    phdrs.push_back(ph);
  }

  std::shared_ptr<Image> img = make(limits);
  img->name_ = name;
  img->arch_ = *arch;
  img->big_endian_ = be;
  img->address_size_ = static_cast<uint8_t>(w);
  img->elf_type_ = e_type;
  img->entry_ = e_entry;
  bool have_load = false;
  uint64_t lowest = 0, lowest_align = 0, highest = 0;
  bool file_layout = true;  // every PT_LOAD sits at the same offset in file and memory
  for (const Phdr& ph : phdrs) {
    if (ph.type != PT_LOAD) continue;
    img->segments_.push_back(Segment{ph.vaddr, ph.memsz, ph.offset, ph.filesz, ph.flags});
    if (!have_load || ph.vaddr < lowest) lowest = ph.vaddr, lowest_align = ph.align;
    highest = std::max(highest, elf::checked_add(ph.vaddr, ph.memsz).value_or(UINT64_MAX));
    have_load = true;
  }
  if (!have_load) return unexpected(std::string("no loadable segments"));
  img->min_vaddr_ = elf::load_base(lowest, lowest_align);
  const uint64_t bias = load_addr - img->min_vaddr_;
  for (const Segment& s : img->segments_) {
    if (s.vaddr - img->min_vaddr_ != s.offset || s.filesz != s.memsz) file_layout = false;
  }

  // The vDSO case: a small image mapped whole, section headers included.
  const uint64_t span = highest - img->min_vaddr_;
  const uint64_t shdr_size = uint64_t{e_shnum} * e_shentsize;
  if (file_layout && span < kSmallImage && e_shnum > 0 && e_shoff < kSmallImage &&
      shdr_size < kSmallImage) {
    const uint64_t want = std::max(span, e_shoff + shdr_size);
    uint64_t trial_budget = budget;
    if (auto whole = read_all(mem, load_addr, want, trial_budget)) {
      auto full = Image::from_bytes(std::move(*whole), name, limits);
      if (full && !(*full)->eh_frame_hdr().empty()) return full;
    }
  }

  Image::Impl& im = *img->impl_;
  im.pieces.reserve(8);
  // Stores a piece read at link-time `link` and returns its bytes.
  auto keep = [&](uint64_t link, std::vector<std::byte> bytes) -> std::span<const std::byte> {
    if (bytes.empty()) return {};
    im.pieces.emplace_back(link, std::move(bytes));
    return im.pieces.back().second;
  };
  auto segment_end = [&](uint64_t link) -> std::optional<uint64_t> {
    for (const Segment& s : img->segments_) {
      if (link >= s.vaddr && link - s.vaddr < s.memsz) return s.vaddr + s.memsz;
    }
    return std::nullopt;
  };

  for (const Phdr& ph : phdrs) {
    if (ph.type == PT_GNU_EH_FRAME && img->eh_frame_hdr_.empty()) {
      img->eh_frame_hdr_ =
          SectionRef{ph.vaddr, keep(ph.vaddr, read_prefix(mem, ph.vaddr + bias, ph.memsz, budget))};
    }
  }
  if (!img->eh_frame_hdr_.empty()) {
    auto addr = elf::decode_eh_frame_ptr(img->eh_frame_hdr_.bytes, img->eh_frame_hdr_.addr, be,
                                         img->address_size_);
    auto end = addr ? segment_end(*addr) : std::nullopt;
    if (addr && end) {
      img->eh_frame_ =
          SectionRef{*addr, keep(*addr, read_prefix(mem, *addr + bias, *end - *addr, budget))};
    }
  }
  for (const Phdr& ph : phdrs) {
    if (ph.type == PT_NOTE && img->build_id_.empty()) {
      auto notes = read_prefix(mem, ph.vaddr + bias, std::min(ph.memsz, kMaxNoteBytes), budget);
      img->build_id_ = elf::find_build_id(notes, be, ph.align);
    } else if (ph.type == PT_DYNAMIC && img->dynamic_.empty()) {
      img->dynamic_ = SectionRef{
          ph.vaddr, keep(ph.vaddr, read_prefix(mem, ph.vaddr + bias,
                                               std::min(ph.memsz, kMaxDynamicBytes), budget))};
    } else if (ph.type == elf::kPtGnuSframe && img->sframe_.empty()) {
      img->sframe_ =
          SectionRef{ph.vaddr, keep(ph.vaddr, read_prefix(mem, ph.vaddr + bias, ph.memsz, budget))};
    }
  }
  return img;
}

}  // namespace ehbt
