// SPDX-License-Identifier: Apache-2.0
// The parser against a real library: this process's libc.so.6. Sections are found by reading
// the ELF section headers directly (<elf.h>), functions by dlsym/dladdr. The expectations are
// x86-64 psABI facts: at a function's first instruction the CFA is rsp+8 and the return
// address is saved at CFA-8.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "dwarf/cfi.hpp"

namespace ehbt::dwarf {
namespace {

#if defined(__x86_64__)

class MappedFile {
 public:
  explicit MappedFile(const char* path) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const std::byte*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

struct Sections {
  SectionView eh_frame_hdr;
  SectionView eh_frame;
  uint64_t min_vaddr = UINT64_MAX;
};

Sections find_sections(const MappedFile& f) {
  Sections out;
  if (f.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return out;
  }
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, f.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && ph.p_vaddr < out.min_vaddr) out.min_vaddr = ph.p_vaddr;
  }
  Elf64_Shdr strtab;
  std::memcpy(&strtab, f.data() + eh.e_shoff + eh.e_shstrndx * sizeof strtab, sizeof strtab);
  const char* names = reinterpret_cast<const char*>(f.data() + strtab.sh_offset);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, f.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    std::string name = names + sh.sh_name;
    SectionView v{sh.sh_addr, {f.data() + sh.sh_offset, static_cast<size_t>(sh.sh_size)}};
    if (name == ".eh_frame_hdr") out.eh_frame_hdr = v;
    if (name == ".eh_frame") out.eh_frame = v;
  }
  return out;
}

class Libc : public ::testing::Test {
 protected:
  void SetUp() override {
    // The libc this process runs with, so dlsym addresses and the file agree. Symbols are
    // looked up in libc itself: sanitizer runtimes interpose some of them.
    libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(libc, nullptr);
    Dl_info info{};
    void* sym = dlsym(libc, "qsort");
    ASSERT_NE(sym, nullptr);
    ASSERT_NE(dladdr(sym, &info), 0);
    char resolved[PATH_MAX];
    ASSERT_NE(realpath(info.dli_fname, resolved), nullptr);
    char expected[PATH_MAX];
    ASSERT_NE(realpath("/lib/x86_64-linux-gnu/libc.so.6", expected), nullptr);
    ASSERT_STREQ(resolved, expected) << "qsort does not come from the system libc";
    file = std::make_unique<MappedFile>(expected);
    ASSERT_NE(file->data(), nullptr);
    sections = find_sections(*file);
    ASSERT_FALSE(sections.eh_frame_hdr.bytes.empty());
    ASSERT_FALSE(sections.eh_frame.bytes.empty());
    base = reinterpret_cast<uint64_t>(info.dli_fbase) - sections.min_vaddr;
  }

  // Link-time address of an exported function.
  uint64_t link_addr(const char* name) {
    void* sym = dlsym(libc, name);
    EXPECT_NE(sym, nullptr) << name;
    return reinterpret_cast<uint64_t>(sym) - base;
  }

  void TearDown() override {
    if (libc != nullptr) dlclose(libc);
  }

  void* libc = nullptr;
  std::unique_ptr<MappedFile> file;
  Sections sections;
  uint64_t base = 0;
};

TEST_F(Libc, FunctionEntryRows) {
  ImageCfi cfi(sections.eh_frame_hdr, sections.eh_frame, {}, Format{}, Bases{}, Limits{});
  for (const char* name : {"qsort", "getenv", "fopen", "strtol", "malloc", "free", "abort"}) {
    const uint64_t pc = link_addr(name);
    auto fde = cfi.find_fde(SectionKind::EhFrame, pc);
    ASSERT_TRUE(fde) << name << ": " << to_string(fde.error().code);
    EXPECT_EQ(fde->first.pc_begin, pc) << name;
    SectionKind from = SectionKind::DebugFrame;
    auto row = cfi.find_row(pc, &from);
    ASSERT_TRUE(row) << name << ": " << to_string(row.error().code);
    EXPECT_EQ(from, SectionKind::EhFrame);
    EXPECT_EQ(row->start, pc) << name;
    EXPECT_EQ(row->cfa.kind, CfaKind::RegOffset) << name;
    EXPECT_EQ(row->cfa.reg, 7) << name;  // rsp
    EXPECT_EQ(row->cfa.offset, 8) << name;
    EXPECT_EQ(row->ra_reg, 16) << name;
    Rule ra = row->rule(16);
    EXPECT_EQ(ra.kind, RuleKind::Offset) << name;
    EXPECT_EQ(ra.offset, -8) << name;
    // The same answer again, from the cache.
    auto again = cfi.find_row(pc);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->cfa.offset, 8);
  }
  EXPECT_FALSE(cfi.eh_frame_bad());
}

TEST_F(Libc, EveryFdeIsVisitedAndEvaluates) {
  auto hdr = EhFrameHdr::parse(sections.eh_frame_hdr, Format{}, Limits{});
  ASSERT_TRUE(hdr);
  ASSERT_TRUE(hdr->has_table());
  EXPECT_EQ(hdr->eh_frame_addr(), sections.eh_frame.addr);

  ImageCfi with_hdr(sections.eh_frame_hdr, sections.eh_frame, {}, Format{}, Bases{}, Limits{});
  ImageCfi scanned({}, sections.eh_frame, {}, Format{}, Bases{}, Limits{});
  uint64_t fdes = 0, rows = 0, errors = 0, row_errors = 0, mismatches = 0;
  with_hdr.for_each_fde(
      SectionKind::EhFrame,
      [&](const Fde& fde, const Cie& cie) {
        ++fdes;
        auto ok = for_each_row(cie, fde, Format{}, Limits{}, [&](const Row&) { ++rows; });
        if (!ok) ++row_errors;
        // Both lookup paths agree on a pc in the middle of the FDE.
        if (fde.pc_end > fde.pc_begin) {
          const uint64_t pc = fde.pc_begin + (fde.pc_end - fde.pc_begin) / 2;
          auto a = with_hdr.find_row(pc);
          auto b = scanned.find_row(pc);
          if (a.has_value() != b.has_value() ||
              (a && (a->start != b->start || a->cfa.offset != b->cfa.offset))) {
            ++mismatches;
          }
        }
      },
      [&](const Error& e) {
        ++errors;
        ADD_FAILURE() << to_string(e.code) << " at " << e.where;
      });
  EXPECT_EQ(fdes, hdr->count());
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(row_errors, 0u);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(rows, fdes);
}

#endif  // __x86_64__

}  // namespace
}  // namespace ehbt::dwarf
