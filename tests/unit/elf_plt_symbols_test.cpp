// SPDX-License-Identifier: Apache-2.0
// NAME@plt symbols synthesised from the PLT relocations, checked against binutils' objdump,
// which labels every stub (`0000000000001030 <raise@plt>:`) by its own, separate logic.
// Real binaries from the installed compilers: lazy .plt on all four architectures, IBT's
// .plt.sec, and .plt.got (a function both called and address-taken) on x86-64 and i386.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "ehbt/image.hpp"
#include "elf_test_util.hpp"

namespace {

using ehbt::Image;

constexpr const char* kSource = R"(
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int (*volatile keep_puts)(const char*) = puts;  /* address-taken and called: .plt.got */
int main(int argc, char** argv) {
  if (argc > 5) raise(SIGUSR1);
  printf("%d\n", (int)getppid());
  keep_puts(argv[0]);
  puts(strchr(argv[0], '/') ? "x" : "y");
  return (int)strlen(argv[0]) + atoi("1");
}
)";

struct PltCase {
  const char* name;
  const char* compiler;
  const char* flags;
  const char* binutils;  // prefix of objdump and strip
};

class PltSymbols : public ::testing::TestWithParam<PltCase> {};

TEST_P(PltSymbols, EveryStubObjdumpLabelsIsNamedTheSame) {
  const PltCase& c = GetParam();
  elf_test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string src = dir / "plt.c";
  const std::string exe = dir / "plt";
  {
    std::ofstream out(src);
    out << kSource;
  }
  const std::string cmd =
      std::string(c.compiler) + " -O1 " + c.flags + " -o '" + exe + "' '" + src + "'";
  ASSERT_EQ(elf_test::run_status(cmd), 0) << cmd;
  // Stripped: the names must come from the relocations, not from any symbol table.
  ASSERT_EQ(elf_test::run_status(std::string(c.binutils) + "strip -s '" + exe + "'"), 0);
  const std::string dump =
      elf_test::run(std::string(c.binutils) + "objdump -d -j .plt -j .plt.sec " + "-j .plt.got '" +
                    exe + "' 2>/dev/null");
  const std::regex label(R"(^([0-9a-f]+) <([A-Za-z_][A-Za-z0-9_]*)@plt>:)");
  std::istringstream lines(dump);
  std::string line;
  std::size_t stubs = 0;
  auto img = Image::open(exe);
  ASSERT_TRUE(img) << img.error();
  for (std::smatch m; std::getline(lines, line);) {
    if (!std::regex_search(line, m, label)) continue;
    const uint64_t addr = std::stoull(m[1].str(), nullptr, 16);
    const std::string want = m[2].str() + "@plt";
    for (uint64_t at : {addr, addr + 4}) {  // the stub's first byte and one inside it
      auto sym = (*img)->symbolize(at);
      ASSERT_TRUE(sym.has_value()) << want << " at 0x" << std::hex << at;
      EXPECT_EQ(sym->name, want) << "at 0x" << std::hex << at;
      EXPECT_EQ(sym->start, addr) << want;
    }
    ++stubs;
  }
  EXPECT_GE(stubs, 5u) << "objdump labelled too few stubs:\n" << dump;
}

INSTANTIATE_TEST_SUITE_P(
    Toolchains, PltSymbols,
    ::testing::Values(
        PltCase{"x86_64_lazy", "gcc", "-Wl,-z,lazy", ""},
        PltCase{"x86_64_now", "gcc", "-Wl,-z,now", ""},
        PltCase{"x86_64_ibt", "gcc", "-fcf-protection=full -Wl,-z,ibtplt -Wl,-z,lazy", ""},
        PltCase{"aarch64", "aarch64-linux-gnu-gcc", "-Wl,-z,lazy", "aarch64-linux-gnu-"},
        PltCase{"s390x", "s390x-linux-gnu-gcc", "-Wl,-z,lazy", "s390x-linux-gnu-"},
        // i386: .rel.plt (REL, not RELA); PIE stubs jump through %ebx (the GOT), non-PIE
        // ones through absolute slots.
        PltCase{"i386_pie", "i686-linux-gnu-gcc", "-fPIE -pie -Wl,-z,lazy", "i686-linux-gnu-"},
        PltCase{"i386_nopie", "i686-linux-gnu-gcc", "-fno-PIE -no-pie -Wl,-z,lazy",
                "i686-linux-gnu-"},
        PltCase{"i386_now", "i686-linux-gnu-gcc", "-Wl,-z,now", "i686-linux-gnu-"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
