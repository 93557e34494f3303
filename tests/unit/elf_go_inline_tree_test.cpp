// SPDX-License-Identifier: Apache-2.0
// Go source lines (elf/go_lines.hpp) on tables built byte by byte here in the Go 1.16-1.17,
// 1.18-1.19 and 1.20+ layouts, both byte orders: the real binaries of elf_go_lines_test are
// all Go 1.19 (Debian 12's toolchain), so 1.16's (pointer-sized function table and _func
// entry, funcdata as aligned pointers) and 1.20's (_func startLine; inline tree entries of
// funcID, nameOff, parentPc, startLine) are checked here, against the layouts of Go's
// runtime/runtime2.go (_func), runtime/symtab.go (pcHeader, inlinedCall, funcdata) and
// symtabinl.go, and on trees that loop or point outside the function.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "elf/go_lines.hpp"

namespace ehbt::elf {
namespace {

using Version = GoPclntab::Version;

constexpr uint64_t kText = 0x1000;
constexpr uint64_t kGofunc = 0x9000;

// main.outer at [0x1000, 0x1040): [0, 0x10) its own code at a.go:10; [0x10, 0x20) main.leaf
// inlined into main.mid inlined into main.outer, at b.go:30; [0x20, 0x30) main.mid's own code
// at b.go:20 (where it calls leaf); [0x30, 0x40) main.outer at a.go:12 (where it calls mid).
// Inline tree: 0 = main.mid (parentPc 0x30), 1 = main.leaf (parent 0, parentPc 0x20).
struct Range {
  uint64_t end;  // offset from entry
  int32_t file, line, inl;
};
const std::vector<Range> kRanges = {
    {0x10, 0, 10, -1}, {0x20, 1, 30, 1}, {0x28, 1, 20, 0}, {0x30, 1, 21, 0}, {0x40, 0, 12, -1}};

class Builder {
 public:
  Builder(Version v, bool be) : v_(v), be_(be) {}

  // Fills `table` (.gopclntab) and `tree` (the bytes at kGofunc).
  void build(std::vector<std::byte>& table, std::vector<std::byte>& tree) {
    const bool go116 = v_ == Version::Go116, go120 = v_ == Version::Go120;
    std::vector<uint8_t> names;
    const uint32_t outer = add(names, "main.outer"), mid = add(names, "main.mid"),
                   leaf = add(names, "main.leaf");
    std::vector<uint8_t> files;
    const uint32_t a = add(files, "/src/a.go"), b = add(files, "/src/b.go");
    std::vector<uint8_t> cutab;
    put(cutab, 4, 0xffffffff);  // an unrelated unit's slot: the function's cuOffset is 1
    put(cutab, 4, a), put(cutab, 4, b);
    std::vector<uint8_t> pctab{0};
    const uint32_t pcfile = pcvalue(pctab, [](const Range& r) { return r.file; });
    const uint32_t pcln = pcvalue(pctab, [](const Range& r) { return r.line; });
    const uint32_t pcinl = pcvalue(pctab, [](const Range& r) { return r.inl; });
    // 1.16: no textStart in the header, pointer-sized function table entries and _func entry.
    const uint64_t header = 8 + (go116 ? 7 : 8) * 8;
    const uint64_t names_at = header, cutab_at = names_at + names.size(),
                   files_at = cutab_at + cutab.size(), pctab_at = files_at + files.size();
    while ((pctab_at + pctab.size()) % 8 != 0) pctab.push_back(0);  // records are aligned
    const uint64_t ftab_at = pctab_at + pctab.size();
    std::vector<uint8_t> out;
    put(out, 4, go116 ? 0xfffffffa : go120 ? 0xfffffff1 : 0xfffffff0);
    out.insert(out.end(), {0, 0, 1, 8});
    put(out, 8, 1), put(out, 8, 2);
    if (!go116) put(out, 8, kText);
    put(out, 8, names_at), put(out, 8, cutab_at), put(out, 8, files_at), put(out, 8, pctab_at);
    put(out, 8, ftab_at);
    out.insert(out.end(), names.begin(), names.end());
    out.insert(out.end(), cutab.begin(), cutab.end());
    out.insert(out.end(), files.begin(), files.end());
    out.insert(out.end(), pctab.begin(), pctab.end());
    // functab: {entry, funcoff} for the function, then the end pc.
    const unsigned w = go116 ? 8 : 4;
    put(out, w, go116 ? kText : 0), put(out, w, 4 * w);
    put(out, w, go116 ? kText + 0x40 : 0x40), put(out, w, 0);
    // _func
    put(out, w, go116 ? kText : 0), put(out, 4, outer), put(out, 4, 0), put(out, 4, 0);
    put(out, 4, 0), put(out, 4, pcfile), put(out, 4, pcln);
    // npcdata: UnsafePoint, StackMapIndex, InlTreeIndex (and 1.16: one more, so that the
    // funcdata pointers after them need the alignment padding)
    put(out, 4, go116 ? 4 : 3);
    put(out, 4, 1);                       // cuOffset
    if (go120) put(out, 4, 9);            // startLine
    out.insert(out.end(), {0, 0, 0, 4});  // funcID, flag (1.16: pad), pad, nfuncdata
    put(out, 4, 0), put(out, 4, 0), put(out, 4, pcinl);
    if (go116) {
      put(out, 4, 0), put(out, 4, 0xdddddddd);  // the 4th table, then padding to 8
      put(out, 8, 0), put(out, 8, 0), put(out, 8, 0);
      put(out, 8, kGofunc + tree_off_);  // FUNCDATA_InlTree: its address
    } else {
      put(out, 4, 0xffffffff), put(out, 4, 0xffffffff), put(out, 4, 0xffffffff);
      put(out, 4, tree_off_);  // FUNCDATA_InlTree: an offset from gofunc
    }
    table.assign(reinterpret_cast<std::byte*>(out.data()),
                 reinterpret_cast<std::byte*>(out.data()) + out.size());

    std::vector<uint8_t> t(tree_off_, 0xee);
    entry(t, -1, 5, 21, mid, mid_parent_pc);
    entry(t, 0, 5, 20, leaf, leaf_parent_pc);
    tree.assign(reinterpret_cast<std::byte*>(t.data()),
                reinterpret_cast<std::byte*>(t.data()) + t.size());
  }

  uint32_t tree_off_ = 8;
  int32_t mid_parent_pc = 0x30, leaf_parent_pc = 0x20;

 private:
  void put(std::vector<uint8_t>& out, unsigned size, uint64_t v) {
    for (unsigned i = 0; i < size; ++i) {
      const unsigned shift = 8 * (be_ ? size - 1 - i : i);
      out.push_back(static_cast<uint8_t>(v >> shift));
    }
  }
  static uint32_t add(std::vector<uint8_t>& tab, const std::string& s) {
    const auto at = static_cast<uint32_t>(tab.size());
    tab.insert(tab.end(), s.begin(), s.end());
    tab.push_back(0);
    return at;
  }
  static void varint(std::vector<uint8_t>& out, uint32_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
  }
  // One pc-value table over kRanges (runs of equal values merged, as Go's linker does).
  template <typename F>
  uint32_t pcvalue(std::vector<uint8_t>& pctab, F value_of) {
    const auto at = static_cast<uint32_t>(pctab.size());
    int64_t prev = -1;
    uint64_t pc = 0;
    for (std::size_t i = 0; i < kRanges.size(); ++i) {
      const int64_t v = value_of(kRanges[i]);
      uint64_t end = kRanges[i].end;
      while (i + 1 < kRanges.size() && value_of(kRanges[i + 1]) == v) end = kRanges[++i].end;
      const int64_t d = v - prev;
      varint(pctab, d < 0 ? (uint32_t(-d - 1) << 1) | 1 : uint32_t(d) << 1);
      varint(pctab, static_cast<uint32_t>(end - pc));
      prev = v;
      pc = end;
    }
    pctab.push_back(0);
    return at;
  }
  void entry(std::vector<uint8_t>& t, int16_t parent, uint8_t file, int32_t line, uint32_t name,
             int32_t parent_pc) {
    if (v_ == Version::Go120) {
      t.insert(t.end(), {0, 0, 0, 0});  // funcID, pad
      put(t, 4, name), put(t, 4, static_cast<uint32_t>(parent_pc)), put(t, 4, 7);
    } else {
      put(t, 2, static_cast<uint16_t>(parent)), t.insert(t.end(), {0, 0});
      put(t, 4, file), put(t, 4, static_cast<uint32_t>(line)), put(t, 4, name);
      put(t, 4, static_cast<uint32_t>(parent_pc));
    }
  }

  Version v_;
  bool be_;
};

struct Layout {
  Version version;
  bool big_endian;
};

class GoInlineTree : public ::testing::TestWithParam<Layout> {
 protected:
  void SetUp() override {
    Builder b(GetParam().version, GetParam().big_endian);
    configure(b);
    b.build(table_bytes_, tree_bytes_);
  }
  virtual void configure(Builder&) {}
  std::optional<SourceInfo> lookup(uint64_t pc, const Limits& limits = {}) {
    auto table = GoPclntab::parse(table_bytes_);
    EXPECT_TRUE(table.has_value());
    if (!table) return std::nullopt;
    // 1.18+: funcdata are offsets from gofunc; 1.16: addresses.
    const uint64_t gofunc = GetParam().version == Version::Go116 ? 0 : kGofunc;
    GoInlineTrees trees{gofunc, [this](uint64_t addr, std::span<std::byte> out) -> std::size_t {
                          if (addr < kGofunc || addr - kGofunc >= tree_bytes_.size()) return 0;
                          const std::size_t n = std::min<std::size_t>(
                              out.size(), tree_bytes_.size() - (addr - kGofunc));
                          std::memcpy(out.data(), tree_bytes_.data() + (addr - kGofunc), n);
                          return n;
                        }};
    return go_source_info(*table, trees, pc, limits);
  }
  std::vector<std::byte> table_bytes_, tree_bytes_;
};

SourcePosition at(const char* file, uint32_t line) {
  return SourcePosition{file, line, 0};
}

void expect_position(const std::optional<SourcePosition>& got, const SourcePosition& want) {
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->file, want.file);
  EXPECT_EQ(got->line, want.line);
  EXPECT_EQ(got->column, 0u);
}

TEST_P(GoInlineTree, OwnCodeHasItsLineAndNoInlinedCalls) {
  auto info = lookup(kText + 0x5);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->inlined.empty());
  expect_position(info->location, at("/src/a.go", 10));
  info = lookup(kText + 0x3f);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->inlined.empty());
  expect_position(info->location, at("/src/a.go", 12));
}

TEST_P(GoInlineTree, TwoLevelsInlinedInnermostFirst) {
  auto info = lookup(kText + 0x18);
  ASSERT_TRUE(info);
  ASSERT_EQ(info->inlined.size(), 2u);
  EXPECT_EQ(info->inlined[0].function, "main.leaf");
  expect_position(info->inlined[0].location, at("/src/b.go", 30));
  EXPECT_EQ(info->inlined[1].function, "main.mid");
  expect_position(info->inlined[1].location, at("/src/b.go", 20));
  expect_position(info->location, at("/src/a.go", 12));
}

TEST_P(GoInlineTree, OneLevelInlined) {
  auto info = lookup(kText + 0x2c);
  ASSERT_TRUE(info);
  ASSERT_EQ(info->inlined.size(), 1u);
  EXPECT_EQ(info->inlined[0].function, "main.mid");
  expect_position(info->inlined[0].location, at("/src/b.go", 21));
  expect_position(info->location, at("/src/a.go", 12));
}

TEST_P(GoInlineTree, OutsideTheFunctionNothing) {
  EXPECT_FALSE(lookup(kText - 1).has_value());
  EXPECT_FALSE(lookup(kText + 0x40).has_value());
}

TEST_P(GoInlineTree, CapsAndUnreadableTrees) {
  Limits shallow;
  shallow.max_go_inline_depth = 1;
  EXPECT_FALSE(lookup(kText + 0x18, shallow).has_value());
  EXPECT_TRUE(lookup(kText + 0x2c, shallow).has_value());
  Limits few_steps;
  few_steps.max_go_pcvalue_steps = 1;  // a.go:12 is past the first entry of every table
  EXPECT_FALSE(lookup(kText + 0x3f, few_steps).has_value());
  // The tree cut short: the inlined pcs give nothing, the function's own code still answers.
  tree_bytes_.resize(tree_bytes_.size() - 4);
  EXPECT_FALSE(lookup(kText + 0x18).has_value());
  EXPECT_TRUE(lookup(kText + 0x5).has_value());
}

class LoopingTree : public GoInlineTree {
  void configure(Builder& b) override { b.leaf_parent_pc = 0x18; }  // leaf's own code
};

TEST_P(LoopingTree, GivesNothing) {
  EXPECT_FALSE(lookup(kText + 0x18).has_value());
}

class OutsideTree : public GoInlineTree {
  void configure(Builder& b) override { b.mid_parent_pc = 0x40; }  // past the function's end
};

TEST_P(OutsideTree, GivesNothing) {
  EXPECT_FALSE(lookup(kText + 0x2c).has_value());
  EXPECT_TRUE(lookup(kText + 0x5).has_value());
}

const Layout kLayouts[] = {{Version::Go116, false}, {Version::Go116, true},
                           {Version::Go118, false}, {Version::Go118, true},
                           {Version::Go120, false}, {Version::Go120, true}};
INSTANTIATE_TEST_SUITE_P(Layouts, GoInlineTree, ::testing::ValuesIn(kLayouts));
INSTANTIATE_TEST_SUITE_P(Layouts, LoopingTree, ::testing::ValuesIn(kLayouts));
INSTANTIATE_TEST_SUITE_P(Layouts, OutsideTree, ::testing::ValuesIn(kLayouts));

}  // namespace
}  // namespace ehbt::elf
