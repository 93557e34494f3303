// SPDX-License-Identifier: Apache-2.0
// Images from ELF files: Image::open (a read-only mapping) and Image::from_bytes (an owned
// buffer), both parsed with libelf. Section bytes handed out are always raw file bytes; the
// DWARF layer decodes byte order itself.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "elf/byte_view.hpp"
#include "elf/eh_frame_ptr.hpp"
#include "elf/image_impl.hpp"
#include "elf/notes.hpp"
#include "util/regular_file.hpp"

namespace ehbt {
namespace {

using elf::in_bounds;
using elf::slice;

std::string libelf_error(std::string_view what) {
  const char* msg = elf_errmsg(-1);
  return std::string(what) + ": " + (msg != nullptr ? msg : "unknown libelf error");
}

// The file bytes behind link-time [addr, addr + size) when they lie in one PT_LOAD's
// file-backed part; size == UINT64_MAX means "to the end of that part".
std::span<const std::byte> load_bytes(const std::vector<Segment>& segments,
                                      std::span<const std::byte> file, uint64_t addr,
                                      uint64_t size) {
  const Segment* s = elf::file_segment_at(segments, addr);
  if (s == nullptr) return {};
  uint64_t off_in_seg = addr - s->vaddr;
  uint64_t avail = s->filesz - off_in_seg;
  if (size == UINT64_MAX) size = avail;
  if (size > avail) return {};
  auto start = elf::checked_add(s->offset, off_in_seg);
  if (!start) return {};
  return slice(file, *start, size);
}

// What the section headers said about the pieces the unwinder needs.
struct SectionFacts {
  bool has_eh_frame_hdr = false, has_eh_frame = false, has_sframe = false, has_dynamic = false;
  std::vector<std::pair<std::span<const std::byte>, uint64_t>> notes;  // bytes, alignment
  std::vector<std::pair<std::span<const std::byte>, uint64_t>> build_id_notes;
};

// Deflate cannot expand a stream more than about 1032 times (258-byte matches coded in two
// bits): a stated size beyond that is a lie, and believing it would allocate it.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Decompresses a SHF_COMPRESSED (or GNU .zdebug) zlib section into `out`, straight from the
// file's bytes. libdeflate rather than libelf's zlib: a Go binary's .debug_frame is inflated
// on every run that unwinds it, and zlib took about a third of such a run (1.1 M of 2.9 M
// instructions for go.core, where libdeflate takes a third of that); libelf also inflated
// into a buffer of its own that was then copied. Leaves `out` empty when the header is not
// one of those two, the stated size exceeds the cap or what the compressed bytes could
// possibly hold, or the stream does not inflate to exactly the stated size (checksum
// included).
void decompress_section(Elf_Scn* scn, bool elf64, bool gnu_style, std::span<const std::byte> raw,
                        uint64_t cap, std::vector<std::byte>& out) {
  out.clear();
  cap = std::min(cap, uint64_t{raw.size()} * kMaxDeflateRatio);
  uint64_t size = 0;
  std::size_t header = 0;
  if (gnu_style) {
    // "ZLIB" then the uncompressed size as a big-endian 64-bit number.
    if (raw.size() < 12 || std::memcmp(raw.data(), "ZLIB", 4) != 0) return;
    auto stated = elf::load_uint(raw, 4, 8, true);
    if (!stated) return;
    size = *stated;
    header = 12;
  } else {
    // The compression header as libelf reads it (class and byte order); the stream follows it.
    GElf_Chdr chdr;
    if (gelf_getchdr(scn, &chdr) == nullptr || chdr.ch_type != ELFCOMPRESS_ZLIB) return;
    header = elf64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
    if (raw.size() < header) return;
    size = chdr.ch_size;
  }
  if (size == 0 || size > cap) return;
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == nullptr) return;
  out.resize(static_cast<std::size_t>(size));
  const libdeflate_result r = libdeflate_zlib_decompress(
      d, raw.data() + header, raw.size() - header, out.data(), out.size(), nullptr);
  libdeflate_free_decompressor(d);
  if (r != LIBDEFLATE_SUCCESS) out.clear();
}

// .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, then the CRC-32 of the
// debug file in the object's byte order. Left empty when malformed.
void read_debuglink(std::span<const std::byte> raw, bool big_endian, std::string& name,
                    uint32_t& crc) {
  if (raw.empty()) return;  // also no data pointer at all (a section outside the file)
  const auto* p = reinterpret_cast<const char*>(raw.data());
  const std::size_t len = strnlen(p, raw.size());
  const std::size_t crc_at = (len + 4) & ~std::size_t{3};
  if (len == 0 || len == raw.size() || crc_at + 4 > raw.size()) return;
  auto value = elf::load_uint(raw, crc_at, 4, big_endian);
  if (!value) return;
  name.assign(p, len);
  crc = static_cast<uint32_t>(*value);
}

}  // namespace

namespace elf {

bool libelf_ready() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  return ok;
}

uint64_t load_base(uint64_t vaddr, uint64_t align) {
  bool pow2 = align > 1 && (align & (align - 1)) == 0;
  uint64_t a = pow2 ? align : kPageSize;
  return vaddr & ~(a - 1);
}

const Segment* file_segment_at(const std::vector<Segment>& segments, uint64_t addr) {
  for (const Segment& s : segments) {
    if (addr >= s.vaddr && addr - s.vaddr < s.filesz) return &s;
  }
  return nullptr;
}

}  // namespace elf

Expected<void, std::string> ImageLoader::parse_file(Image& img, int fd) {
  Image::Impl& im = *img.impl_;
  const std::span<const std::byte> file = im.file;

  if (file.empty()) return unexpected(std::string("empty file"));
  if (file.size() < EI_NIDENT || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0)
    return unexpected(std::string("not an ELF file"));
  const unsigned cls = std::to_integer<unsigned>(file[EI_CLASS]);
  const unsigned data = std::to_integer<unsigned>(file[EI_DATA]);
  if (cls != ELFCLASS32 && cls != ELFCLASS64)
    return unexpected("unsupported ELF class " + std::to_string(cls));
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return unexpected("unsupported ELF byte order " + std::to_string(data));
  if (file.size() < (cls == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
    return unexpected(std::string("truncated ELF header"));
  if (!elf::libelf_ready()) return unexpected(std::string("libelf unavailable"));

  Elf* e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, nullptr)
                   : elf_memory(reinterpret_cast<char*>(im.owned.data()), im.owned.size());
  if (e == nullptr) return unexpected(libelf_error("cannot parse ELF"));
  im.elf.elf = e;
  // Everything libelf needs is mapped now; the caller may close the descriptor.
  if (fd >= 0) elf_cntl(e, ELF_C_FDREAD);
  if (elf_kind(e) != ELF_K_ELF) return unexpected(std::string("not an ELF file"));

  GElf_Ehdr eh;
  if (gelf_getehdr(e, &eh) == nullptr) return unexpected(libelf_error("bad ELF header"));
  auto arch = arch_from_elf_machine(eh.e_machine);
  if (!arch) return unexpected("unsupported machine " + std::to_string(eh.e_machine));
  img.arch_ = *arch;
  img.big_endian_ = data == ELFDATA2MSB;
  img.address_size_ = cls == ELFCLASS64 ? 8 : 4;
  img.elf_type_ = eh.e_type;
  img.entry_ = eh.e_entry;

  // Program headers: checked against the file before libelf touches them.
  // PN_XNUM defers the real count to section 0, which libelf reads (and validates).
  std::size_t phnum = eh.e_phnum;
  if (eh.e_phnum == PN_XNUM && elf_getphdrnum(e, &phnum) != 0)
    return unexpected(std::string("bad program header count"));
  std::optional<GElf_Phdr> eh_frame_seg, sframe_seg, dynamic_seg;
  std::vector<GElf_Phdr> note_segs;
  if (phnum > 0) {
    const std::size_t entsize = gelf_fsize(e, ELF_T_PHDR, 1, EV_CURRENT);
    if (eh.e_phentsize != entsize)
      return unexpected("bad program header entry size " + std::to_string(eh.e_phentsize));
    if (!in_bounds(eh.e_phoff, uint64_t{phnum} * entsize, file.size()))
      return unexpected(std::string("truncated program headers"));
    if (phnum > im.limits.max_program_headers)
      return unexpected("too many program headers " + std::to_string(phnum));
    std::size_t libelf_count = 0;
    if (elf_getphdrnum(e, &libelf_count) != 0 || libelf_count != phnum)
      return unexpected(std::string("bad program header count"));
  }
  bool have_load = false;
  uint64_t lowest = 0, lowest_align = 0;
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(e, static_cast<int>(i), &ph) == nullptr)
      return unexpected(std::string("truncated program headers"));
    switch (ph.p_type) {
      case PT_LOAD:
        img.segments_.push_back(Segment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
                                        static_cast<uint32_t>(ph.p_flags)});
        if (!have_load || ph.p_vaddr < lowest) lowest = ph.p_vaddr, lowest_align = ph.p_align;
        have_load = true;
        break;
      case PT_GNU_EH_FRAME:
        if (!eh_frame_seg) eh_frame_seg = ph;
        break;
      case elf::kPtGnuSframe:
        if (!sframe_seg) sframe_seg = ph;
        break;
      case PT_DYNAMIC:
        if (!dynamic_seg) dynamic_seg = ph;
        break;
      case PT_NOTE:
        note_segs.push_back(ph);
        break;
      default:
        break;
    }
  }
  img.min_vaddr_ = have_load ? elf::load_base(lowest, lowest_align) : 0;

  // Section headers, when present and sane (libelf drops a table that leaves the file).
  SectionFacts facts;
  std::size_t shnum = 0, shstrndx = 0;
  if (elf_getshdrnum(e, &shnum) == 0 && shnum > 0) {
    im.has_section_headers = true;
    const bool have_names = elf_getshdrstrndx(e, &shstrndx) == 0;
    bool all_named = have_names;
    bool saw_info = false;
    Elf_Scn* scn = nullptr;
    uint32_t n = 0;
    for (; n < elf::kMaxSections && (scn = elf_nextscn(e, scn)) != nullptr; ++n) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) {
        all_named = false;
        continue;
      }
      std::span<const std::byte> raw;
      if (sh.sh_type != SHT_NOBITS) raw = slice(file, sh.sh_offset, sh.sh_size);
      if (sh.sh_type == SHT_NOTE) {
        facts.notes.emplace_back(raw, sh.sh_addralign);
      }
      const char* cname = have_names ? elf_strptr(e, shstrndx, sh.sh_name) : nullptr;
      if (cname == nullptr) {
        all_named = false;
        continue;
      }
      const std::string_view name(cname);
      if (name == ".debug_info" || name == ".zdebug_info") saw_info = true;
      if (name == ".note.gnu.build-id" && sh.sh_type == SHT_NOTE) {
        facts.build_id_notes.emplace_back(raw, sh.sh_addralign);
      } else if (name == ".eh_frame_hdr" && !facts.has_eh_frame_hdr) {
        facts.has_eh_frame_hdr = true;
        img.eh_frame_hdr_ = SectionRef{sh.sh_addr, raw};
      } else if (name == ".eh_frame" && !facts.has_eh_frame) {
        facts.has_eh_frame = true;
        img.eh_frame_ = SectionRef{sh.sh_addr, raw};
      } else if (name == ".sframe" && !facts.has_sframe) {
        facts.has_sframe = true;
        img.sframe_ = SectionRef{sh.sh_addr, raw};
      } else if (name == ".dynamic" && !facts.has_dynamic) {
        facts.has_dynamic = true;
        img.dynamic_ = SectionRef{sh.sh_addr, raw};
      } else if (name == ".gnu_debuglink" && img.debuglink_.empty()) {
        read_debuglink(raw, img.big_endian_, img.debuglink_, img.debuglink_crc_);
      } else if ((name == ".gopclntab" || name == ".data.rel.ro.gopclntab") &&
                 im.gopclntab_section.empty()) {
        // The second name: position-independent builds put the table in the relro data.
        im.gopclntab_section = SectionRef{sh.sh_addr, raw};
      } else if (name == ".text" && im.text_addr == 0) {
        im.text_addr = sh.sh_addr;
      } else if (name == ".gnu_debugdata" && im.gnu_debugdata.empty()) {
        im.gnu_debugdata = raw;
      } else if ((name == ".debug_frame" || name == ".zdebug_frame") && img.debug_frame_.empty()) {
        // FDE addresses in .debug_frame are absolute link-time addresses: no section base.
        const bool gnu = name == ".zdebug_frame";
        if ((sh.sh_flags & SHF_COMPRESSED) != 0 || gnu) {
          if (!raw.empty())
            decompress_section(scn, img.address_size_ == 8, gnu, raw, im.limits.max_image_bytes,
                               im.debug_frame_plain);
          img.debug_frame_ = SectionRef{0, im.debug_frame_plain};
        } else {
          img.debug_frame_ = SectionRef{0, raw};
        }
      }
    }
    // Known only when the loop saw every section (elf_nextscn ran out, not the cap).
    im.no_debug_info = all_named && !saw_info && scn == nullptr;
  }

  // Without section headers (or without these sections), the program headers lead the way
  // the kernel and the dynamic loader find them.
  if (!facts.has_eh_frame_hdr && eh_frame_seg) {
    img.eh_frame_hdr_ =
        SectionRef{eh_frame_seg->p_vaddr,
                   load_bytes(img.segments_, file, eh_frame_seg->p_vaddr, eh_frame_seg->p_memsz)};
  }
  if (!facts.has_eh_frame && !img.eh_frame_hdr_.empty()) {
    auto addr = elf::decode_eh_frame_ptr(img.eh_frame_hdr_.bytes, img.eh_frame_hdr_.addr,
                                         img.big_endian_, img.address_size_);
    if (addr) img.eh_frame_ = SectionRef{*addr, load_bytes(img.segments_, file, *addr, UINT64_MAX)};
  }
  if (!facts.has_sframe && sframe_seg) {
    img.sframe_ =
        SectionRef{sframe_seg->p_vaddr,
                   load_bytes(img.segments_, file, sframe_seg->p_vaddr, sframe_seg->p_memsz)};
  }
  if (!facts.has_dynamic && dynamic_seg) {
    img.dynamic_ =
        SectionRef{dynamic_seg->p_vaddr,
                   load_bytes(img.segments_, file, dynamic_seg->p_vaddr, dynamic_seg->p_filesz)};
  }

  // Build-id: PT_NOTE first, then the .note.gnu.build-id section, then any note section.
  for (const GElf_Phdr& ph : note_segs) {
    if (!img.build_id_.empty()) break;
    img.build_id_ =
        elf::find_build_id(slice(file, ph.p_offset, ph.p_filesz), img.big_endian_, ph.p_align);
  }
  for (const auto* list : {&facts.build_id_notes, &facts.notes}) {
    for (const auto& [bytes, align] : *list) {
      if (!img.build_id_.empty()) break;
      img.build_id_ = elf::find_build_id(bytes, img.big_endian_, align);
    }
  }
  return {};
}

Expected<std::shared_ptr<Image>, std::string> Image::open(const std::string& path,
                                                          const Limits& limits) {
  auto opened = util::open_regular_file(path);
  if (!opened) {
    const util::OpenFailure& why = opened.error();
    return unexpected(why.error == 0 ? why.message() : "cannot open file: " + why.message());
  }
  const int fd = *opened;
  auto mapping = elf::FileMapping::map(fd);
  if (!mapping) {
    ::close(fd);
    return unexpected(mapping.error());
  }
  std::shared_ptr<Image> img = ImageLoader::make(limits);
  Impl& im = *img->impl_;
  im.mapping = std::move(*mapping);
  im.file = im.mapping.bytes();
  img->name_ = path;
  auto parsed = ImageLoader::parse_file(*img, fd);
  ::close(fd);
  if (!parsed) return unexpected(parsed.error());
  return img;
}

Expected<std::shared_ptr<Image>, std::string> Image::from_bytes(std::vector<std::byte> bytes,
                                                                std::string name,
                                                                const Limits& limits) {
  std::shared_ptr<Image> img = ImageLoader::make(limits);
  Impl& im = *img->impl_;
  im.owned = std::move(bytes);
  im.file = im.owned;
  img->name_ = std::move(name);
  auto parsed = ImageLoader::parse_file(*img, -1);
  if (!parsed) return unexpected(parsed.error());
  return img;
}

}  // namespace ehbt
