// SPDX-License-Identifier: Apache-2.0
// Image::symbolize: the covering rule, the preference among aliases, demangling, and
// separate debug files found by build-id.
#include <elf.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ehbt/image.hpp"
#include "elf/symbol_table.hpp"
#include "elf_test_util.hpp"

// Functions of this test binary that the tests look up by address. Aligned so that padding
// separates them from their neighbours.
extern "C" __attribute__((noinline, used, aligned(64))) int ehbt_elf_marker_one(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}
extern "C" __attribute__((noinline, used, aligned(64))) int ehbt_elf_marker_two(int x) {
  asm volatile("" ::: "memory");
  return x * 5 + 2;
}

namespace elf_test_ns {
struct Widget {
  __attribute__((noinline)) static int compute(int x, const char* tag);
};
int Widget::compute(int x, const char* tag) {
  asm volatile("" ::: "memory");
  return x + (tag != nullptr ? 4 : 0);
}
}  // namespace elf_test_ns

namespace {

using ehbt::Image;
using ehbt::elf::SymbolTable;

uint64_t self_bias() {
  for (const auto& o : elf_test::loaded_objects()) {
    if (o.name.empty()) return o.bias;  // the main program comes first, unnamed
  }
  return 0;
}

std::shared_ptr<Image> self_image() {
  auto img = Image::open("/proc/self/exe");
  EXPECT_TRUE(img) << (img ? "" : img.error());
  return img ? *img : nullptr;
}

TEST(ElfSymbol, OwnFunctionsResolveByAddress) {
  auto img = self_image();
  ASSERT_TRUE(img);
  const uint64_t bias = self_bias();
  const uint64_t one = reinterpret_cast<uint64_t>(&ehbt_elf_marker_one) - bias;
  const uint64_t two = reinterpret_cast<uint64_t>(&ehbt_elf_marker_two) - bias;
  auto s1 = img->symbolize(one);
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->name, "ehbt_elf_marker_one");
  EXPECT_EQ(s1->start, one);
  auto s2 = img->symbolize(two + 2);
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->name, "ehbt_elf_marker_two");
  EXPECT_EQ(s2->start, two);
  EXPECT_TRUE(img->is_executable(one));

  // Sizes agree with nm.
  for (const auto& s : elf_test::nm_symbols(elf_test::self_exe())) {
    if (s.name == "ehbt_elf_marker_one") {
      EXPECT_EQ(s1->size, s.size);
    }
    if (s.name == "ehbt_elf_marker_two") {
      EXPECT_EQ(s2->size, s.size);
    }
  }
}

TEST(ElfSymbol, PaddingBetweenFunctionsResolvesToNothing) {
  auto img = self_image();
  ASSERT_TRUE(img);
  auto syms = elf_test::nm_symbols(elf_test::self_exe());
  const elf_test::NmSymbol* one = nullptr;
  for (const auto& s : syms) {
    if (s.name == "ehbt_elf_marker_one") one = &s;
  }
  ASSERT_NE(one, nullptr);
  ASSERT_GT(one->size, 0u);
  const uint64_t end = one->start + one->size;
  // Per nm, nothing covers the first byte after the function and something starts later.
  uint64_t next_start = UINT64_MAX;
  for (const auto& s : syms) {
    ASSERT_FALSE(s.size > 0 && s.start <= end && end < s.start + s.size)
        << s.name << " covers the padding";
    if (s.start > end) next_start = std::min(next_start, s.start);
  }
  ASSERT_GT(next_start, end + 1) << "no padding after ehbt_elf_marker_one";
  EXPECT_FALSE(img->symbolize(end).has_value());
  EXPECT_FALSE(img->symbolize(next_start - 1).has_value());
  auto last = img->symbolize(end - 1);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->name, "ehbt_elf_marker_one");
}

TEST(ElfSymbol, CppNamesAreDemangled) {
  auto img = self_image();
  ASSERT_TRUE(img);
  const uint64_t addr = reinterpret_cast<uint64_t>(&elf_test_ns::Widget::compute);
  auto sym = img->symbolize(addr - self_bias() + 1);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "elf_test_ns::Widget::compute(int, char const*)");
  EXPECT_EQ(elf_test_ns::Widget::compute(1, "x"), 5);
  EXPECT_EQ(ehbt_elf_marker_one(1) + ehbt_elf_marker_two(1), 11);
}

TEST(ElfSymbol, Demangle) {
  EXPECT_EQ(ehbt::elf::demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(ehbt::elf::demangle("_ZNKSt6vectorIiSaIiEE4sizeEv"),
            "std::vector<int, std::allocator<int> >::size() const");
  EXPECT_EQ(ehbt::elf::demangle("main"), "main");
  EXPECT_EQ(ehbt::elf::demangle("_Z"), "_Z");
  EXPECT_EQ(ehbt::elf::demangle("_Zgarbage((("), "_Zgarbage(((");
}

TEST(ElfSymbol, TableCoveringRule) {
  SymbolTable t;
  t.add(0x1000, 0x20, "f", STB_GLOBAL, STT_FUNC);
  t.add(0x1040, 0, "g_nosize", STB_GLOBAL, STT_FUNC);
  t.add(0x1100, 0x100, "outer", STB_GLOBAL, STT_FUNC);
  t.add(0x1180, 0x10, "inner", STB_GLOBAL, STT_FUNC);
  t.finish();
  EXPECT_FALSE(t.lookup(0xfff));
  EXPECT_EQ(t.lookup(0x1000)->name, "f");
  EXPECT_EQ(t.lookup(0x101f)->name, "f");
  EXPECT_FALSE(t.lookup(0x1020));  // padding after f: no guess
  EXPECT_EQ(t.lookup(0x1040)->name, "g_nosize");
  EXPECT_FALSE(t.lookup(0x1041));  // a size-0 symbol covers only its own address
  EXPECT_EQ(t.lookup(0x1100)->name, "outer");
  EXPECT_EQ(t.lookup(0x1185)->name, "inner");  // innermost of the same binding
  EXPECT_EQ(t.lookup(0x1190)->name, "outer");
  EXPECT_EQ(t.lookup(0x11ff)->name, "outer");
  EXPECT_FALSE(t.lookup(0x1200));
}

TEST(ElfSymbol, TablePrefersGlobalThenWeakThenLocal) {
  SymbolTable t;
  t.add(0x2000, 0x40, "__GI_raise", STB_LOCAL, STT_FUNC);
  t.add(0x2000, 0x40, "gsignal", STB_WEAK, STT_FUNC);
  t.add(0x2000, 0x40, "raise", STB_GLOBAL, STT_FUNC);
  t.add(0x3000, 0x10, "local_only", STB_LOCAL, STT_FUNC);
  t.add(0x3000, 0x10, "weak_only", STB_WEAK, STT_FUNC);
  // Same binding: fewer leading underscores, then alphabetical.
  t.add(0x4000, 0x10, "__memcpy", STB_GLOBAL, STT_FUNC);
  t.add(0x4000, 0x10, "memcpy", STB_GLOBAL, STT_FUNC);
  t.add(0x5000, 0x10, "zeta", STB_GLOBAL, STT_FUNC);
  t.add(0x5000, 0x10, "alpha", STB_GLOBAL, STT_FUNC);
  // A global that starts earlier beats a nested local.
  t.add(0x6000, 0x100, "big_global", STB_GLOBAL, STT_FUNC);
  t.add(0x6010, 0x10, "nested_local", STB_LOCAL, STT_FUNC);
  t.finish();
  EXPECT_EQ(t.lookup(0x2010)->name, "raise");
  EXPECT_EQ(t.lookup(0x3000)->name, "weak_only");
  EXPECT_EQ(t.lookup(0x4000)->name, "memcpy");
  EXPECT_EQ(t.lookup(0x5000)->name, "alpha");
  EXPECT_EQ(t.lookup(0x6011)->name, "big_global");
  auto s = t.lookup(0x2010);
  EXPECT_EQ(s->start, 0x2000u);
  EXPECT_EQ(s->size, 0x40u);
}

// Static-linker .symtab names carry the symbol version (glibc's debug file has
// `__libc_start_main@@GLIBC_2.34`); the name shown is the part before '@'.
TEST(ElfSymbol, VersionSuffixIsDropped) {
  SymbolTable t;
  t.add(0x1000, 0x10, "__libc_start_main@@GLIBC_2.34", STB_GLOBAL, STT_FUNC);
  t.add(0x2000, 0x10, "memcpy@GLIBC_2.2.5", STB_GLOBAL, STT_FUNC);
  t.finish();
  EXPECT_EQ(t.lookup(0x1004)->name, "__libc_start_main");
  EXPECT_EQ(t.lookup(0x2000)->name, "memcpy");
}

TEST(ElfSymbol, TableCapAndExtremes) {
  SymbolTable t(2);
  EXPECT_TRUE(t.add(0x10, 4, "a", STB_GLOBAL, STT_FUNC));
  EXPECT_TRUE(t.add(UINT64_MAX - 2, 100, "top", STB_GLOBAL, STT_FUNC));  // end saturates
  EXPECT_FALSE(t.add(0x30, 4, "c", STB_GLOBAL, STT_FUNC));
  t.finish();
  EXPECT_EQ(t.lookup(0x12)->name, "a");
  EXPECT_FALSE(t.lookup(0x30));
  EXPECT_EQ(t.lookup(UINT64_MAX - 1)->name, "top");

  SymbolTable empty;
  empty.finish();
  EXPECT_FALSE(empty.lookup(0));
}

TEST(ElfSymbol, MaxSymbolsLimitsTheLoad) {
  ehbt::Limits limits;
  limits.max_symbols = 1;
  auto img = Image::open("/proc/self/exe", limits);
  ASSERT_TRUE(img);
  const uint64_t bias = self_bias();
  int found = 0;
  for (auto fn : {&ehbt_elf_marker_one, &ehbt_elf_marker_two}) {
    if ((*img)->symbolize(reinterpret_cast<uint64_t>(fn) - bias)) ++found;
  }
  EXPECT_LE(found, 1);
}

// The lazy load runs once even when several threads ask first.
TEST(ElfSymbol, ConcurrentFirstUse) {
  auto img = self_image();
  ASSERT_TRUE(img);
  const uint64_t one = reinterpret_cast<uint64_t>(&ehbt_elf_marker_one) - self_bias();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto s = img->symbolize(one);
      if (s && s->name == "ehbt_elf_marker_one") ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

// A stripped program finds its function names in a separate debug file by build-id.
TEST(ElfSymbol, SeparateDebugFileByBuildId) {
  elf_test::TempDir dir;
  const std::string src = dir / "prog.c";
  {
    std::ofstream out(src);
    out << "static int __attribute__((noinline)) ehbt_hidden_helper(int x) { return x * 9; }\n"
           "int main(int argc, char** argv) { (void)argv; return ehbt_hidden_helper(argc); }\n";
  }
  const std::string full = dir / "prog";
  const std::string stripped = dir / "prog.stripped";
  ASSERT_EQ(elf_test::run_status("cc -O1 -g -o '" + full + "' '" + src + "'"), 0);
  const std::string id = elf_test::readelf_build_id(full);
  ASSERT_EQ(id.size(), 40u);
  const std::string debug_dir = dir / "debug";
  const std::string debug_file = debug_dir + "/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  ASSERT_EQ(elf_test::run_status("mkdir -p '" + debug_dir + "/" + id.substr(0, 2) +
                                 "' && objcopy --only-keep-debug '" + full + "' '" + debug_file +
                                 "' && strip --strip-all -o '" + stripped + "' '" + full + "'"),
            0);
  ASSERT_EQ(elf_test::readelf_sections(stripped).count(".symtab"), 0u);

  uint64_t helper = 0;
  for (const auto& s : elf_test::nm_symbols(full)) {
    if (s.name == "ehbt_hidden_helper") helper = s.start;
  }
  ASSERT_NE(helper, 0u);

  unsetenv("EHBT_DEBUG_DIR");
  auto without = Image::open(stripped);
  ASSERT_TRUE(without) << without.error();
  EXPECT_FALSE((*without)->symbolize(helper).has_value());

  setenv("EHBT_DEBUG_DIR", ("/nonexistent:" + debug_dir).c_str(), 1);
  auto with = Image::open(stripped);
  ASSERT_TRUE(with) << with.error();
  auto sym = (*with)->symbolize(helper);
  unsetenv("EHBT_DEBUG_DIR");
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "ehbt_hidden_helper");
  // The debug file's NOBITS sections do not replace the program's own unwind tables.
  EXPECT_FALSE((*with)->eh_frame().empty());
}

}  // namespace
