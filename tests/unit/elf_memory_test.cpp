// SPDX-License-Identifier: Apache-2.0
// Image::from_memory: images rebuilt from target memory alone, checked against the same
// files opened from disk, against the dynamic loader's view, and under injected faults.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <time.h>

#include <cstring>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"
#include "elf_test_util.hpp"

namespace {

using ehbt::Image;

elf_test::LoadedObject find_loaded(const std::string& needle) {
  for (const auto& o : elf_test::loaded_objects()) {
    if (o.name.find(needle) != std::string::npos) return o;
  }
  return {};
}

TEST(ElfMemory, LibcFromMemoryMatchesFile) {
  auto libc = find_loaded("libc.so.6");
  ASSERT_FALSE(libc.name.empty()) << "libc not found by dl_iterate_phdr";
  ASSERT_NE(libc.header, 0u);
  auto file = Image::open(libc.name);
  ASSERT_TRUE(file) << file.error();

  ehbt::SelfMemory self;
  auto mem = Image::from_memory(self, libc.header, libc.name);
  ASSERT_TRUE(mem) << mem.error();
  const Image& m = **mem;
  const Image& f = **file;
  EXPECT_EQ(m.name(), libc.name);
  EXPECT_EQ(m.arch(), ehbt::Arch::X86_64);
  EXPECT_EQ(m.min_vaddr(), f.min_vaddr());
  // Bias from the loader equals header address - min_vaddr.
  EXPECT_EQ(libc.header - m.min_vaddr(), libc.bias);
  EXPECT_EQ(m.build_id(), elf_test::readelf_build_id(libc.name));
  EXPECT_EQ(m.build_id(), f.build_id());
  EXPECT_EQ(m.eh_frame_hdr().addr, f.eh_frame_hdr().addr);
  ASSERT_EQ(m.eh_frame_hdr().bytes.size(), f.eh_frame_hdr().bytes.size());
  EXPECT_EQ(0, std::memcmp(m.eh_frame_hdr().bytes.data(), f.eh_frame_hdr().bytes.data(),
                           f.eh_frame_hdr().bytes.size()));
  EXPECT_EQ(m.eh_frame().addr, f.eh_frame().addr);
  ASSERT_GE(m.eh_frame().bytes.size(), f.eh_frame().bytes.size());
  EXPECT_EQ(0, std::memcmp(m.eh_frame().bytes.data(), f.eh_frame().bytes.data(),
                           f.eh_frame().bytes.size()));
  EXPECT_EQ(m.dynamic().addr, f.dynamic().addr);
  EXPECT_EQ(m.segments().size(), f.segments().size());

  // read() over the copied pieces returns what the file holds there.
  std::vector<std::byte> buf(64);
  ASSERT_EQ(m.read(f.eh_frame().addr + 8, buf), buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), f.eh_frame().bytes.data() + 8, buf.size()));

  // Symbols come from the file (or its debug file) by build-id, not from memory; `raise`
  // is GLOBAL while its aliases (gsignal, __GI_raise) are WEAK or LOCAL.
  void* raise_addr = dlsym(RTLD_DEFAULT, "raise");
  ASSERT_NE(raise_addr, nullptr);
  auto sym = f.symbolize(reinterpret_cast<uint64_t>(raise_addr) - libc.bias);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "raise");
  EXPECT_EQ(sym->start, reinterpret_cast<uint64_t>(raise_addr) - libc.bias);
}

TEST(ElfMemory, VdsoFromMemoryHasSymbols) {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  ASSERT_NE(base, 0u) << "no vDSO";
  ehbt::SelfMemory self;
  auto img = Image::from_memory(self, base, "[vdso]");
  ASSERT_TRUE(img) << img.error();
  const Image& v = **img;
  EXPECT_EQ(v.name(), "[vdso]");
  EXPECT_FALSE(v.eh_frame_hdr().empty());
  EXPECT_FALSE(v.eh_frame().empty());

  // The dynamic loader knows the vDSO as linux-vdso.so.1; its dlsym answer is independent.
  void* handle = dlopen("linux-vdso.so.1", RTLD_NOLOAD | RTLD_LAZY);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* fn = dlvsym(handle, "__vdso_clock_gettime", "LINUX_2.6");
  if (fn == nullptr) fn = dlsym(handle, "__vdso_clock_gettime");
  ASSERT_NE(fn, nullptr);
  auto vdso = find_loaded("linux-vdso");
  ASSERT_FALSE(vdso.name.empty());
  const uint64_t link = reinterpret_cast<uint64_t>(fn) - vdso.bias;
  auto sym = v.symbolize(link);
  ASSERT_TRUE(sym) << "no symbol at vDSO+" << std::hex << link;
  EXPECT_TRUE(sym->name == "__vdso_clock_gettime" || sym->name == "clock_gettime") << sym->name;
  EXPECT_EQ(sym->start, link);
  // __vdso_clock_gettime is GLOBAL, clock_gettime a WEAK alias: the global name wins.
  EXPECT_EQ(sym->name, "__vdso_clock_gettime");
  EXPECT_TRUE(v.is_executable(link));
  dlclose(handle);
}

TEST(ElfMemory, ErrorsAreOneLine) {
  ehbt::BufferMemory empty;
  auto none = Image::from_memory(empty, 0x1000, "x");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), "cannot read ELF header at 0x1000");

  ehbt::BufferMemory junk;
  junk.add(0x1000, std::vector<std::byte>(64, std::byte{0x41}));
  auto bad = Image::from_memory(junk, 0x1000, "x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "not an ELF image at 0x1000");

  // A real ELF header whose program headers are not mapped.
  auto bytes = elf_test::read_file("/bin/true");
  ehbt::BufferMemory hdr_only;
  hdr_only.add(0x400000, std::vector<std::byte>(bytes.begin(), bytes.begin() + 64));
  auto trunc = Image::from_memory(hdr_only, 0x400000, "x");
  ASSERT_FALSE(trunc);
  EXPECT_EQ(trunc.error().rfind("cannot read program headers", 0), 0u) << trunc.error();
}

// A whole file laid out in BufferMemory the way a loader maps it (each PT_LOAD at its vaddr +
// bias) rebuilds the same unwind sections as the file.
TEST(ElfMemory, MappedFileInBufferMemory) {
  const std::string path = "/bin/true";
  auto file = Image::open(path);
  ASSERT_TRUE(file) << file.error();
  auto bytes = elf_test::read_file(path);
  const uint64_t bias = 0x5555'0000'0000ull;
  ehbt::BufferMemory mem;
  for (const auto& s : (*file)->segments()) {
    std::vector<std::byte> seg(s.memsz);
    std::memcpy(seg.data(), bytes.data() + s.offset, s.filesz);
    mem.add(s.vaddr + bias, std::move(seg));
  }
  auto img = Image::from_memory(mem, (*file)->min_vaddr() + bias, "true");
  ASSERT_TRUE(img) << img.error();
  EXPECT_EQ((*img)->eh_frame_hdr().addr, (*file)->eh_frame_hdr().addr);
  EXPECT_EQ((*img)->eh_frame().addr, (*file)->eh_frame().addr);
  EXPECT_EQ((*img)->build_id(), (*file)->build_id());

  // A budget smaller than .eh_frame truncates it instead of failing.
  ehbt::Limits small;
  small.max_image_bytes = 4096;
  auto capped = Image::from_memory(mem, (*file)->min_vaddr() + bias, "true", small);
  ASSERT_TRUE(capped) << capped.error();
  EXPECT_LE((*capped)->eh_frame().bytes.size() + (*capped)->eh_frame_hdr().bytes.size(), 4096u);

  // Every Nth read failing, or every read short, never crashes: an image or an error.
  for (uint64_t n = 1; n <= 12; ++n) {
    for (bool short_reads : {false, true}) {
      ehbt::FaultyMemory faulty(mem, n, short_reads);
      auto r = Image::from_memory(faulty, (*file)->min_vaddr() + bias, "true");
      if (r) {
        EXPECT_EQ((*r)->arch(), ehbt::Arch::X86_64);
        // Whatever was read is a prefix of the real bytes.
        const auto& got = (*r)->eh_frame().bytes;
        const auto& want = (*file)->eh_frame().bytes;
        if (!got.empty()) {
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), std::min(got.size(), want.size())));
        }
      } else {
        EXPECT_EQ(r.error().find('\n'), std::string::npos);
      }
    }
  }
}

}  // namespace
