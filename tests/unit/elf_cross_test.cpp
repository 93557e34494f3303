// SPDX-License-Identifier: Apache-2.0
// Images of the other first-class architectures, built with the installed cross compilers:
// aarch64 (little-endian) and s390x (big-endian; section bytes stay in file byte order).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "ehbt/image.hpp"
#include "elf_test_util.hpp"

namespace {

using ehbt::Image;

constexpr const char* kSource = R"(
int ehbt_cross_add(int a, int b) { return a * 7 + b; }
int main(int argc, char** argv) { (void)argv; return ehbt_cross_add(argc, 3); }
)";

struct CrossCase {
  const char* compiler;
  ehbt::Arch arch;
  bool big_endian;
  uint16_t machine;
};

class ElfCross : public ::testing::TestWithParam<CrossCase> {};

TEST_P(ElfCross, ArchEndiannessAndUnwindSections) {
  const CrossCase& c = GetParam();
  elf_test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string src = dir / "cross.c";
  const std::string exe = dir / "cross";
  {
    std::ofstream out(src);
    out << kSource;
  }
  // The compilers are part of the toolchain this project requires: a failure here is a failure.
  const std::string cmd = std::string(c.compiler) + " -O1 -o '" + exe + "' '" + src + "'";
  ASSERT_EQ(elf_test::run_status(cmd), 0) << cmd;

  auto img = Image::open(exe);
  ASSERT_TRUE(img) << img.error();
  const Image& i = **img;
  EXPECT_EQ(i.arch(), c.arch);
  EXPECT_EQ(i.big_endian(), c.big_endian);
  EXPECT_EQ(i.address_size(), 8);
  EXPECT_FALSE(i.eh_frame().empty());
  EXPECT_FALSE(i.eh_frame_hdr().empty());
  EXPECT_EQ(i.build_id(), elf_test::readelf_build_id(exe));

  // Section bytes are the raw file bytes, whatever the byte order.
  auto sections = elf_test::readelf_sections(exe);
  auto file = elf_test::read_file(exe);
  const auto& ehf = sections.at(".eh_frame");
  EXPECT_EQ(i.eh_frame().addr, ehf.addr);
  ASSERT_EQ(i.eh_frame().bytes.size(), ehf.size);
  EXPECT_EQ(0, std::memcmp(i.eh_frame().bytes.data(), file.data() + ehf.offset, ehf.size));
  // The eh_frame_hdr's version byte is 1 in any byte order.
  EXPECT_EQ(std::to_integer<int>(i.eh_frame_hdr().bytes[0]), 1);

  // e_entry decoded in the file's byte order matches readelf.
  std::string hdr = elf_test::run("readelf -hW '" + exe + "'");
  auto pos = hdr.find("Entry point address:");
  ASSERT_NE(pos, std::string::npos);
  EXPECT_EQ(i.entry(), std::stoull(hdr.substr(pos + 20), nullptr, 16));

  // Symbols through libelf's byte-order conversion, against the cross nm's view.
  const std::string compiler = c.compiler;
  const std::string nm = compiler.substr(0, compiler.size() - 3) + "nm";
  int found = 0;
  for (const auto& s : elf_test::nm_symbols(exe, false, nm)) {
    if (s.name != "ehbt_cross_add") continue;
    ++found;
    auto sym = i.symbolize(s.start + 1);
    ASSERT_TRUE(sym);
    EXPECT_EQ(sym->name, "ehbt_cross_add");
    EXPECT_EQ(sym->start, s.start);
    EXPECT_EQ(sym->size, s.size);
  }
  EXPECT_EQ(found, 1) << nm;

  // Without section headers the program headers still lead to .eh_frame.
  // Zero e_shoff (8 bytes at 40), e_shnum and e_shstrndx (2 + 2 at 60): zero in any order.
  auto copy = file;
  std::memset(copy.data() + 40, 0, 8);
  std::memset(copy.data() + 60, 0, 4);
  auto stripped = Image::from_bytes(copy, "stripped");
  ASSERT_TRUE(stripped) << stripped.error();
  EXPECT_EQ((*stripped)->eh_frame().addr, ehf.addr);
  EXPECT_EQ((*stripped)->eh_frame_hdr().addr, sections.at(".eh_frame_hdr").addr);
  EXPECT_EQ((*stripped)->build_id(), i.build_id());
}

INSTANTIATE_TEST_SUITE_P(
    Compilers, ElfCross,
    ::testing::Values(CrossCase{"aarch64-linux-gnu-gcc", ehbt::Arch::AArch64, false, EM_AARCH64},
                      CrossCase{"s390x-linux-gnu-gcc", ehbt::Arch::S390x, true, EM_S390}),
    [](const auto& info) {
      return std::string(info.param.arch == ehbt::Arch::S390x ? "s390x" : "aarch64");
    });

}  // namespace
