// SPDX-License-Identifier: Apache-2.0
// Module resolution shared by cores and live processes.
#include "core/module_resolver.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "core/byte_order.hpp"
#include "core/debug_files.hpp"
#include "core/sysroot_path.hpp"
#include "core/warnings.hpp"
#include "util/hex.hpp"
#include "util/regular_file.hpp"

namespace ehbt::core {
namespace {

// Link-time address of file offset 0 for an opened file (see TargetElf::header_vaddr).
std::optional<uint64_t> file_header_vaddr(const Image& image) {
  const auto& segs = image.segments();
  if (segs.empty()) return std::nullopt;
  auto first = std::min_element(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) {
    return a.vaddr < b.vaddr;
  });
  return first->offset <= first->vaddr ? first->vaddr - first->offset : first->vaddr;
}

std::pair<uint64_t, uint64_t> file_load_range(const Image& image, uint64_t page_size) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Segment& s : image.segments()) {
    lo = std::min(lo, s.vaddr);
    hi = std::max(hi, s.vaddr + s.memsz);
  }
  if (lo == UINT64_MAX) return {0, 0};
  if (page_size != 0 && (page_size & (page_size - 1)) == 0) lo &= ~(page_size - 1);
  return {lo, hi};
}

// Link-time address of the program headers of an opened file (its header vaddr + e_phoff):
// AT_PHDR minus this is the bias even when the target's copy of the headers was not dumped.
std::optional<uint64_t> file_phdr_vaddr(const Image& image) {
  auto hv = file_header_vaddr(image);
  if (!hv) return std::nullopt;
  std::byte ehdr[64];
  if (image.read(*hv, ehdr) != sizeof ehdr) return std::nullopt;
  if (ehdr[0] != std::byte{0x7f} || ehdr[1] != std::byte{'E'} || ehdr[2] != std::byte{'L'} ||
      ehdr[3] != std::byte{'F'}) {
    return std::nullopt;
  }
  // e_phoff: ELF64 at 32 (8 bytes), ELF32 at 28 (4 bytes).
  const bool is64 = image.address_size() == 8;
  uint64_t phoff = 0;
  if (!load_uint(ehdr, is64 ? 32 : 28, is64 ? 8 : 4, image.big_endian(), phoff)) {
    return std::nullopt;
  }
  return *hv + phoff;
}

// When the target recorded no build-id, its dynamic section (dumped: it is writable or
// RELRO) still tells files apart: the file's entries must all be there, each value equal or
// relocated by the bias (glibc adjusts a few pointer tags in place), DT_DEBUG aside.
// Nothing when there is nothing to compare.
std::optional<bool> dynamic_matches(Memory& mem, const Image& file, uint64_t bias) {
  constexpr uint64_t kDtNull = 0, kDtDebug = 21;
  constexpr std::size_t kMaxEntries = 4096;
  SectionRef dyn = file.dynamic();
  // Elf64_Dyn / Elf32_Dyn: {tag, value}, one word each.
  const unsigned w = file.address_size();
  if (dyn.bytes.size() < 2 * w) return std::nullopt;
  bool be = file.big_endian();
  std::size_t n = std::min<std::size_t>(dyn.bytes.size() / (2 * w), kMaxEntries);
  std::vector<std::byte> mem_dyn(n * 2 * w);
  if (mem.read(dyn.addr + bias, mem_dyn) != mem_dyn.size()) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i) {
    uint64_t ftag = 0, fval = 0, mtag = 0, mval = 0;
    load_uint(dyn.bytes, i * 2 * w, w, be, ftag);
    load_uint(dyn.bytes, i * 2 * w + w, w, be, fval);
    load_uint(mem_dyn, i * 2 * w, w, be, mtag);
    load_uint(mem_dyn, i * 2 * w + w, w, be, mval);
    if (ftag != mtag) return false;
    if (ftag == kDtNull) break;
    if (ftag == kDtDebug) continue;
    if (mval != fval && mval != fval + bias) return false;
  }
  return true;
}

// A file's contents placed at a bias, as if it were target memory.
class PlacedImage final : public Memory {
 public:
  PlacedImage(const Image& image, uint64_t bias) : image_(image), bias_(bias) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    return image_.read(addr - bias_, out);
  }

 private:
  const Image& image_;
  uint64_t bias_;
};

// Whether a PDB70 GUID (32 hex digits) was made of `build_id`: its first 16 bytes, zero-padded
// when shorter. Writers copy the bytes as they are; a GUID stored with its first three fields
// in the other byte order (data1, data2, data3 as numbers) is accepted too.
bool guid_matches(const std::string& build_id, const std::string& guid) {
  if (build_id.empty() || guid.size() != 32) return false;
  std::string head = build_id.substr(0, 32);
  head.resize(32, '0');
  if (head == guid) return true;
  std::string swapped;
  for (auto [at, bytes] : {std::pair{0, 4}, std::pair{8, 2}, std::pair{12, 2}}) {
    for (int i = bytes - 1; i >= 0; --i) swapped += head.substr(at + 2 * i, 2);
  }
  swapped += head.substr(16);
  return swapped == guid;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Why `file` is not the one the target mapped at `bias` ("" when nothing says it is not):
// another architecture, another build-id, or -- when the target recorded no build-id -- a
// dynamic section or a mapped extent the file cannot account for.
std::string file_mismatch(Memory& mem, Arch arch, const Image& file, const std::string& build_id,
                          uint64_t bias, const ModuleHint& hint, uint64_t page_size) {
  if (file.arch() != arch) return "it is for another architecture";
  if (!build_id.empty()) {
    if (file.build_id() == build_id) return "";
    if (file.build_id().empty()) return "it has no build-id where " + build_id + " was recorded";
    return "its build-id " + file.build_id() + " differs from the recorded " + build_id;
  }
  if (dynamic_matches(mem, file, bias) == false) {
    return "its dynamic section differs from the one in memory";
  }
  if (hint.range && hint.range_from_file_mappings) {
    auto [lo, hi] = file_load_range(file, page_size);
    uint64_t size = hi - lo;
    if (page_size != 0) size = (size + page_size - 1) & ~(page_size - 1);
    uint64_t mapped = hint.range->second - hint.range->first;
    if (hi > lo && mapped > size) {
      return "it is " + util::hex(size) + " bytes long where " + util::hex(mapped) + " were mapped";
    }
  }
  return "";
}

}  // namespace

std::string strip_deleted(std::string path) {
  static constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() &&
      path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    path.resize(path.size() - kDeleted.size());
  }
  return path;
}

std::shared_ptr<const Image> ModuleResolver::open_one(const std::string& file) {
  if (!util::is_regular_file(file)) return nullptr;
  if (options_.store != nullptr) return options_.store->open(file, options_.limits);
  auto img = Image::open(file, options_.limits);
  if (!img) return nullptr;
  return std::shared_ptr<const Image>(std::move(img.value()));
}

std::vector<std::string> ModuleResolver::candidates(const std::string& path,
                                                    bool main_executable) const {
  std::vector<std::string> candidates;
  if (!path.empty() && path.front() == '[') {
    // [vdso], [vsyscall] and friends are not files; they only exist in target memory.
  } else if (main_executable && !options_.exe.empty()) {
    candidates.push_back(options_.exe);
  } else if (!path.empty()) {
    // Inside each sysroot, as a chroot would see it (see sysroot_path.hpp); then the host.
    for (const std::string& root : options_.sysroots) {
      if (auto inside = resolve_in_root(root, path)) candidates.push_back(std::move(*inside));
    }
    candidates.push_back(path);
  }
  return candidates;
}

FileContent ModuleResolver::file_content(const std::string& path, bool main_executable) const {
  for (const std::string& c : candidates(path, main_executable)) {
    FileContent k = core::file_content(c);
    if (k != FileContent::kUnavailable) return k;
  }
  return FileContent::kUnavailable;
}

std::shared_ptr<const Image> ModuleResolver::open_file(const std::string& path,
                                                       bool main_executable, std::string& found,
                                                       std::string* unreadable) {
  found.clear();
  if (unreadable != nullptr) unreadable->clear();
  for (const std::string& c : candidates(path, main_executable)) {
    if (auto img = open_one(c)) {
      found = c;
      return img;
    }
    if (unreadable != nullptr && unreadable->empty() && exists(c)) *unreadable = c;
  }
  return nullptr;
}

void ModuleResolver::report_no_file(const ModuleHint& hint, Module& m,
                                    const std::string& unreadable, const std::string& rejected,
                                    const std::string& mismatch) {
  // [vdso] and friends have no file; a module without a name cannot be looked for.
  if (hint.path.empty() || hint.path.front() == '[') return;
  const std::string name = base_name(hint.path);
  const bool by_exe = hint.main_executable && !options_.exe.empty();
  const std::string named = "(named by " + named_by_ + ")";
  const std::string what = hint.main_executable ? "the executable " + hint.path : hint.path;
  const std::string option = hint.main_executable ? "--exe" : "--sysroot";
  Warning w;
  if (!rejected.empty()) {
    m.missing = name + " " + named + " is another build (" + rejected + ")";
    if (by_exe) {
      w = Warning{kWarningExecutableMismatch,
                  "--exe " + rejected + " is not " + what + " " + named + ": " + mismatch, rejected,
                  "--exe"};
    } else {
      w = Warning{kWarningMismatchedFile,
                  rejected + " is not " + what + " " + named + ": " + mismatch + "; not used",
                  rejected, option};
    }
  } else if (!unreadable.empty()) {
    m.missing = name + " " + named + " is unreadable (" + unreadable + ")";
    w = Warning{kWarningUnreadableFile,
                unreadable + " (" + what + ") cannot be read as an ELF file", unreadable, ""};
  } else {
    m.missing = name + " not found " + named;
    std::string where;
    if (by_exe) {
      where = " (--exe " + options_.exe + " does not exist)";
    } else if (!options_.sysroots.empty()) {
      where = " in any --sysroot or as named";
    }
    w = Warning{kWarningMissingFile, what + ", named by " + named_by_ + ", was not found" + where,
                hint.path, option};
  }
  if (warnings_ != nullptr) add_warning(*warnings_, std::move(w));
}

std::optional<ResolvedModule> ModuleResolver::resolve(const ModuleHint& hint) {
  const uint32_t max_phdrs = options_.limits.max_program_headers;
  std::optional<TargetElf> elf;
  std::optional<uint64_t> bias = hint.bias;
  bool have_header = false;  // an ELF header (not only program headers) was read

  // 1. Headers from target memory.
  if (hint.phdr && hint.phnum != 0) {
    elf = read_target_phdrs(mem_, *hint.phdr, hint.phnum, big_endian_, word_, max_phdrs);
    if (elf && elf->phdr_vaddr) {
      bias = *hint.phdr - *elf->phdr_vaddr;
    } else if (elf && page_size_ != 0) {
      // No PT_PHDR (static, non-PIE): the header is normally on the page holding the phdrs.
      uint64_t page = *hint.phdr & ~(page_size_ - 1);
      if (auto e = read_target_elf(mem_, page, big_endian_, word_, max_phdrs)) {
        if (e->header_vaddr() == elf->header_vaddr()) {
          elf = e;
          bias = page - e->header_vaddr();
          have_header = true;
        }
      }
    }
  }
  if (!elf && hint.base) {
    elf = read_target_elf(mem_, *hint.base, big_endian_, word_, max_phdrs);
    if (elf) {
      have_header = true;
      if (!bias) bias = *hint.base - elf->header_vaddr();
    }
  }
  if (!elf && hint.bias) {
    // link_map gives the bias; a shared object's header usually sits at bias + 0. Accept the
    // guess only if it describes the dynamic section the target recorded.
    if (auto e = read_target_elf(mem_, *hint.bias, big_endian_, word_, max_phdrs)) {
      bool fits =
          e->header_vaddr() == 0 &&
          (!hint.dynamic || (e->dynamic_vaddr && *hint.bias + *e->dynamic_vaddr == *hint.dynamic));
      if (fits) {
        elf = e;
        have_header = true;
      }
    }
  }

  if (!elf && !bias && hint.phdr && hint.header_candidates != nullptr && page_size_ != 0) {
    // Neither the mapped headers nor (maybe) the file: look for a dumped copy of the first
    // page that places itself consistently -- its PT_PHDR gives a bias under which one of its
    // own segments maps file page 0 exactly at the candidate.
    for (uint64_t c : *hint.header_candidates) {
      auto e = read_target_elf(mem_, c, big_endian_, word_, max_phdrs);
      if (!e || !e->phdr_vaddr) continue;
      uint64_t b = *hint.phdr - *e->phdr_vaddr;
      bool placed = false;
      for (const Segment& s : e->loads) {
        placed |= s.offset < page_size_ && ((b + s.vaddr) & ~(page_size_ - 1)) == c &&
                  c != b + e->header_vaddr();
      }
      if (placed) {
        e->page0_alias = c;
        elf = std::move(e);
        bias = b;
        break;
      }
    }
  }

  // 2. The file.
  std::string found, unreadable;
  std::shared_ptr<const Image> file =
      open_file(hint.path, hint.main_executable, found, &unreadable);
  if (file && !bias) {
    std::optional<uint64_t> phdr_vaddr = hint.phdr ? file_phdr_vaddr(*file) : std::nullopt;
    if (phdr_vaddr) {
      bias = *hint.phdr - *phdr_vaddr;
    } else if (hint.entry && file->entry() != 0) {
      bias = *hint.entry - file->entry();
    } else if (hint.base) {
      if (auto hv = file_header_vaddr(*file)) bias = *hint.base - *hv;
    }
  }
  if (!bias && !file && hint.place_at_base && hint.base && hint.range) bias = *hint.base;
  if (!bias) {
    // Nowhere to place it; still say that its file is missing.
    Module unplaced;
    if (!file) report_no_file(hint, unplaced, unreadable, "", "");
    return std::nullopt;
  }
  if (!elf && file && hint.bias && !have_header) {
    // Now that the file says where its header lies, read the target's copy of it.
    if (auto hv = file_header_vaddr(*file)) {
      if (auto e = read_target_elf(mem_, *bias + *hv, big_endian_, word_, max_phdrs)) {
        if (e->header_vaddr() == *hv) {
          elf = e;
          have_header = true;
        }
      }
    }
  }

  ResolvedModule r;
  Module& m = r.module;
  m.path = hint.path;
  m.bias = *bias;
  if (elf) m.build_id = read_build_id(mem_, *elf, *bias);
  if (m.build_id.empty() && elf && elf->page0_alias) {
    m.build_id = read_build_id_at_offsets(mem_, *elf, *elf->page0_alias, page_size_);
  }
  if (m.build_id.empty()) {
    // The first page (headers, notes) was not dumped where it is mapped -- qemu-user skips
    // mapped text -- but a writable segment whose first page is file page 0 shows the same
    // bytes again, and that one is dumped.
    const std::vector<Segment>* layout = elf ? &elf->loads : file ? &file->segments() : nullptr;
    uint64_t header = *bias + (elf    ? elf->header_vaddr()
                               : file ? file_header_vaddr(*file).value_or(0)
                                      : 0);
    for (std::size_t i = 0; layout != nullptr && i < layout->size(); ++i) {
      const Segment& s = (*layout)[i];
      if (s.offset >= page_size_ || page_size_ == 0) continue;  // does not map file page 0
      uint64_t alias = (*bias + s.vaddr) & ~(page_size_ - 1);
      if (alias == header) continue;
      auto e = read_target_elf(mem_, alias, big_endian_, word_, max_phdrs);
      if (!e) continue;
      m.build_id = read_build_id_at_offsets(mem_, *e, alias, s.offset + s.filesz);
      if (!m.build_id.empty()) {
        if (!elf) elf = std::move(e);  // the target's own program headers
        elf->page0_alias = alias;
        break;
      }
    }
  }

  if (m.build_id.empty() && !hint.recorded_build_id.empty()) {
    m.build_id = hint.recorded_build_id;
    // The GUID's 16 bytes identify the file; its whole build-id is then known.
    if (hint.recorded_build_id_guid && file && guid_matches(file->build_id(), m.build_id)) {
      m.build_id = file->build_id();
    }
  }

  bool match = false;
  std::string mismatch;  // why the file found is not the one the target mapped
  if (file) {
    mismatch = file_mismatch(mem_, arch_, *file, m.build_id, *bias, hint, page_size_);
    match = mismatch.empty();
    if (match) {
      m.image = file;
      m.file = found;
      r.file_usable = true;
    }
  }
  // Only two known build-ids can agree or differ.
  if (file && !m.build_id.empty() && !file->build_id().empty()) {
    m.build_id_match = m.build_id == file->build_id();
  }
  // [vdso] and friends are no file: their image is read from the target's memory below.
  const bool has_file = !hint.path.starts_with('[');
  if (!match && has_file && debug_files_->debuginfod().enabled() && !m.build_id.empty()) {
    // The file is missing or another build: the servers may have the right one.
    DebuginfodResult got = debug_files_->debuginfod().fetch(m.build_id, DebuginfodKind::Executable);
    std::shared_ptr<const Image> fetched = got.path.empty() ? nullptr : open_one(got.path);
    if (fetched && fetched->build_id() == m.build_id && fetched->arch() == arch_) {
      m.image = fetched;
      m.file = got.path;
      m.build_id_match = true;
      r.file_usable = true;
      file = fetched;
      match = true;
    } else if (warnings_ != nullptr && !got.stopped_before) {
      // A server that is down is said once per target (by the first fetch that found it
      // so), not once more for every module and debug file after it.
      const std::string id = " (build-id " + m.build_id + ")";
      std::string message;
      if (!got.path.empty()) {
        message = "debuginfod's file " + got.path + " is not the executable " + hint.path + id;
      } else if (got.not_found || got.error.empty()) {
        message = "debuginfod has no executable for " + hint.path + id;
      } else {
        message = "debuginfod: fetching the executable " + hint.path + id + " failed: " + got.error;
      }
      add_warning(*warnings_, Warning{kWarningDebuginfodFailed, message, hint.path, ""});
    }
  }
  if (!match) report_no_file(hint, m, unreadable, file ? found : "", mismatch);
  if (!m.image && elf) {
    // No usable file: rebuild what we can from the target's own memory (the vDSO, or text
    // pages a core happened to dump). Never from a mismatched file.
    uint64_t header = *bias + elf->header_vaddr();
    auto img = Image::from_memory(mem_, header, hint.path, options_.limits);
    if (img) m.image = std::shared_ptr<const Image>(std::move(img.value()));
  }

  if (m.image) {
    // The separate debug file (.debug_frame where the image's CFI does not cover a pc,
    // .symtab of a stripped module, DWARF for source lines) is looked up when a frame first
    // needs it: a process of 30 libraries whose crash touches 3 reads (and fetches) 3. An
    // image shared through the ImageStore keeps the one attached first.
    if (auto existing = m.image->attached_debug_file()) {
      m.debug_file = existing->name();
    } else if (!m.image->build_id().empty() || !m.image->debuglink().empty()) {
      debug_files_->defer(*m.image, hint.path, m.file);
    }
  }

  if (!elf && file) {
    // The target's headers are gone; the file's describe the same layout (if it matched) or
    // very nearly (if it did not): good enough for the range and the dynamic section.
    if (auto hv = file_header_vaddr(*file)) {
      PlacedImage placed(*file, *bias);
      elf =
          read_target_elf(placed, *bias + *hv, file->big_endian(), file->address_size(), max_phdrs);
      r.elf_from_file = elf.has_value();
    }
  }
  r.file = file;

  std::pair<uint64_t, uint64_t> range{0, 0};
  if (elf) {
    range = elf->load_range(page_size_);
  } else if (m.image) {
    range = file_load_range(*m.image, page_size_);
  }
  if (range.second > range.first) {
    m.start = range.first + *bias;
    m.end = range.second + *bias;
  } else if (hint.range) {
    m.start = hint.range->first;
    m.end = hint.range->second;
  } else {
    return std::nullopt;
  }
  if (m.end <= m.start) return std::nullopt;  // wrapped: a bias that cannot be right
  r.elf = std::move(elf);
  return r;
}

}  // namespace ehbt::core
