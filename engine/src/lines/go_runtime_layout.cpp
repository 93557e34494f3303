// SPDX-License-Identifier: Apache-2.0
// Go's runtime structure offsets for one binary (see go_runtime_layout.hpp).
#include "lines/go_runtime_layout.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string_view>

#include "elf/image_impl.hpp"  // elf::libelf_ready()
#include "lines/dwarf_file.hpp"
#include "util/regular_file.hpp"

namespace ehbt::lines {
namespace {

// The members a walk reads, by structure: where each one's offset goes.
struct Wanted {
  const char* type;
  const char* member;
  uint64_t elf::GoRuntimeLayout::*field;
};
constexpr Wanted kWanted[] = {
    {"runtime.g", "stack", &elf::GoRuntimeLayout::g_stack},
    {"runtime.g", "m", &elf::GoRuntimeLayout::g_m},
    {"runtime.g", "sched", &elf::GoRuntimeLayout::g_sched},
    {"runtime.m", "g0", &elf::GoRuntimeLayout::m_g0},
    {"runtime.m", "curg", &elf::GoRuntimeLayout::m_curg},
    {"runtime.gobuf", "sp", &elf::GoRuntimeLayout::gobuf_sp},
    {"runtime.gobuf", "pc", &elf::GoRuntimeLayout::gobuf_pc},
    {"runtime.gobuf", "bp", &elf::GoRuntimeLayout::gobuf_bp},
};
constexpr std::size_t kWantedCount = sizeof(kWanted) / sizeof(kWanted[0]);

// Records the offsets of the wanted members of one structure DIE; counts DIEs into `budget`.
void read_members(Dwarf_Die* type, std::string_view name, elf::GoRuntimeLayout& out,
                  bool (&found)[kWantedCount], uint64_t& budget) {
  Dwarf_Die member;
  if (dwarf_child(type, &member) != 0) return;
  do {
    if (budget-- == 0) return;
    if (dwarf_tag(&member) != DW_TAG_member) continue;
    const char* mname = dwarf_diename(&member);
    if (mname == nullptr) continue;
    for (std::size_t i = 0; i < kWantedCount; ++i) {
      if (found[i] || name != kWanted[i].type || std::strcmp(mname, kWanted[i].member) != 0) {
        continue;
      }
      Dwarf_Attribute attr;
      Dwarf_Word offset = 0;
      if (dwarf_attr(&member, DW_AT_data_member_location, &attr) != nullptr &&
          dwarf_formudata(&attr, &offset) == 0) {
        out.*kWanted[i].field = offset;
        found[i] = true;
      }
    }
  } while (dwarf_siblingof(&member, &member) == 0);
}

// The buildinfo blob's inline version string (Go 1.18+: flags bit 2), else nothing.
std::optional<std::string> version_from_buildinfo(const unsigned char* p, std::size_t n) {
  static constexpr char kMagic[] = "\xff Go buildinf:";
  constexpr std::size_t kMagicLen = sizeof(kMagic) - 1;  // 14
  if (n < 32 || std::memcmp(p, kMagic, kMagicLen) != 0) return std::nullopt;
  if ((p[15] & 2) == 0) return std::nullopt;  // before 1.18: pointers to the strings
  // An unsigned LEB128 length, then the bytes.
  uint64_t len = 0;
  std::size_t at = 32;
  for (unsigned shift = 0; at < n && shift < 64; shift += 7) {
    const unsigned char b = p[at++];
    len |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      if (len == 0 || len > 64 || len > n - at) return std::nullopt;
      return std::string(reinterpret_cast<const char*>(p + at), len);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<elf::GoRuntimeLayout> go_runtime_layout_from_dwarf(const Image& image,
                                                                 const Limits& limits) {
  OpenedDwarf opened = open_image_dwarf(image, limits);
  if (!opened.file) return std::nullopt;
  Dwarf* dw = opened.file->dwarf();
  elf::GoRuntimeLayout out;
  bool found[kWantedCount] = {};
  uint64_t budget = limits.max_line_dies;
  Dwarf_Off off = 0, next = 0;
  std::size_t header = 0;
  while (dwarf_nextcu(dw, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    if (budget-- == 0) return std::nullopt;
    Dwarf_Die cu;
    const bool have = dwarf_offdie(dw, off + header, &cu) != nullptr;
    off = next;
    if (!have) continue;
    // Go names each unit after its package, and splits a package over several units: the
    // runtime's types are in one of those named "runtime" (not the first, in Go 1.19).
    const char* unit = dwarf_diename(&cu);
    if (unit == nullptr || std::strcmp(unit, "runtime") != 0) continue;
    Dwarf_Die die;
    if (dwarf_child(&cu, &die) != 0) continue;
    do {
      if (budget-- == 0) return std::nullopt;
      if (dwarf_tag(&die) != DW_TAG_structure_type) continue;
      const char* name = dwarf_diename(&die);
      if (name == nullptr) continue;
      const std::string_view n(name);
      if (n == "runtime.g" || n == "runtime.m" || n == "runtime.gobuf") {
        read_members(&die, n, out, found, budget);
      }
    } while (dwarf_siblingof(&die, &die) == 0);
    if (std::all_of(std::begin(found), std::end(found), [](bool f) { return f; })) break;
  }
  for (bool f : found) {
    if (!f) return std::nullopt;
  }
  out.source = "DWARF";
  return out;
}

std::optional<std::string> go_build_version(const Image& image) {
  if (!image.from_file() || !elf::libelf_ready()) return std::nullopt;
  auto fd = util::open_regular_file(image.name());
  if (!fd) return std::nullopt;
  std::optional<std::string> version;
  if (Elf* e = elf_begin(*fd, ELF_C_READ_MMAP, nullptr)) {
    std::size_t shstrndx = 0;
    if (elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
      for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn != nullptr; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr) continue;
        const char* name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name == nullptr || std::strcmp(name, ".go.buildinfo") != 0) continue;
        if (Elf_Data* d = elf_getdata(scn, nullptr); d != nullptr && d->d_buf != nullptr) {
          version = version_from_buildinfo(static_cast<const unsigned char*>(d->d_buf), d->d_size);
        }
        break;
      }
    }
    elf_end(e);
  }
  ::close(*fd);
  return version;
}

std::optional<elf::GoRuntimeLayout> go_runtime_layout_of_version(const std::string& version,
                                                                 Arch arch) {
  // Go 1.19.8 (Debian's golang-1.19 sources, runtime2.go), linux amd64 and arm64 alike
  // (sigset is [2]uint32 on both, tlsSlots 6): g {stack 0, stackguard0 16, stackguard1 24,
  // _panic 32, _defer 40, m 48, sched 56}; gobuf {sp 0, pc 8, g 16, ctxt 24, ret 32, lr 40,
  // bp 48}; m {g0 0, morebuf 8 (a gobuf), divmod 64, _ 68, procid 72, gsignal 80,
  // goSigStack 88 (40 bytes), sigmask 128, tls 136 (6 words), mstartfn 184, curg 192}.
  // Checked against the DWARF of builds for both (tests/integration/test_go_systemstack.py).
  // Other versions are added only once checked the same way.
  if (version != "go1.19.8" || (arch != Arch::X86_64 && arch != Arch::AArch64)) {
    return std::nullopt;
  }
  elf::GoRuntimeLayout l;
  l.g_stack = 0;
  l.g_m = 48;
  l.g_sched = 56;
  l.m_g0 = 0;
  l.m_curg = 192;
  l.gobuf_sp = 0;
  l.gobuf_pc = 8;
  l.gobuf_bp = 48;
  l.source = version + " table";
  return l;
}

GoRuntimeLayoutResult go_runtime_layout(const std::shared_ptr<const Image>& image, Arch arch,
                                        const Limits& limits) {
  GoRuntimeLayoutResult out;
  if (!image) {
    out.why_not = "no file for the module";
    return out;
  }
  // Once per image: a walk meets runtime.systemstack once, a batch of cores of one build
  // many times. Entries of images let go are dropped as the map grows.
  struct Entry {
    std::weak_ptr<const Image> image;
    Arch arch;
    GoRuntimeLayoutResult result;
  };
  static std::mutex mutex;
  static std::map<const Image*, Entry> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(image.get());
    if (it != cache.end() && it->second.image.lock() == image && it->second.arch == arch) {
      return it->second.result;
    }
  }
  // The table first: each version it lists was checked against the DWARF of a build of it,
  // and reading a binary's own DWARF means inflating Go's compressed debug sections (10 ms for
  // the 1.2 MB fixture binary, three times the rest of its walk). The DWARF serves the
  // versions the table does not know.
  const std::optional<std::string> version = go_build_version(*image);
  if (version) out.layout = go_runtime_layout_of_version(*version, arch);
  if (!out.layout) out.layout = go_runtime_layout_from_dwarf(*image, limits);
  if (!out.layout) {
    out.why_not = version ? "no DWARF for runtime.g/m/gobuf, and Go version " + *version +
                                " is not one whose layout is known"
                          : "no DWARF for runtime.g/m/gobuf and no Go version recorded "
                            "(.go.buildinfo)";
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 64) {
    for (auto it = cache.begin(); it != cache.end();) {
      it = it->second.image.expired() ? cache.erase(it) : std::next(it);
    }
  }
  cache[image.get()] = Entry{image, arch, out};
  return out;
}

}  // namespace ehbt::lines
