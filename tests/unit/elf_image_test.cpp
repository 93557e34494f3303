// SPDX-License-Identifier: Apache-2.0
// Image::open on real files, checked against what binutils' readelf reports.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>

#include "ehbt/image.hpp"
#include "elf_test_util.hpp"

namespace {

using ehbt::Image;
using ehbt::SectionRef;
using elf_test::readelf_sections;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

std::shared_ptr<Image> open_or_fail(const std::string& path) {
  auto img = Image::open(path);
  EXPECT_TRUE(img.has_value()) << path << ": " << (img ? "" : img.error());
  return img ? *img : nullptr;
}

// The section as readelf reports it must be what the image hands out, byte for byte.
void expect_section_matches(const std::string& path, const SectionRef& ref,
                            const std::string& name) {
  auto sections = readelf_sections(path);
  auto it = sections.find(name);
  ASSERT_NE(it, sections.end()) << name << " not in readelf output of " << path;
  if (name != ".debug_frame") {
    EXPECT_EQ(ref.addr, it->second.addr) << name;
  }
  ASSERT_EQ(ref.bytes.size(), it->second.size) << name;
  auto file = elf_test::read_file(path);
  ASSERT_LE(it->second.offset + it->second.size, file.size());
  EXPECT_EQ(0, std::memcmp(ref.bytes.data(), file.data() + it->second.offset, ref.bytes.size()))
      << name;
}

TEST(ElfImage, LibcHeaderFacts) {
  auto img = open_or_fail(kLibc);
  ASSERT_TRUE(img);
  EXPECT_EQ(img->name(), kLibc);
  EXPECT_EQ(img->arch(), ehbt::Arch::X86_64);
  EXPECT_FALSE(img->big_endian());
  EXPECT_EQ(img->address_size(), 8);
  EXPECT_EQ(img->elf_type(), ET_DYN);
  EXPECT_EQ(img->min_vaddr(), 0u);
  std::string expected_id = elf_test::readelf_build_id(kLibc);
  ASSERT_EQ(expected_id.size(), 40u);
  EXPECT_EQ(img->build_id(), expected_id);
}

TEST(ElfImage, LibcSectionsEqualReadelf) {
  auto img = open_or_fail(kLibc);
  ASSERT_TRUE(img);
  expect_section_matches(kLibc, img->eh_frame_hdr(), ".eh_frame_hdr");
  expect_section_matches(kLibc, img->eh_frame(), ".eh_frame");
  expect_section_matches(kLibc, img->dynamic(), ".dynamic");
  EXPECT_TRUE(img->debug_frame().empty());
}

TEST(ElfImage, LibcSegmentsEqualReadelf) {
  auto img = open_or_fail(kLibc);
  ASSERT_TRUE(img);
  // "  LOAD 0x000000 0x0000000000000000 0x0000000000000000 0x026c48 0x026c48 R   0x1000"
  std::istringstream in(elf_test::run(std::string("readelf -lW ") + kLibc));
  std::vector<ehbt::Segment> expected;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string type, off, vaddr, paddr, filesz, memsz;
    ls >> type;
    if (type != "LOAD") continue;
    ls >> off >> vaddr >> paddr >> filesz >> memsz;
    std::string rest, flags;
    while (ls >> rest) {
      if (rest.rfind("0x", 0) != 0) flags += rest;
    }
    ehbt::Segment s;
    s.offset = std::stoull(off, nullptr, 16);
    s.vaddr = std::stoull(vaddr, nullptr, 16);
    s.filesz = std::stoull(filesz, nullptr, 16);
    s.memsz = std::stoull(memsz, nullptr, 16);
    s.flags = (flags.find('R') != std::string::npos ? PF_R : 0) |
              (flags.find('W') != std::string::npos ? PF_W : 0) |
              (flags.find('E') != std::string::npos ? PF_X : 0);
    expected.push_back(s);
  }
  ASSERT_GE(expected.size(), 2u);
  ASSERT_EQ(img->segments().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(img->segments()[i].vaddr, expected[i].vaddr) << i;
    EXPECT_EQ(img->segments()[i].offset, expected[i].offset) << i;
    EXPECT_EQ(img->segments()[i].filesz, expected[i].filesz) << i;
    EXPECT_EQ(img->segments()[i].memsz, expected[i].memsz) << i;
    EXPECT_EQ(img->segments()[i].flags, expected[i].flags) << i;
  }
}

TEST(ElfImage, ReadAndExecutableFollowSegments) {
  auto img = open_or_fail(kLibc);
  ASSERT_TRUE(img);
  auto sections = readelf_sections(kLibc);
  auto file = elf_test::read_file(kLibc);
  const auto& text = sections.at(".text");
  const auto& rodata = sections.at(".rodata");
  EXPECT_TRUE(img->is_executable(text.addr));
  EXPECT_TRUE(img->is_executable(text.addr + text.size - 1));
  EXPECT_FALSE(img->is_executable(rodata.addr));
  EXPECT_FALSE(img->is_executable(0xffffffff00000000ull));

  std::vector<std::byte> buf(256);
  ASSERT_EQ(img->read(text.addr + 100, buf), buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), file.data() + text.offset + 100, buf.size()));

  // .bss reads as zeros; past the last segment the read is short.
  const auto& bss = sections.at(".bss");
  std::vector<std::byte> z(16, std::byte{0xaa});
  ASSERT_EQ(img->read(bss.addr, z), z.size());
  for (std::byte b : z) EXPECT_EQ(b, std::byte{0});
  const auto& last = img->segments().back();
  std::vector<std::byte> tail(64);
  EXPECT_EQ(img->read(last.vaddr + last.memsz - 10, tail), 10u);
  EXPECT_EQ(img->read(last.vaddr + last.memsz + 0x100000, tail), 0u);
}

TEST(ElfImage, StrippedLsHasOnlyDynsym) {
  const std::string ls = "/bin/ls";
  auto sections = readelf_sections(ls);
  ASSERT_EQ(sections.count(".symtab"), 0u) << "/bin/ls is expected to be stripped";
  ASSERT_EQ(sections.count(".dynsym"), 1u);
  auto img = open_or_fail(ls);
  ASSERT_TRUE(img);
  expect_section_matches(ls, img->eh_frame_hdr(), ".eh_frame_hdr");
  expect_section_matches(ls, img->eh_frame(), ".eh_frame");
  EXPECT_EQ(img->build_id(), elf_test::readelf_build_id(ls));

  // Every defined, sized function of .dynsym at an address no other symbol shares resolves to
  // its own name, at its start and at its last byte, and not one byte past its end unless
  // another symbol starts there.
  auto syms = elf_test::nm_symbols(ls, /*dynamic=*/true);
  std::map<uint64_t, int> per_addr;
  for (const auto& s : syms) per_addr[s.start]++;
  int checked = 0;
  for (const auto& s : syms) {
    if ((s.kind != 'T' && s.kind != 't') || s.size == 0 || per_addr[s.start] != 1) continue;
    std::string name = s.name.substr(0, s.name.find('@'));
    auto at_start = img->symbolize(s.start);
    ASSERT_TRUE(at_start.has_value()) << name;
    EXPECT_EQ(at_start->name, name);
    EXPECT_EQ(at_start->start, s.start);
    EXPECT_EQ(at_start->size, s.size);
    auto at_end = img->symbolize(s.start + s.size - 1);
    ASSERT_TRUE(at_end.has_value()) << name;
    EXPECT_EQ(at_end->name, name);
    ++checked;
  }
  EXPECT_GT(checked, 3);
}

TEST(ElfImage, SelfExeSectionsEqualReadelf) {
  const std::string exe = elf_test::self_exe();
  auto img = open_or_fail("/proc/self/exe");
  ASSERT_TRUE(img);
  expect_section_matches(exe, img->eh_frame_hdr(), ".eh_frame_hdr");
  expect_section_matches(exe, img->eh_frame(), ".eh_frame");
  expect_section_matches(exe, img->dynamic(), ".dynamic");
  EXPECT_EQ(img->build_id(), elf_test::readelf_build_id(exe));
  auto sections = readelf_sections(exe);
  if (sections.count(".debug_frame")) {
    // Uncompressed in this build: raw bytes at address 0.
    EXPECT_EQ(img->debug_frame().addr, 0u);
    EXPECT_EQ(img->debug_frame().bytes.size(), sections.at(".debug_frame").size);
  }
}

// A copy of /bin/true whose section header table is gone still gives the unwind tables at
// the addresses the original's section headers name.
TEST(ElfImage, WithoutSectionHeadersUsesProgramHeaders) {
  const std::string orig = "/bin/true";
  auto bytes = elf_test::read_file(orig);
  ASSERT_GT(bytes.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(bytes.data(), &eh, sizeof eh);
  elf_test::TempDir dir;
  const std::string copy = dir / "true-noshdr";
  ASSERT_TRUE(elf_test::write_file(copy, bytes));

  auto sections = readelf_sections(orig);
  auto img = open_or_fail(copy);
  ASSERT_TRUE(img);
  const auto& hdr = sections.at(".eh_frame_hdr");
  const auto& ehf = sections.at(".eh_frame");
  EXPECT_EQ(img->eh_frame_hdr().addr, hdr.addr);
  EXPECT_EQ(img->eh_frame_hdr().bytes.size(), hdr.size);
  EXPECT_EQ(img->eh_frame().addr, ehf.addr);
  // Bounded by the end of the segment that holds it: at least the section itself.
  EXPECT_GE(img->eh_frame().bytes.size(), ehf.size);
  EXPECT_EQ(0, std::memcmp(img->eh_frame().bytes.data(), bytes.data() + ehf.offset, ehf.size));
  EXPECT_EQ(img->dynamic().addr, sections.at(".dynamic").addr);
  EXPECT_EQ(img->build_id(), elf_test::readelf_build_id(orig));

  // The same through from_bytes.
  auto mem = Image::from_bytes(bytes, "true-noshdr");
  ASSERT_TRUE(mem) << mem.error();
  EXPECT_EQ((*mem)->eh_frame().addr, ehf.addr);
  EXPECT_EQ((*mem)->eh_frame_hdr().bytes.size(), hdr.size);
}

TEST(ElfImage, Errors) {
  auto missing = Image::open("/nonexistent/ehbt/file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().find('\n'), std::string::npos);

  auto text = Image::from_bytes(std::vector<std::byte>(100, std::byte{'x'}), "junk");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error(), "not an ELF file");

  auto dir = Image::open("/");
  EXPECT_FALSE(dir);

  // A valid header for a machine ehbt does not unwind (EM_SPARC = 2).
  auto bytes = elf_test::read_file("/bin/true");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  eh.e_machine = EM_SPARC;
  std::memcpy(bytes.data(), &eh, sizeof eh);
  auto sparc = Image::from_bytes(bytes, "sparc");
  ASSERT_FALSE(sparc);
  EXPECT_EQ(sparc.error(), "unsupported machine 2");
}

}  // namespace

namespace {

// A program without unwind tables, whose frames gcc then describes in .debug_frame, built by
// `compiler` into `dir`; its path.
std::string build_debug_frame_program(const elf_test::TempDir& dir, const std::string& compiler) {
  const std::string src = dir / "df.c";
  {
    std::ofstream out(src);
    out << "int ehbt_df(int a) { return a * 3; }\nint main(int c, char** v) { (void)v; "
           "return ehbt_df(c); }\n";
  }
  const std::string plain = dir / ("plain-" + compiler);
  const int status = elf_test::run_status(
      compiler + " -g -O1 -fno-asynchronous-unwind-tables -fno-unwind-tables -o '" + plain + "' '" +
      src + "'");
  return status == 0 ? plain : std::string();
}

// .debug_frame compressed by objcopy (ELF SHF_COMPRESSED, and the older GNU .zdebug_frame)
// comes out decompressed and equal to the section of the uncompressed original, for the
// three layouts of the compression header: ELF64 and ELF32 little-endian, ELF64 big-endian.
TEST(ElfImage, CompressedDebugFrameIsDecompressed) {
  struct Toolchain {
    const char* compiler;
    const char* objcopy;
    bool big_endian;
    int address_size;
  };
  for (const Toolchain& t :
       {Toolchain{"cc", "objcopy", false, 8},
        Toolchain{"i686-linux-gnu-gcc", "i686-linux-gnu-objcopy", false, 4},
        Toolchain{"s390x-linux-gnu-gcc", "s390x-linux-gnu-objcopy", true, 8}}) {
    SCOPED_TRACE(t.compiler);
    elf_test::TempDir dir;
    const std::string plain = build_debug_frame_program(dir, t.compiler);
    ASSERT_FALSE(plain.empty());
    auto sections = readelf_sections(plain);
    ASSERT_EQ(sections.count(".debug_frame"), 1u);
    const auto& df = sections.at(".debug_frame");
    auto plain_bytes = elf_test::read_file(plain);
    std::vector<std::byte> want(
        plain_bytes.begin() + static_cast<std::ptrdiff_t>(df.offset),
        plain_bytes.begin() + static_cast<std::ptrdiff_t>(df.offset + df.size));

    for (const std::string style : {"zlib", "zlib-gnu"}) {
      const std::string packed = dir / ("packed-" + style);
      ASSERT_EQ(elf_test::run_status(std::string(t.objcopy) + " --compress-debug-sections=" +
                                     style + " '" + plain + "' '" + packed + "'"),
                0);
      auto img = open_or_fail(packed);
      ASSERT_TRUE(img);
      EXPECT_EQ(img->big_endian(), t.big_endian);
      EXPECT_EQ(img->address_size(), t.address_size);
      const SectionRef got = img->debug_frame();
      EXPECT_EQ(got.addr, 0u) << style;
      ASSERT_EQ(got.bytes.size(), want.size()) << style;
      EXPECT_EQ(0, std::memcmp(got.bytes.data(), want.data(), want.size())) << style;
    }
  }
}

// Where the compressed section is not what its header says, the section is left empty (the
// image opens, and .eh_frame-less frames there then have no table), never half a section or
// bytes past the stream: a stated size one byte short or long, a byte of the stream flipped
// (the Adler-32 check fails, or the stream breaks), the checksum itself flipped, another
// compression type, a stream cut short, and a cap below the inflated size.
TEST(ElfImage, DamagedCompressedDebugFrameIsLeftEmpty) {
  elf_test::TempDir dir;
  const std::string plain = build_debug_frame_program(dir, "cc");
  ASSERT_FALSE(plain.empty());
  const std::string packed = dir / "packed";
  ASSERT_EQ(elf_test::run_status("objcopy --compress-debug-sections=zlib '" + plain + "' '" +
                                 packed + "'"),
            0);
  const auto good = elf_test::read_file(packed);
  const auto df = readelf_sections(packed).at(".debug_frame");
  ASSERT_GT(df.size, sizeof(Elf64_Chdr) + 8);
  Elf64_Chdr chdr;
  std::memcpy(&chdr, good.data() + df.offset, sizeof chdr);
  ASSERT_EQ(chdr.ch_type, static_cast<uint32_t>(ELFCOMPRESS_ZLIB));
  {
    auto img = open_or_fail(packed);
    ASSERT_TRUE(img);
    ASSERT_EQ(img->debug_frame().bytes.size(), chdr.ch_size);  // the undamaged file inflates
  }

  using Damage = std::function<void(std::vector<std::byte>&)>;
  const std::size_t stream = df.offset + sizeof(Elf64_Chdr);
  const std::size_t stream_end = df.offset + df.size;
  auto set_header = [&](std::vector<std::byte>& f, Elf64_Chdr h) {
    std::memcpy(f.data() + df.offset, &h, sizeof h);
  };
  const std::vector<std::pair<const char*, Damage>> damages = {
      {"size one short",
       [&](auto& f) {
         Elf64_Chdr h = chdr;
         --h.ch_size;
         set_header(f, h);
       }},
      {"size one long",
       [&](auto& f) {
         Elf64_Chdr h = chdr;
         ++h.ch_size;
         set_header(f, h);
       }},
      {"zero size",
       [&](auto& f) {
         Elf64_Chdr h = chdr;
         h.ch_size = 0;
         set_header(f, h);
       }},
      {"zstd type",
       [&](auto& f) {
         Elf64_Chdr h = chdr;
         h.ch_type = 2;  // ELFCOMPRESS_ZSTD
         set_header(f, h);
       }},
      {"stream byte flipped", [&](auto& f) { f[(stream + stream_end) / 2] ^= std::byte{0x5a}; }},
      {"checksum flipped", [&](auto& f) { f[stream_end - 1] ^= std::byte{0x01}; }},
      {"zlib header flipped", [&](auto& f) { f[stream] ^= std::byte{0x0f}; }},
      {"stream cut short",
       [&](auto& f) {
         for (std::size_t i = stream + (stream_end - stream) / 2; i < stream_end; ++i)
           f[i] = std::byte{0};
       }},
  };
  for (const auto& [what, damage] : damages) {
    auto bytes = good;
    damage(bytes);
    const std::string path = dir / "damaged";
    ASSERT_TRUE(elf_test::write_file(path, bytes));
    auto img = Image::open(path);
    ASSERT_TRUE(img) << what << ": " << img.error();
    EXPECT_TRUE((*img)->debug_frame().empty()) << what;
    EXPECT_EQ((*img)->build_id(), elf_test::readelf_build_id(packed)) << what;  // still read
  }

  // A cap below the uncompressed size leaves the section empty rather than inflating it.
  ehbt::Limits tiny;
  tiny.max_image_bytes = 8;
  auto capped = Image::open(packed, tiny);
  ASSERT_TRUE(capped) << capped.error();
  EXPECT_TRUE((*capped)->debug_frame().empty());
}

}  // namespace
