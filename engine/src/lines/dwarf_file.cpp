// SPDX-License-Identifier: Apache-2.0
// Opening an image's DWARF with libdw (see dwarf_file.hpp).
#include "lines/dwarf_file.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include "elf/image_impl.hpp"  // elf::libelf_ready()
#include "lines/debug_cache.hpp"
#include "lines/debug_sections.hpp"
#include "lines/dwz_alt.hpp"
#include "util/hex.hpp"
#include "util/regular_file.hpp"

namespace ehbt::lines {

DwarfFile::~DwarfFile() {
  // The main file's Dwarf refers to the alt's: it goes first.
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
  alt_.reset();
  if (elf_ != nullptr) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
}

struct DwarfOpener {
  static std::unique_ptr<DwarfFile> open_elf(const Image& image, const Limits& limits) {
    auto f = std::make_unique<DwarfFile>();
    f->path_ = image.name();
    if (image.from_file()) {
      // By name, as libelf maps files itself (privately): the image's own mapping is
      // read-only, and libelf is free to write into memory it was given.
      auto opened = util::open_regular_file(image.name());
      if (!opened) return nullptr;
      f->fd_ = *opened;
      f->elf_ = elf_begin(f->fd_, ELF_C_READ_MMAP, nullptr);
      if (f->elf_ != nullptr && elf_kind(f->elf_) == ELF_K_ELF) use_cached_copy(*f, limits);
    } else if (!image.file_bytes().empty()) {
      // from_bytes(): the image owns these bytes (tests, fuzzers).
      const std::span<const std::byte> bytes = image.file_bytes();
      f->elf_ =
          elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
    }
    if (f->elf_ == nullptr || elf_kind(f->elf_) != ELF_K_ELF) return nullptr;
    return f;
  }

  // A file whose DWARF is compressed is read from its uncompressed copy in the debug cache
  // (debug_cache.hpp), made now if there is none: libdw inflates every compressed section
  // whole as it opens a file, tens of milliseconds for Debian's libc debug file in every
  // process, but over the copy it reads only the pages a lookup needs. The copy holds the
  // same DWARF, so what the lookups answer does not depend on it; only `path_`, which
  // reports name, stays the source's. Where no copy can be had the source is read as before,
  // and one larger than max_debug_bytes is left to begin() to refuse.
  static void use_cached_copy(DwarfFile& f, const Limits& limits) {
    if (limits.max_debug_cache_bytes == 0) return;
    const DebugSections s = scan_debug_sections(f.elf_);
    if (!s.has_info || !s.any_compressed || s.bytes > limits.max_debug_bytes) return;
    std::optional<CachedCopy> copy = cached_uncompressed_copy(f.elf_, s, limits);
    if (!copy) return;
    elf_end(f.elf_);
    ::close(f.fd_);
    f.elf_ = copy->elf;
    f.fd_ = copy->fd;
  }

  // Opens libdw over an ELF that has .debug_info. `problem` says why not when it fails.
  static bool begin(DwarfFile& f, const Limits& limits, std::string& problem) {
    const DebugSections s = scan_debug_sections(f.elf_);
    if (!s.has_info) return false;
    if (s.bytes > limits.max_debug_bytes) {
      problem = f.path_ + ": " + std::to_string(s.bytes) + " bytes of DWARF, more than the " +
                std::to_string(limits.max_debug_bytes) + " read per module";
      return false;
    }
    f.dwarf_ = dwarf_begin_elf(f.elf_, DWARF_C_READ, nullptr);
    if (f.dwarf_ == nullptr) {
      problem = f.path_ + ": " + dwarf_errmsg(-1);
      return false;
    }
    return true;
  }

  // The dwz file, when the debug file names one and it is found with the right build-id.
  // Not finding it is no problem of its own: libdw then looks where it knows to, and what
  // refers into a missing alt file just has no name.
  static void attach_alt(DwarfFile& f, const Limits& limits) {
    const char* name = nullptr;
    const void* id = nullptr;
    const ssize_t id_len = dwelf_dwarf_gnu_debugaltlink(f.dwarf_, &name, &id);
    if (id_len <= 0 || name == nullptr) return;
    f.names_alt_ = true;
    const std::string hex =
        util::bytes_hex({static_cast<const std::byte*>(id), static_cast<std::size_t>(id_len)});
    for (const std::string& path : dwz_alt_candidates(f.path_, name, hex)) {
      auto alt = std::make_unique<DwarfFile>();
      alt->path_ = path;
      auto opened = util::open_regular_file(path);
      if (!opened) continue;
      alt->fd_ = *opened;
      alt->elf_ = elf_begin(alt->fd_, ELF_C_READ_MMAP, nullptr);
      if (alt->elf_ == nullptr || elf_kind(alt->elf_) != ELF_K_ELF) continue;
      // The build-id checked is the copy's, which is the file's.
      use_cached_copy(*alt, limits);
      const void* alt_id = nullptr;
      const ssize_t alt_len = dwelf_elf_gnu_build_id(alt->elf_, &alt_id);
      if (alt_len != id_len || std::memcmp(alt_id, id, static_cast<std::size_t>(id_len)) != 0) {
        continue;
      }
      std::string ignored;
      if (!begin(*alt, limits, ignored)) continue;
      dwarf_setalt(f.dwarf_, alt->dwarf_);
      f.alt_ = std::move(alt);
      return;
    }
  }
};

OpenedDwarf open_image_dwarf(const Image& image, const Limits& limits) {
  OpenedDwarf out;
  if (!elf::libelf_ready()) return out;
  // The file itself first (an unstripped build), then its separate debug file, looked up
  // (maybe fetched: Image::debug_file) only when the file has no DWARF of its own.
  std::shared_ptr<const Image> debug;
  for (const Image* candidate : {&image, static_cast<const Image*>(nullptr)}) {
    if (candidate == nullptr) {
      debug = image.debug_file();
      candidate = debug.get();
      if (candidate == nullptr) continue;
    }
    // An image whose section headers name no .debug_info has none to open.
    if (ImageLoader::impl(*candidate).no_debug_info) continue;
    std::unique_ptr<DwarfFile> f = DwarfOpener::open_elf(*candidate, limits);
    if (!f) continue;
    if (!DwarfOpener::begin(*f, limits, out.problem)) {
      if (!out.problem.empty()) return out;  // DWARF there, but unusable: say so, go no further
      continue;
    }
    DwarfOpener::attach_alt(*f, limits);
    out.file = std::move(f);
    return out;
  }
  return out;
}

}  // namespace ehbt::lines
