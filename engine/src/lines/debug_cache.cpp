// SPDX-License-Identifier: Apache-2.0
// Finding, validating, making and evicting cached uncompressed debug files (see
// debug_cache.hpp).
#include "lines/debug_cache.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lines/cache_dir.hpp"
#include "lines/uncompressed_copy.hpp"
#include "util/fnv.hpp"
#include "util/hex.hpp"
#include "util/unique_fd.hpp"

namespace ehbt::lines {
namespace {

// Part of every copy's name: a copy written by another version of this code, with other
// sections kept, is never taken for this one's.
constexpr uint64_t kFormat = 1;
// A copy used is touched (its mtime orders eviction) when its mtime is older than this:
// not on every run, so that a cache in use does not write an inode per process.
constexpr time_t kTouchAfterSeconds = 600;
// Space left free on the cache's file system after writing a copy.
constexpr uint64_t kFreeReserve = uint64_t{64} << 20;

constexpr std::string_view kSuffix = ".debug";

using Fd = util::UniqueFd;

struct BuildId {
  const void* bytes = nullptr;
  std::size_t size = 0;
};

// "<build-id>.<layout>.debug": the layout (the source's identity and debug sections as
// stored) tells apart files that share a build-id but not their DWARF's form (one processed
// by dwz, one not).
std::string copy_name(const GElf_Ehdr& eh, const DebugSections& sections, const BuildId& id) {
  uint64_t h = util::kFnvBasis;
  util::fnv1a_u64(h, kFormat);
  util::fnv1a(h, eh.e_ident, EI_NIDENT);
  util::fnv1a_u64(h, eh.e_machine);
  util::fnv1a_u64(h, eh.e_type);
  for (const DebugSection& s : sections.list) {
    util::fnv1a(h, s.name.data(), s.name.size() + 1);
    util::fnv1a_u64(h, s.stored);
    util::fnv1a_u64(h, s.inflated);
    util::fnv1a_u64(h, static_cast<uint64_t>(s.compression));
  }
  return util::bytes_hex({static_cast<const std::byte*>(id.bytes), id.size}) + "." +
         util::bytes_hex(std::as_bytes(std::span(&h, 1))) + std::string(kSuffix);
}

// Whether `copy` (a file of `file_size` bytes) is the copy made from `source`: the same ELF
// identity and build-id, and each kept section there, inflated, inside the file.
bool is_copy_of(Elf* copy, uint64_t file_size, const GElf_Ehdr& source, const DebugSections& from,
                const BuildId& id) {
  GElf_Ehdr eh;
  if (elf_kind(copy) != ELF_K_ELF || gelf_getehdr(copy, &eh) == nullptr) return false;
  if (eh.e_ident[EI_CLASS] != source.e_ident[EI_CLASS] ||
      eh.e_ident[EI_DATA] != source.e_ident[EI_DATA] || eh.e_machine != source.e_machine) {
    return false;
  }
  const void* copy_id = nullptr;
  const ssize_t copy_id_size = dwelf_elf_gnu_build_id(copy, &copy_id);
  if (copy_id_size <= 0 || static_cast<std::size_t>(copy_id_size) != id.size ||
      std::memcmp(copy_id, id.bytes, id.size) != 0) {
    return false;
  }
  const DebugSections got = scan_debug_sections(copy);
  if (!got.has_info || got.any_compressed) return false;
  std::size_t kept = 0;
  for (const DebugSection& s : from.list) {
    if (!needed_for_lines(s.name)) continue;
    ++kept;
    auto it = std::find_if(got.list.begin(), got.list.end(),
                           [&](const DebugSection& g) { return g.name == s.name; });
    if (it == got.list.end() || it->stored != s.inflated) return false;
    GElf_Shdr sh;
    if (gelf_getshdr(it->scn, &sh) == nullptr || sh.sh_offset > file_size ||
        sh.sh_size > file_size - sh.sh_offset) {
      return false;
    }
  }
  return kept == got.list.size();
}

// The copy `name` in `dir` when it is one of `source` (nullopt: absent or not a valid copy).
std::optional<CachedCopy> open_copy(int dir, const std::string& name, const GElf_Ehdr& source,
                                    const DebugSections& from, const BuildId& id) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return std::nullopt;
  }
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return std::nullopt;
  if (!is_copy_of(elf, static_cast<uint64_t>(st.st_size), source, from, id)) {
    elf_end(elf);
    return std::nullopt;
  }
  if (std::time(nullptr) - st.st_mtime > kTouchAfterSeconds) ::futimens(fd.get(), nullptr);
  return CachedCopy{fd.release(), elf, false};
}

// Writes the copy of `source` under a temporary name, makes room for it and renames it into
// place; then opens it as any later process will.
std::optional<CachedCopy> make_copy(int dir, const std::string& name, Elf* source,
                                    const GElf_Ehdr& eh, const DebugSections& from,
                                    const BuildId& id, const Limits& limits) {
  uint64_t kept = 0;
  for (const DebugSection& s : from.list) {
    if (needed_for_lines(s.name)) kept += s.inflated;
  }
  if (kept > limits.max_debug_cache_bytes) return std::nullopt;
  struct statvfs fs;
  if (::fstatvfs(dir, &fs) != 0 ||
      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < kept + kFreeReserve) {
    return std::nullopt;
  }
  if (!place_cache_file(dir, name, kSuffix, limits.max_debug_cache_bytes,
                        limits.max_debug_cache_bytes,
                        [&](int out) { return write_uncompressed_copy(source, from, out); })) {
    return std::nullopt;
  }
  std::optional<CachedCopy> made = open_copy(dir, name, eh, from, id);
  if (made) made->made = true;
  return made;
}

}  // namespace

std::optional<CachedCopy> cached_uncompressed_copy(Elf* source, const DebugSections& sections,
                                                   const Limits& limits) {
  if (limits.max_debug_cache_bytes == 0 || !sections.any_compressed) return std::nullopt;
  GElf_Ehdr eh;
  // A relocatable file (a dwz file is one) is copied too: libdw applies no relocations, so
  // the copy leaving them out changes nothing it reads.
  if (gelf_getehdr(source, &eh) == nullptr) return std::nullopt;
  BuildId id;
  const ssize_t id_size = dwelf_elf_gnu_build_id(source, &id.bytes);
  // Real build-ids are 16 or 20 bytes; a longer one would make no reasonable file name.
  if (id_size <= 0 || id_size > 64) return std::nullopt;
  id.size = static_cast<std::size_t>(id_size);
  const std::string name = copy_name(eh, sections, id);
  Fd dir(open_private_dir(ehbt_cache_dir(), "debug"));
  if (dir.get() < 0) return std::nullopt;
  if (std::optional<CachedCopy> hit = open_copy(dir.get(), name, eh, sections, id)) return hit;
  return make_copy(dir.get(), name, source, eh, sections, id, limits);
}

}  // namespace ehbt::lines
