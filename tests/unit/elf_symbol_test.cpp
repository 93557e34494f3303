// SPDX-License-Identifier: Apache-2.0
// Image::symbolize: the covering rule, the preference among aliases, demangling, and
// separate debug files found by build-id.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "ehbt/image.hpp"
#include "elf/image_impl.hpp"
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

// A table large enough for the radix sort, added in a scrambled order, with starts that
// differ in low, middle and high bytes: every symbol is found by its own addresses, and an
// alias at the same start (weak) never wins over the global one, whichever came first.
TEST(ElfSymbol, LargeScrambledTableResolvesEverySymbol) {
  constexpr uint64_t kCount = 5000;
  std::vector<std::string> names;
  for (uint64_t i = 0; i < kCount; ++i) names.push_back("fn" + std::to_string(i));
  // Symbol i: 0x40 bytes at a base per thousand (high bytes) plus i * 0x100 (low bytes).
  auto start_of = [](uint64_t i) { return (uint64_t{i / 1000} << 40) + 0x1000 + i * 0x100; };
  SymbolTable t;
  for (uint64_t k = 0; k < kCount; ++k) {
    const uint64_t i = (k * 2654435761u) % kCount;  // a permutation: gcd(2654435761, 5000) = 1
    if (i % 7 == 0) t.add(start_of(i), 0x40, "weak_alias", STB_WEAK, STT_FUNC);
    t.add(start_of(i), 0x40, names[i], STB_GLOBAL, STT_FUNC);
    if (i % 11 == 0) t.add(start_of(i), 0x40, "local_alias", STB_LOCAL, STT_FUNC);
  }
  t.finish();
  for (uint64_t i = 0; i < kCount; ++i) {
    auto first = t.lookup(start_of(i));
    auto last = t.lookup(start_of(i) + 0x3f);
    ASSERT_TRUE(first && last) << i;
    EXPECT_EQ(first->name, names[i]);
    EXPECT_EQ(last->name, names[i]);
    EXPECT_EQ(first->start, start_of(i));
    EXPECT_FALSE(t.lookup(start_of(i) + 0x40)) << i;  // the gap before the next one
  }
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

namespace {

using ehbt::elf::SymbolQuery;

// One symbol as a test writes it.
struct TestSym {
  uint64_t start, size;
  std::string name;
  uint8_t bind, type;
};

// The documented preference order, written out directly over all symbols: the oracle for the
// sweep (SymbolTable::finish) and the one-pass query alike.
std::optional<std::string> brute_force(const std::vector<TestSym>& syms, uint64_t addr) {
  auto bind_rank = [](uint8_t b) {
    return b == STB_GLOBAL || b == STB_GNU_UNIQUE ? 0 : b == STB_WEAK ? 1 : b == STB_LOCAL ? 2 : 3;
  };
  auto underscores = [](const std::string& n) { return n.find_first_not_of('_'); };
  const TestSym* best = nullptr;
  for (const TestSym& s : syms) {
    // The end is exclusive and saturates at the top of the address space (which is then
    // never covered itself).
    const uint64_t span = s.size == 0 ? 1 : s.size;
    const uint64_t end = s.start + span < s.start ? UINT64_MAX : s.start + span;
    const bool covers = addr >= s.start && addr < end;
    if (!covers) continue;
    if (best == nullptr) {
      best = &s;
      continue;
    }
    auto key = [&](const TestSym& t) {
      return std::make_tuple(bind_rank(t.bind), ~t.start, t.size,
                             t.type == STT_FUNC || t.type == STT_GNU_IFUNC ? 0 : 1,
                             underscores(t.name), t.name);
    };
    if (key(s) < key(*best)) best = &s;
  }
  if (best == nullptr) return std::nullopt;
  return best->name;
}

TEST(ElfSymbol, QueryAnswersLikeTheTable) {
  std::vector<TestSym> syms = {
      {0x1000, 0x20, "f", STB_GLOBAL, STT_FUNC},
      {0x1040, 0, "g_nosize", STB_GLOBAL, STT_FUNC},
      {0x1100, 0x100, "outer", STB_GLOBAL, STT_FUNC},
      {0x1180, 0x10, "inner", STB_GLOBAL, STT_FUNC},
      {0x2000, 0x40, "__GI_raise", STB_LOCAL, STT_FUNC},
      {0x2000, 0x40, "gsignal", STB_WEAK, STT_FUNC},
      {0x2000, 0x40, "raise", STB_GLOBAL, STT_FUNC},
      {0x6000, 0x100, "big_global", STB_GLOBAL, STT_FUNC},
      {0x6010, 0x10, "nested_local", STB_LOCAL, STT_FUNC},
  };
  const std::vector<uint64_t> addrs = {0xfff,  0x1000, 0x101f, 0x1020, 0x1040, 0x1041, 0x1100,
                                       0x1185, 0x1190, 0x11ff, 0x1200, 0x2010, 0x6011, 0x1185};
  const std::vector<const char*> want = {nullptr, "f",     "f",          nullptr, "g_nosize",
                                         nullptr, "outer", "inner",      "outer", "outer",
                                         nullptr, "raise", "big_global", "inner"};
  SymbolQuery q(addrs, UINT32_MAX, 1000);
  for (const TestSym& s : syms) q.add(s.start, s.size, s.name, s.bind, s.type);
  ASSERT_FALSE(q.overflowed());
  auto got = q.results();
  ASSERT_EQ(got.size(), addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    if (want[i] == nullptr) {
      EXPECT_FALSE(got[i]) << std::hex << addrs[i];
    } else {
      ASSERT_TRUE(got[i]) << std::hex << addrs[i];
      EXPECT_EQ(got[i]->name, want[i]) << std::hex << addrs[i];
    }
  }
  EXPECT_EQ(got[11]->start, 0x2000u);
  EXPECT_EQ(got[11]->size, 0x40u);
}

// Random nests, aliases, size-0 and wrapping symbols: the sweep's ranges and the one-pass
// query both give what the preference order, applied to every symbol, gives.
TEST(ElfSymbol, TableAndQueryMatchTheRuleOnRandomTables) {
  std::srand(1234);
  const std::vector<std::string> names = {"a", "_a", "__a", "b", "zz", "_Z1fv", "m@plt"};
  const uint8_t binds[] = {STB_GLOBAL, STB_WEAK, STB_LOCAL, STB_GNU_UNIQUE};
  const uint8_t types[] = {STT_FUNC, STT_NOTYPE, STT_GNU_IFUNC};
  for (int round = 0; round < 200; ++round) {
    std::vector<TestSym> syms;
    const int n = 1 + std::rand() % 40;
    for (int i = 0; i < n; ++i) {
      TestSym s;
      s.start = 0x1000 + static_cast<uint64_t>(std::rand() % 64) * 4;
      s.size = std::rand() % 5 == 0 ? 0 : static_cast<uint64_t>(std::rand() % 96);
      if (std::rand() % 50 == 0) s.start = UINT64_MAX - static_cast<uint64_t>(std::rand() % 8);
      s.name = names[static_cast<std::size_t>(std::rand()) % names.size()];
      s.bind = binds[std::rand() % 4];
      s.type = types[std::rand() % 3];
      syms.push_back(s);
    }
    std::vector<uint64_t> addrs;
    for (uint64_t a = 0xff8; a < 0x1200; a += 3) addrs.push_back(a);
    for (uint64_t k = 0; k < 9; ++k) addrs.push_back(UINT64_MAX - k);

    SymbolTable table;
    SymbolQuery query(addrs, UINT32_MAX, UINT64_MAX);
    for (const TestSym& s : syms) {
      table.add(s.start, s.size, s.name, s.bind, s.type);
      query.add(s.start, s.size, s.name, s.bind, s.type);
    }
    table.finish();
    auto answers = query.results();
    for (std::size_t i = 0; i < addrs.size(); ++i) {
      auto want = brute_force(syms, addrs[i]);
      auto from_table = table.lookup(addrs[i]);
      ASSERT_EQ(want.has_value(), from_table.has_value()) << round << " " << std::hex << addrs[i];
      ASSERT_EQ(want.has_value(), answers[i].has_value()) << round << " " << std::hex << addrs[i];
      if (!want) continue;
      // Demangled for display: compare against the demangled oracle name.
      EXPECT_EQ(from_table->name, ehbt::elf::demangle(*want)) << round;
      EXPECT_EQ(answers[i]->name, ehbt::elf::demangle(*want)) << round;
    }
  }
}

// Symbols given in address order with no overlap (how Go's function table feeds the table)
// take finish()'s short way; the same symbols in another order, or with one overlap among
// them, take the sweep. Both answer as the oracle at every address.
TEST(ElfSymbol, OrderedDisjointSymbolsAnswerAsTheSweep) {
  std::srand(99);
  for (int round = 0; round < 200; ++round) {
    std::vector<TestSym> syms;
    uint64_t at = 0x1000;
    const int n = 1 + std::rand() % 40;
    for (int i = 0; i < n; ++i) {
      TestSym s;
      at += static_cast<uint64_t>(std::rand() % 3) * 4;  // a gap, or none
      s.start = at;
      s.size = std::rand() % 6 == 0 ? 0 : 4 + static_cast<uint64_t>(std::rand() % 8) * 4;
      at += s.size == 0 ? 1 : s.size;
      s.name = "f" + std::to_string(i);
      s.bind = STB_GLOBAL;
      s.type = STT_FUNC;
      syms.push_back(s);
    }
    // Now and then a last symbol at the very top of the address space (its range saturates).
    if (round % 10 == 0) syms.push_back({UINT64_MAX - 1, 8, "top", STB_GLOBAL, STT_FUNC});
    std::vector<TestSym> overlapping = syms;
    if (overlapping.size() > 1) {
      TestSym& last = overlapping.back();
      last.start = overlapping[overlapping.size() - 2].start;  // same start as its neighbour
      last.name = "alias";
      last.bind = STB_WEAK;
    }
    std::vector<TestSym> shuffled = syms;
    std::reverse(shuffled.begin(), shuffled.end());
    for (const std::vector<TestSym>* given : {&syms, &shuffled, &overlapping}) {
      SymbolTable table;
      for (const TestSym& s : *given) table.add(s.start, s.size, s.name, s.bind, s.type);
      table.finish();
      std::vector<uint64_t> addrs;
      for (uint64_t a = 0xffc; a <= at + 4; ++a) addrs.push_back(a);
      for (uint64_t k = 0; k < 4; ++k) addrs.push_back(UINT64_MAX - k);
      for (uint64_t a : addrs) {
        auto want = brute_force(*given, a);
        auto got = table.lookup(a);
        ASSERT_EQ(want.has_value(), got.has_value()) << round << " " << std::hex << a;
        if (want) {
          EXPECT_EQ(got->name, *want) << round << " " << std::hex << a;
        }
      }
    }
  }
}

// A query that would compare too many (address, symbol) pairs gives up instead of running on.
// A query for one address (what symbolize() runs before the table is built) gives the
// table's answer: aliases, nests and size-0 symbols resolve as in the table.
TEST(ElfSymbol, OneAddressQueriesMatchTheTable) {
  std::vector<TestSym> syms = {
      {0x1000, 0x20, "f", STB_GLOBAL, STT_FUNC},
      {0x1040, 0, "g_nosize", STB_GLOBAL, STT_FUNC},
      {0x1040, 0, "_g_nosize_alias", STB_GLOBAL, STT_NOTYPE},
      {0x1100, 0x100, "outer", STB_GLOBAL, STT_FUNC},
      {0x1180, 0x10, "inner", STB_GLOBAL, STT_FUNC},
      {0x1180, 0x10, "__inner", STB_GLOBAL, STT_FUNC},
      {0x2000, 0x40, "__GI_raise", STB_LOCAL, STT_FUNC},
      {0x2000, 0x40, "gsignal", STB_WEAK, STT_FUNC},
      {0x2000, 0x40, "raise", STB_GLOBAL, STT_FUNC},
      {0x2000, 0x80, "raise_longer", STB_GLOBAL, STT_FUNC},
      {0x6000, 0x100, "big_global", STB_GLOBAL, STT_FUNC},
      {0x6010, 0x10, "nested_local", STB_LOCAL, STT_FUNC},
  };
  const std::vector<uint64_t> addrs = {0xfff,  0x1000, 0x101f, 0x1020, 0x1040, 0x1041,
                                       0x1100, 0x1185, 0x1190, 0x11ff, 0x1200, 0x2010,
                                       0x2050, 0x6011, 0x60ff, 0x6100};
  const std::vector<const char*> want = {
      nullptr, "f",     "f",     nullptr, "g_nosize",     nullptr,      "outer",      "inner",
      "outer", "outer", nullptr, "raise", "raise_longer", "big_global", "big_global", nullptr};
  SymbolTable table;
  // Fed in reverse too: neither answer may depend on the order of the symbol table.
  for (auto it = syms.rbegin(); it != syms.rend(); ++it)
    table.add(it->start, it->size, it->name, it->bind, it->type);
  table.finish();
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    SymbolQuery q(std::span<const uint64_t>(&addrs[i], 1), UINT32_MAX, 1000);
    for (const TestSym& s : syms) q.add(s.start, s.size, s.name, s.bind, s.type);
    ASSERT_FALSE(q.overflowed());
    const std::optional<ehbt::Symbol> one = q.results().front();
    const std::optional<ehbt::Symbol> from_table = table.lookup(addrs[i]);
    if (want[i] == nullptr) {
      EXPECT_FALSE(one) << std::hex << addrs[i];
      EXPECT_FALSE(from_table) << std::hex << addrs[i];
      continue;
    }
    ASSERT_TRUE(one && from_table) << std::hex << addrs[i];
    EXPECT_EQ(one->name, want[i]) << std::hex << addrs[i];
    EXPECT_EQ(from_table->name, want[i]) << std::hex << addrs[i];
    EXPECT_EQ(one->start, from_table->start);
    EXPECT_EQ(one->size, from_table->size);
  }
}

// wants() is what a source asks before it reads a symbol's name: for a query it must say yes
// to every symbol that covers one of its addresses and no to every other one in its window.
// Addresses sit on pages that fold onto the same bit of the query's page filter (16 MiB
// apart), symbols span from no bytes to several pages, around and between them.
TEST(ElfSymbol, QueryWantsExactlyTheSymbolsCoveringItsAddresses) {
  std::srand(4321);
  for (int round = 0; round < 50; ++round) {
    std::vector<uint64_t> addrs;
    const int n = 2 + std::rand() % 30;
    for (int i = 0; i < n; ++i) {
      const uint64_t alias = static_cast<uint64_t>(std::rand() % 3) << 24;
      addrs.push_back(0x400000 + alias + static_cast<uint64_t>(std::rand() % 0x20000));
    }
    SymbolQuery q(addrs, UINT32_MAX, UINT64_MAX);
    for (int k = 0; k < 2000; ++k) {
      const uint64_t base = addrs[static_cast<std::size_t>(std::rand() % n)];
      const uint64_t start = base - static_cast<uint64_t>(std::rand() % 0x6000) +
                             static_cast<uint64_t>(std::rand() % 0x3000);
      const uint64_t size = std::rand() % 4 == 0 ? 0 : static_cast<uint64_t>(std::rand() % 0x5000);
      const uint64_t end = start + (size == 0 ? 1 : size);
      bool covers = false;
      for (uint64_t a : addrs) covers = covers || (a >= start && a < end);
      ASSERT_EQ(q.wants(start, size), covers) << round << ": " << std::hex << start << "+" << size;
    }
  }
}

TEST(ElfSymbol, QueryWorkIsCapped) {
  std::vector<uint64_t> addrs;
  for (uint64_t a = 0; a < 100; ++a) addrs.push_back(0x1000 + a);
  SymbolQuery q(addrs, UINT32_MAX, 250);
  for (int i = 0; i < 10; ++i) q.add(0x1000, 0x100, "everywhere", STB_GLOBAL, STT_FUNC);
  EXPECT_TRUE(q.overflowed());
}

bool table_built(const Image& img) {
  return ehbt::ImageLoader::impl(img).symbols_ready.load();
}

// symbolize() answers its first few distinct addresses by a pass each and builds the full
// table at the next one: asks that many distinct addresses of `addrs`.
void build_table(const Image& img, const std::vector<uint64_t>& addrs) {
  ASSERT_GT(addrs.size(), std::size_t{ehbt::elf::kMaxSymbolPasses});
  for (uint32_t i = 0; i <= ehbt::elf::kMaxSymbolPasses; ++i) img.symbolize(addrs[i]);
  ASSERT_TRUE(table_built(img));
}

// symbolize_all on a real library, before and after the full table is built, agrees with
// symbolize() and with nm: every answer is a symbol nm lists at that start with that size.
TEST(ElfSymbol, SymbolizeAllOnLibc) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  auto fresh = Image::open(libc);
  auto built = Image::open(libc);
  ASSERT_TRUE(fresh && built);
  std::vector<uint64_t> addrs;
  std::map<std::pair<uint64_t, std::string>, uint64_t> nm;  // (start, name) -> size
  // Names come from .dynsym or, when the system has it, the build-id debug file's .symtab.
  const std::string id = elf_test::readelf_build_id(libc);
  std::vector<elf_test::NmSymbol> listed = elf_test::nm_symbols(libc, true);
  if (id.size() > 2) {
    for (auto& s : elf_test::nm_symbols("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" +
                                        id.substr(2) + ".debug"))
      listed.push_back(s);
  }
  for (const auto& s : listed) {
    nm[{s.start, s.name.substr(0, s.name.find('@'))}] = s.size;
    if (addrs.size() < 3000 && s.start != 0 && (s.kind == 'T' || s.kind == 't')) {
      addrs.push_back(s.start);
      addrs.push_back(s.start + s.size / 2);
      addrs.push_back(s.start + s.size);  // often padding
    }
  }
  ASSERT_GT(addrs.size(), 300u);
  auto one_pass = (*fresh)->symbolize_all(addrs);
  build_table(**built, addrs);
  auto from_table = (*built)->symbolize_all(addrs);
  ASSERT_EQ(one_pass.size(), addrs.size());
  std::size_t named = 0;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    auto single = (*built)->symbolize(addrs[i]);
    ASSERT_EQ(one_pass[i].has_value(), single.has_value()) << std::hex << addrs[i];
    ASSERT_EQ(from_table[i].has_value(), single.has_value()) << std::hex << addrs[i];
    if (!single) continue;
    ++named;
    EXPECT_EQ(one_pass[i]->name, single->name);
    EXPECT_EQ(one_pass[i]->start, single->start);
    EXPECT_EQ(from_table[i]->name, single->name);
    // PLT stubs are synthesised; every other answer is in nm's list, with nm's size.
    if (single->name.ends_with("@plt")) continue;
    auto it = nm.find({single->start, single->name});
    ASSERT_NE(it, nm.end()) << single->name;
    EXPECT_EQ(it->second, single->size) << single->name;
  }
  EXPECT_GT(named, addrs.size() / 2);
}

// symbolize() before the table exists (a pass per address, as a one-shot walk asks for a
// frame's function start) and after it is built agree on every sampled address of libc,
// and the table is only built once the pass budget is spent.
TEST(ElfSymbol, SymbolizeWithoutTableMatchesTheTableOnLibc) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  auto built = Image::open(libc);
  ASSERT_TRUE(built);
  std::vector<uint64_t> addrs;
  for (const auto& s : elf_test::nm_symbols(libc, true)) {
    if (addrs.size() >= 240 || s.start == 0 || (s.kind != 'T' && s.kind != 't')) continue;
    addrs.push_back(s.start);
    addrs.push_back(s.start + s.size / 2);
    addrs.push_back(s.start + s.size);  // often padding, or the next function
  }
  ASSERT_GT(addrs.size(), 200u);
  build_table(**built, addrs);
  std::size_t named = 0;
  const std::size_t batch = ehbt::elf::kMaxSymbolPasses;
  for (std::size_t first = 0; first < addrs.size(); first += batch) {
    auto fresh = Image::open(libc);  // a new image per budget's worth of addresses
    ASSERT_TRUE(fresh);
    ehbt::ImageLoader::impl(**fresh).pass_min_entries = 0;  // libc's .dynsym is small
    for (std::size_t i = first; i < std::min(first + batch, addrs.size()); ++i) {
      auto one = (*fresh)->symbolize(addrs[i]);
      auto again = (*fresh)->symbolize(addrs[i]);  // remembered: costs no pass
      auto from_table = (*built)->symbolize(addrs[i]);
      ASSERT_EQ(one.has_value(), from_table.has_value()) << std::hex << addrs[i];
      ASSERT_EQ(again.has_value(), from_table.has_value()) << std::hex << addrs[i];
      if (!one) continue;
      ++named;
      EXPECT_EQ(one->name, from_table->name) << std::hex << addrs[i];
      EXPECT_EQ(one->start, from_table->start) << std::hex << addrs[i];
      EXPECT_EQ(one->size, from_table->size) << std::hex << addrs[i];
      EXPECT_EQ(again->name, one->name);
    }
    EXPECT_FALSE(table_built(**fresh));
  }
  EXPECT_GT(named, addrs.size() / 2);
}

// Past the pass budget the table is built, and answers stay the same; an image with a small
// symbol table builds it at once.
TEST(ElfSymbol, SymbolizeBuildsTheTableAfterItsPasses) {
  auto img = Image::open(elf_test::self_exe());
  ASSERT_TRUE(img);
  ehbt::ImageLoader::impl(**img).pass_min_entries = 0;
  const uint64_t one = reinterpret_cast<uint64_t>(&ehbt_elf_marker_one) - self_bias();
  // The marker and the bytes after it (its end, then padding: named or not, as the table says).
  std::vector<uint64_t> addrs;
  for (uint64_t i = 0; i <= ehbt::elf::kMaxSymbolPasses; ++i) addrs.push_back(one + i * 4);
  std::vector<std::optional<ehbt::Symbol>> passes;
  for (uint32_t i = 0; i < ehbt::elf::kMaxSymbolPasses; ++i) {
    passes.push_back((*img)->symbolize(addrs[i]));
    (*img)->symbolize(addrs[0]);  // a repeat takes no pass
  }
  EXPECT_FALSE(table_built(**img));
  ASSERT_TRUE(passes[0]);
  EXPECT_EQ(passes[0]->name, "ehbt_elf_marker_one");
  (*img)->symbolize(addrs.back());
  EXPECT_TRUE(table_built(**img));
  for (uint32_t i = 0; i < ehbt::elf::kMaxSymbolPasses; ++i) {
    auto from_table = (*img)->symbolize(addrs[i]);
    ASSERT_EQ(from_table.has_value(), passes[i].has_value()) << i;
    if (from_table) {
      EXPECT_EQ(from_table->name, passes[i]->name);
    }
  }
}

TEST(ElfSymbol, SmallTableIsBuiltAtOnce) {
  auto img = Image::open(elf_test::self_exe());
  ASSERT_TRUE(img);
  ehbt::ImageLoader::impl(**img).pass_min_entries = UINT64_MAX;
  const uint64_t one = reinterpret_cast<uint64_t>(&ehbt_elf_marker_one) - self_bias();
  auto sym = (*img)->symbolize(one);
  EXPECT_TRUE(table_built(**img));
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "ehbt_elf_marker_one");
}

// After its first pass an image knows what its .symtab offers, and later passes read only the
// entries that reach their address (symbol_loader.cpp): the answers stay those of the table at
// the edges -- the lowest and the highest function, each one's first and last byte and the
// byte after it, size-0 symbols and aliases (several symbols at one start).
TEST(ElfSymbol, PassesThatKnowTheTableCountAnswerAsTheTable) {
  const std::string exe = elf_test::self_exe();
  std::vector<elf_test::NmSymbol> funcs;
  for (auto& s : elf_test::nm_symbols(exe)) {
    if (s.start != 0 && (s.kind == 'T' || s.kind == 't' || s.kind == 'W' || s.kind == 'w'))
      funcs.push_back(s);
  }
  ASSERT_GT(funcs.size(), 100u);
  std::sort(funcs.begin(), funcs.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<uint64_t> addrs;
  auto edges = [&addrs](const elf_test::NmSymbol& s) {
    addrs.push_back(s.start);
    if (s.size > 0) addrs.push_back(s.start + s.size - 1);
    addrs.push_back(s.start + std::max<uint64_t>(s.size, 1));
  };
  edges(funcs.front());
  edges(funcs.back());
  std::size_t zero_size = 0, aliases = 0;
  for (std::size_t i = 0; i < funcs.size(); ++i) {
    if (funcs[i].size == 0 && zero_size < 4) {
      ++zero_size;
      edges(funcs[i]);
    }
    if (i > 0 && funcs[i].start == funcs[i - 1].start && aliases < 4) {
      ++aliases;
      edges(funcs[i]);
    }
  }
  addrs.push_back(funcs.front().start - 1);  // below every function
  auto table = Image::open(exe);
  ASSERT_TRUE(table);
  ehbt::ImageLoader::impl(**table).pass_min_entries = UINT64_MAX;  // the table at once
  const std::size_t batch = ehbt::elf::kMaxSymbolPasses;
  std::size_t named = 0;
  for (std::size_t first = 0; first < addrs.size(); first += batch) {
    auto passes = Image::open(exe);
    ASSERT_TRUE(passes);
    auto& im = ehbt::ImageLoader::impl(**passes);
    im.pass_min_entries = 0;
    for (std::size_t i = first; i < std::min(first + batch, addrs.size()); ++i) {
      auto one = (*passes)->symbolize(addrs[i]);
      // From the first pass on, the count is known: the passes after it take the short way.
      EXPECT_TRUE(im.table_counts.of(im.elf.elf, SHT_SYMTAB).complete);
      auto from_table = (*table)->symbolize(addrs[i]);
      ASSERT_EQ(one.has_value(), from_table.has_value()) << std::hex << addrs[i];
      if (!one) continue;
      ++named;
      EXPECT_EQ(one->name, from_table->name) << std::hex << addrs[i];
      EXPECT_EQ(one->start, from_table->start) << std::hex << addrs[i];
      EXPECT_EQ(one->size, from_table->size) << std::hex << addrs[i];
    }
    EXPECT_FALSE(table_built(**passes));
  }
  EXPECT_GT(named, 4u);
  // The lowest function's first byte is named by a symbol that starts there (nm's list).
  auto low = (*table)->symbolize(funcs.front().start);
  ASSERT_TRUE(low);
  EXPECT_EQ(low->start, funcs.front().start);
}

// With its .symtab bucketed (symbol_buckets.hpp; here by symbolize()'s first pass, whatever
// the table's size), an image answers every address as the full table: the byte before, the
// first, a middle, the last and the byte after every function of this test binary, one address
// a pass and all in one pass; and symbolize() as before the table is built.
TEST(ElfSymbol, BucketedPassesAnswerAsTheTable) {
  const std::string exe = elf_test::self_exe();
  std::vector<uint64_t> addrs;
  for (const auto& s : elf_test::nm_symbols(exe)) {
    if (s.start == 0 || !(s.kind == 'T' || s.kind == 't' || s.kind == 'W' || s.kind == 'w'))
      continue;
    const uint64_t span = std::max<uint64_t>(s.size, 1);
    for (uint64_t a :
         {s.start - 1, s.start, s.start + span / 2, s.start + span - 1, s.start + span})
      addrs.push_back(a);
  }
  ASSERT_GT(addrs.size(), 1000u);
  auto table = Image::open(exe);
  ASSERT_TRUE(table);
  ehbt::ImageLoader::impl(**table).pass_min_entries = UINT64_MAX;  // the table at once
  auto passes = Image::open(exe);
  ASSERT_TRUE(passes);
  auto& im = ehbt::ImageLoader::impl(**passes);
  im.pass_min_entries = 0;
  im.bucket_min_entries = 0;
  auto expect_same = [](const std::optional<ehbt::Symbol>& got,
                        const std::optional<ehbt::Symbol>& want, uint64_t a) {
    ASSERT_EQ(got.has_value(), want.has_value()) << std::hex << a;
    if (!got) return;
    EXPECT_EQ(got->name, want->name) << std::hex << a;
    EXPECT_EQ(got->start, want->start) << std::hex << a;
    EXPECT_EQ(got->size, want->size) << std::hex << a;
  };
  // symbolize()'s pass (a walk's) makes the buckets; query_symbols' passes use them.
  expect_same((*passes)->symbolize(addrs[0]), (*table)->symbolize(addrs[0]), addrs[0]);
  ASSERT_TRUE(im.table_counts.of(im.elf.elf, SHT_SYMTAB).buckets);
  std::size_t named = 0;
  for (const uint64_t a : addrs) {
    auto one = ehbt::ImageLoader::query_symbols(**passes, std::span<const uint64_t>(&a, 1));
    ASSERT_EQ(one.size(), 1u);
    auto want = (*table)->symbolize(a);
    expect_same(one.front(), want, a);
    named += want.has_value();
  }
  EXPECT_GT(named, addrs.size() / 2);
  const auto& count = im.table_counts.of(im.elf.elf, SHT_SYMTAB);
  ASSERT_TRUE(count.buckets);
  EXPECT_TRUE(count.complete);
  EXPECT_GT(count.buckets->bucket_count(), 1u);
  // Making the buckets counted what the table offers as a pass through it does (the count
  // that decides, under a cap, which symbols a sink still takes).
  auto plain = Image::open(exe);
  ASSERT_TRUE(plain);
  auto& plain_im = ehbt::ImageLoader::impl(**plain);
  plain_im.bucket_min_entries = UINT64_MAX;
  ehbt::ImageLoader::query_symbols(**plain, std::span<const uint64_t>(addrs.data(), 1));
  const auto& plain_count = plain_im.table_counts.of(plain_im.elf.elf, SHT_SYMTAB);
  ASSERT_TRUE(plain_count.complete);
  EXPECT_FALSE(plain_count.buckets);
  EXPECT_EQ(count.offered, plain_count.offered);
  EXPECT_GT(count.offered, 1000u);
  auto all = ehbt::ImageLoader::query_symbols(**passes, addrs);
  ASSERT_EQ(all.size(), addrs.size());
  for (std::size_t i = 0; i < addrs.size(); ++i)
    expect_same(all[i], (*table)->symbolize(addrs[i]), addrs[i]);
  EXPECT_FALSE(table_built(**passes));
  // A report's pass for many addresses goes through the table (often the only pass an image
  // gets) and never makes the buckets, as often as it comes.
  auto batch = Image::open(exe);
  ASSERT_TRUE(batch);
  auto& batch_im = ehbt::ImageLoader::impl(**batch);
  batch_im.pass_min_entries = 0;
  batch_im.bucket_min_entries = 0;
  for (int round = 0; round < 2; ++round) {
    auto answers = ehbt::ImageLoader::query_symbols(**batch, addrs);
    const auto& batch_count = batch_im.table_counts.of(batch_im.elf.elf, SHT_SYMTAB);
    EXPECT_TRUE(batch_count.complete);
    EXPECT_FALSE(batch_count.buckets);
    ASSERT_EQ(answers.size(), addrs.size());
    for (std::size_t i = 0; i < addrs.size(); ++i) expect_same(answers[i], all[i], addrs[i]);
  }
  // symbolize() takes the same passes while its budget lasts.
  auto fresh = Image::open(exe);
  ASSERT_TRUE(fresh);
  ehbt::ImageLoader::impl(**fresh).pass_min_entries = 0;
  ehbt::ImageLoader::impl(**fresh).bucket_min_entries = 0;
  for (uint32_t i = 0; i < ehbt::elf::kMaxSymbolPasses; ++i) {
    const uint64_t a = addrs[i * addrs.size() / ehbt::elf::kMaxSymbolPasses];
    expect_same((*fresh)->symbolize(a), (*table)->symbolize(a), a);
  }
  EXPECT_FALSE(table_built(**fresh));
  auto& fresh_im = ehbt::ImageLoader::impl(**fresh);
  EXPECT_TRUE(fresh_im.table_counts.of(fresh_im.elf.elf, SHT_SYMTAB).buckets);
  // Past the budget the table is built, and the buckets are let go.
  expect_same((*fresh)->symbolize(addrs.back()), (*table)->symbolize(addrs.back()), addrs.back());
  EXPECT_TRUE(table_built(**fresh));
  EXPECT_FALSE(fresh_im.table_counts.of(fresh_im.elf.elf, SHT_SYMTAB).buckets);
}

// The .symtab entries of an ELF64 file, in table order, and where that table and its string
// table lie in the file (for tests that edit entries in place).
struct SymtabInFile {
  uint64_t symtab_off = 0, symtab_size = 0, strtab_off = 0, strtab_size = 0;
};
// The section headers of an ELF64 file and its section-name string table's index.
std::optional<std::pair<std::vector<Elf64_Shdr>, uint16_t>> section_headers(
    const std::vector<std::byte>& f) {
  if (f.size() < sizeof(Elf64_Ehdr)) return std::nullopt;
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > f.size()) return std::nullopt;
  std::memcpy(sh.data(), f.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  return std::make_pair(std::move(sh), eh.e_shstrndx);
}

// A C program built from `source` in `dir`; its path.
std::string build_c_program(const elf_test::TempDir& dir, const std::string& source) {
  const std::string src = dir / "prog.c";
  {
    std::ofstream out(src);
    out << source;
  }
  const std::string prog = dir / "prog";
  EXPECT_EQ(elf_test::run_status("cc -O1 -o '" + prog + "' '" + src + "'"), 0);
  return prog;
}

std::optional<SymtabInFile> find_symtab(const std::vector<std::byte>& f) {
  const auto headers = section_headers(f);
  if (!headers) return std::nullopt;
  const std::vector<Elf64_Shdr>& sh = headers->first;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size()) continue;
    return SymtabInFile{s.sh_offset, s.sh_size, sh[s.sh_link].sh_offset, sh[s.sh_link].sh_size};
  }
  return std::nullopt;
}

// A function symbol whose name offset points at an empty string (not offset 0) is never
// shown, and it counts towards max_symbols in the one-shot passes as in the full table, which
// therefore agree at every cap. (The passes count a named entry without reading its name.)
TEST(ElfSymbol, EmptyNamedSymbolCountsAlikeInPassesAndTable) {
  elf_test::TempDir dir;
  const std::string prog = build_c_program(
      dir,
      "int __attribute__((noinline)) ehbt_fn_a(int x) { return x * 3; }\n"
      "int __attribute__((noinline)) ehbt_fn_b(int x) { return x * 5; }\n"
      "int __attribute__((noinline)) ehbt_fn_c(int x) { return x * 7; }\n"
      "int main(int argc, char** argv) {\n"
      "  (void)argv; return ehbt_fn_a(argc) + ehbt_fn_b(argc) + ehbt_fn_c(argc);\n}\n");
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<std::byte> bytes = elf_test::read_file(prog);
  const auto where = find_symtab(bytes);
  ASSERT_TRUE(where);
  // Every defined function symbol, in table order, with its address.
  std::vector<std::pair<std::size_t, uint64_t>> funcs;  // (file offset of the entry, address)
  std::size_t blanked = 0;
  std::string blanked_name;
  for (uint64_t off = where->symtab_off + sizeof(Elf64_Sym);
       off + sizeof(Elf64_Sym) <= where->symtab_off + where->symtab_size;
       off += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, bytes.data() + off, sizeof sym);
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
      continue;
    funcs.emplace_back(off, sym.st_value);
    const char* name =
        reinterpret_cast<const char*>(bytes.data() + where->strtab_off) + sym.st_name;
    if (std::string(name) == "ehbt_fn_b") {
      // Point the name at the NUL that ends this same name: a non-zero offset, an empty name.
      blanked = funcs.size() - 1;
      blanked_name = name;
      const uint32_t empty = sym.st_name + static_cast<uint32_t>(blanked_name.size());
      std::memcpy(bytes.data() + off + offsetof(Elf64_Sym, st_name), &empty, sizeof empty);
    }
  }
  ASSERT_EQ(blanked_name, "ehbt_fn_b");
  ASSERT_GE(funcs.size(), 4u);
  const std::string edited = dir / "prog.edited";
  ASSERT_TRUE(elf_test::write_file(edited, bytes));

  // Without buckets, and with them from the first pass (which then counts the table).
  for (const uint64_t bucket_min : {UINT64_MAX, uint64_t{0}}) {
    for (uint32_t cap = 1; cap <= funcs.size() + 1; ++cap) {
      ehbt::Limits limits;
      limits.max_symbols = cap;
      auto table = Image::open(edited, limits);
      ASSERT_TRUE(table);
      ehbt::ImageLoader::impl(**table).pass_min_entries = UINT64_MAX;  // the table at once
      for (std::size_t first = 0; first < funcs.size(); first += ehbt::elf::kMaxSymbolPasses) {
        auto passes = Image::open(edited, limits);
        ASSERT_TRUE(passes);
        ehbt::ImageLoader::impl(**passes).pass_min_entries = 0;  // one pass per address
        ehbt::ImageLoader::impl(**passes).bucket_min_entries = bucket_min;
        const std::size_t end = std::min(first + ehbt::elf::kMaxSymbolPasses, funcs.size());
        for (std::size_t i = first; i < end; ++i) {
          const uint64_t addr = funcs[i].second;
          auto one = (*passes)->symbolize(addr);
          auto from_table = (*table)->symbolize(addr);
          ASSERT_EQ(one.has_value(), from_table.has_value()) << "cap " << cap << " symbol " << i;
          if (i == blanked) {
            // Nothing names it (main or a neighbour could only cover it by mistake).
            EXPECT_FALSE(one.has_value()) << "cap " << cap;
            continue;
          }
          if (one) {
            EXPECT_EQ(one->name, from_table->name) << "cap " << cap;
          }
        }
        EXPECT_FALSE(table_built(**passes));
      }
    }
  }
  // Without a cap every other function is named.
  auto all = Image::open(edited);
  ASSERT_TRUE(all);
  for (std::size_t i = 0; i < funcs.size(); ++i) {
    EXPECT_EQ((*all)->symbolize(funcs[i].second).has_value(), i != blanked) << i;
  }
}

// The [address, end) of the section `name` of an ELF64 file, or nothing.
std::optional<std::pair<uint64_t, uint64_t>> section_range(const std::vector<std::byte>& f,
                                                           std::string_view name) {
  const auto headers = section_headers(f);
  if (!headers || headers->second >= headers->first.size()) return std::nullopt;
  const std::vector<Elf64_Shdr>& sh = headers->first;
  const Elf64_Shdr& names = sh[headers->second];
  for (const Elf64_Shdr& s : sh) {
    if (names.sh_offset + s.sh_name >= f.size()) continue;
    const char* n = reinterpret_cast<const char*>(f.data() + names.sh_offset + s.sh_name);
    if (std::string_view(n, strnlen(n, f.size() - names.sh_offset - s.sh_name)) == name)
      return std::make_pair(uint64_t{s.sh_addr}, uint64_t{s.sh_addr + s.sh_size});
  }
  return std::nullopt;
}

// Under every cap from one symbol to more than the whole .symtab holds, a pass per address
// (each image's first pass learns the table's count, by the loop for a sink the table can
// fill or by the one for a sink it cannot) names what the full table names, the PLT stubs
// included: they come after the .symtab, so a pass that counted the table wrong would name
// one a stub fewer or more than the table at the cap where they start to fit.
TEST(ElfSymbol, CapsCountAlikeInPassesAndTableUpToThePltStubs) {
  elf_test::TempDir dir;
  const std::string prog = build_c_program(
      dir,
      "#include <stdio.h>\n#include <stdlib.h>\n"
      "int __attribute__((noinline)) ehbt_fn_a(int x) { return puts(\"a\") + x; }\n"
      "int __attribute__((noinline)) ehbt_fn_b(int x) { return getenv(\"B\") != 0 ? x : 1; }\n"
      "int main(int argc, char** argv) {\n"
      "  (void)argv; return ehbt_fn_a(argc) + ehbt_fn_b(argc) + atoi(\"3\");\n}\n");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::vector<std::byte> bytes = elf_test::read_file(prog);
  const auto where = find_symtab(bytes);
  ASSERT_TRUE(where);
  const uint32_t entries = static_cast<uint32_t>(where->symtab_size / sizeof(Elf64_Sym));
  std::vector<uint64_t> addrs;
  for (const auto& s : elf_test::nm_symbols(prog)) {
    if (s.start != 0 && (s.kind == 'T' || s.kind == 't')) addrs.push_back(s.start);
  }
  // Every 16-byte slot of the PLT (and of .plt.sec where the stubs are split off).
  std::size_t plt_slots = 0;
  for (const char* name : {".plt", ".plt.sec"}) {
    if (auto r = section_range(bytes, name)) {
      for (uint64_t a = r->first; a < r->second; a += 16, ++plt_slots) addrs.push_back(a);
    }
  }
  ASSERT_GE(plt_slots, 3u);
  std::size_t stubs_named = 0;
  for (uint32_t cap = 1; cap <= entries + plt_slots + 2; ++cap) {
    ehbt::Limits limits;
    limits.max_symbols = cap;
    auto table = Image::open(prog, limits);
    ASSERT_TRUE(table);
    ehbt::ImageLoader::impl(**table).pass_min_entries = UINT64_MAX;  // the table at once
    stubs_named = 0;
    for (const uint64_t addr : addrs) {
      auto passes = Image::open(prog, limits);  // a first pass, learning the count, each
      ASSERT_TRUE(passes);
      ehbt::ImageLoader::impl(**passes).pass_min_entries = 0;
      auto one = (*passes)->symbolize(addr);
      auto from_table = (*table)->symbolize(addr);
      ASSERT_EQ(one.has_value(), from_table.has_value())
          << "cap " << cap << " of " << entries << " entries, address " << std::hex << addr;
      if (!one) continue;
      EXPECT_EQ(one->name, from_table->name) << "cap " << cap;
      stubs_named += one->name.ends_with("@plt");
    }
  }
  // The largest cap leaves room for everything: the stubs of puts, getenv and atoi are named.
  EXPECT_GE(stubs_named, 3u);
}

}  // namespace
