// SPDX-License-Identifier: Apache-2.0
// Hostile inputs: truncated files, random byte flips and crafted headers must give either an
// image or a one-line error, never a crash. Run under ASan+UBSan (EHBT_SANITIZE) to make
// out-of-bounds reads visible.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"
#include "elf_test_util.hpp"

namespace {

using ehbt::Image;

// Touches everything an image hands out, so a bad span shows up as a sanitizer error.
unsigned exercise(const Image& img) {
  unsigned sum = 0;
  for (const ehbt::SectionRef& s :
       {img.eh_frame_hdr(), img.eh_frame(), img.debug_frame(), img.sframe(), img.dynamic()}) {
    for (std::byte b : s.bytes) sum += std::to_integer<unsigned>(b);
  }
  std::vector<std::byte> buf(64);
  std::size_t guard = 0;
  for (const ehbt::Segment& seg : img.segments()) {
    if (++guard > 64) break;
    sum += static_cast<unsigned>(img.read(seg.vaddr, buf));
    sum += static_cast<unsigned>(img.read(seg.vaddr + seg.memsz - 1, buf));
    sum += img.is_executable(seg.vaddr) ? 1 : 0;
    if (auto s = img.symbolize(seg.vaddr + seg.memsz / 2)) sum += static_cast<unsigned>(s->size);
  }
  if (auto s = img.symbolize(img.entry())) sum += static_cast<unsigned>(s->name.size());
  sum += static_cast<unsigned>(img.build_id().size());
  return sum;
}

void expect_image_or_error(std::vector<std::byte> bytes, const std::string& what) {
  auto r = Image::from_bytes(std::move(bytes), what);
  if (r) {
    exercise(**r);
  } else {
    EXPECT_FALSE(r.error().empty()) << what;
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << what << ": " << r.error();
  }
}

std::vector<std::byte> real_binary() {
  return elf_test::read_file("/bin/true");
}

TEST(ElfHostile, TruncatedAtEverySeventhByteOfTheFirst4KiB) {
  auto full = real_binary();
  ASSERT_GT(full.size(), 8192u);
  int images = 0, errors = 0;
  for (std::size_t len = 0; len <= 4096; len += 7) {
    std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    auto r = Image::from_bytes(cut, "cut");
    if (r) {
      ++images;
      exercise(**r);
    } else {
      ++errors;
      EXPECT_EQ(r.error().find('\n'), std::string::npos);
    }
  }
  // Too short for a header: an error; long enough for headers: an image without section data.
  EXPECT_GT(errors, 0);
  EXPECT_GT(images, 0);
  auto tiny = Image::from_bytes(std::vector<std::byte>(full.begin(), full.begin() + 20), "t");
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error(), "truncated ELF header");
}

TEST(ElfHostile, TruncatedInTheSectionHeaderTable) {
  auto full = real_binary();
  const std::size_t start = full.size() > 4096 ? full.size() - 4096 : 0;
  for (std::size_t len = start; len < full.size(); len += 7) {
    expect_image_or_error(
        std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len)),
        "tail-cut");
  }
}

TEST(ElfHostile, TruncatedFilesOnDisk) {
  auto full = real_binary();
  elf_test::TempDir dir;
  const std::string path = dir / "cut";
  for (std::size_t len : {std::size_t{0}, std::size_t{63}, std::size_t{64}, std::size_t{120},
                          std::size_t{1000}, full.size() / 2, full.size() - 1}) {
    ASSERT_TRUE(elf_test::write_file(
        path,
        std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len))));
    auto r = Image::open(path);
    if (r) {
      exercise(**r);
    } else {
      EXPECT_EQ(r.error().find('\n'), std::string::npos);
    }
  }
}

TEST(ElfHostile, RandomFlipsInTheHeaderRegion) {
  auto full = real_binary();
  std::mt19937_64 rng(0x5eed);
  for (int iter = 0; iter < 1500; ++iter) {
    auto copy = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      std::size_t pos = rng() % 1024;  // ELF header and program headers
      copy[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    // Keep the magic most of the time so the parser gets past it.
    if (iter % 4 != 0) std::memcpy(copy.data(), ELFMAG, SELFMAG);
    expect_image_or_error(std::move(copy), "flip");
  }
}

TEST(ElfHostile, RandomFlipsInTheSectionHeaders) {
  auto full = real_binary();
  Elf64_Ehdr eh;
  std::memcpy(&eh, full.data(), sizeof eh);
  ASSERT_GT(eh.e_shoff, 0u);
  const std::size_t table = eh.e_shnum * sizeof(Elf64_Shdr);
  ASSERT_LE(eh.e_shoff + table, full.size());
  std::mt19937_64 rng(0xfeed);
  for (int iter = 0; iter < 1500; ++iter) {
    auto copy = full;
    for (int f = 0; f < 4; ++f) {
      std::size_t pos = eh.e_shoff + rng() % table;
      copy[pos] = static_cast<std::byte>(rng());
    }
    expect_image_or_error(std::move(copy), "shdr-flip");
  }
}

// Crafted values at the edges: counts, offsets and sizes that overflow or leave the file.
TEST(ElfHostile, CraftedHeaders) {
  auto full = real_binary();
  auto with_ehdr = [&](auto edit) {
    auto copy = full;
    Elf64_Ehdr eh;
    std::memcpy(&eh, copy.data(), sizeof eh);
    edit(eh);
    std::memcpy(copy.data(), &eh, sizeof eh);
    return copy;
  };
  auto check_error = [](std::vector<std::byte> bytes, const std::string& want) {
    auto r = Image::from_bytes(std::move(bytes), "crafted");
    ASSERT_FALSE(r) << want;
    EXPECT_EQ(r.error(), want);
  };
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_phoff = UINT64_MAX - 8; }),
              "truncated program headers");
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_phnum = 0xfffe; }), "truncated program headers");
  // A count the file could hold (padded to fit) but no real object has:
  // Limits::max_program_headers.
  auto padded = with_ehdr([](Elf64_Ehdr& e) {
    e.e_phoff = 64;
    e.e_phnum = 1171;
  });
  padded.resize(64 + 1171 * sizeof(Elf64_Phdr));
  check_error(padded, "too many program headers 1171");
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_phentsize = 12; }),
              "bad program header entry size 12");
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_ident[EI_CLASS] = 7; }), "unsupported ELF class 7");
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_ident[EI_DATA] = 3; }),
              "unsupported ELF byte order 3");
  check_error(with_ehdr([](Elf64_Ehdr& e) { e.e_machine = 40; }), "unsupported machine 40");

  // Section headers past EOF: ignored, program headers still give the unwind tables.
  for (uint64_t shoff : {uint64_t{full.size()}, UINT64_MAX - 100, uint64_t{1} << 62}) {
    auto bytes = with_ehdr([&](Elf64_Ehdr& e) { e.e_shoff = shoff; });
    auto r = Image::from_bytes(bytes, "shoff");
    ASSERT_TRUE(r) << r.error();
    EXPECT_FALSE((*r)->eh_frame_hdr().empty());
    EXPECT_FALSE((*r)->eh_frame().empty());
    exercise(**r);
  }
  expect_image_or_error(with_ehdr([](Elf64_Ehdr& e) { e.e_shnum = 0xffff; }), "shnum");
  expect_image_or_error(with_ehdr([](Elf64_Ehdr& e) { e.e_shstrndx = 0xfff0; }), "shstrndx");
  expect_image_or_error(with_ehdr([](Elf64_Ehdr& e) { e.e_phnum = PN_XNUM; }), "pn_xnum");
}

TEST(ElfHostile, CraftedProgramHeaders) {
  auto full = real_binary();
  Elf64_Ehdr eh;
  std::memcpy(&eh, full.data(), sizeof eh);
  auto with_phdr = [&](uint32_t type, auto edit) {
    auto copy = full;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      std::byte* at = copy.data() + eh.e_phoff + i * sizeof ph;
      std::memcpy(&ph, at, sizeof ph);
      if (ph.p_type == type) edit(ph);
      std::memcpy(at, &ph, sizeof ph);
    }
    return copy;
  };
  const std::vector<uint64_t> hostile = {UINT64_MAX, UINT64_MAX - 4095, uint64_t{1} << 63,
                                         full.size(), full.size() + 1};
  for (uint64_t v : hostile) {
    for (uint32_t type :
         {uint32_t{PT_LOAD}, uint32_t{PT_GNU_EH_FRAME}, uint32_t{PT_NOTE}, uint32_t{PT_DYNAMIC}}) {
      expect_image_or_error(with_phdr(type, [&](Elf64_Phdr& p) { p.p_offset = v; }), "off");
      expect_image_or_error(with_phdr(type, [&](Elf64_Phdr& p) { p.p_filesz = v; }), "filesz");
      expect_image_or_error(with_phdr(type, [&](Elf64_Phdr& p) { p.p_memsz = v; }), "memsz");
      expect_image_or_error(with_phdr(type, [&](Elf64_Phdr& p) { p.p_vaddr = v; }), "vaddr");
      expect_image_or_error(with_phdr(type, [&](Elf64_Phdr& p) { p.p_align = v; }), "align");
    }
  }
}

// The same hostility through target memory: a mapped image with flipped header bytes.
TEST(ElfHostile, FromMemoryWithFlips) {
  auto full = real_binary();
  std::mt19937_64 rng(0xabc);
  for (int iter = 0; iter < 600; ++iter) {
    auto copy = full;
    for (int f = 0; f < 3; ++f) copy[rng() % 1024] ^= static_cast<std::byte>(1u << (rng() % 8));
    std::memcpy(copy.data(), ELFMAG, SELFMAG);
    ehbt::BufferMemory mem;
    // The file as one flat mapping: enough for the header walk to find something.
    mem.add(0x400000, copy);
    ehbt::Limits limits;
    limits.max_image_bytes = 1u << 20;
    auto r = Image::from_memory(mem, 0x400000, "flip", limits);
    if (r) {
      exercise(**r);
    } else {
      EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
    }
  }
}

}  // namespace
