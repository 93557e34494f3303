// SPDX-License-Identifier: Apache-2.0
// Go's function table reader on tables built byte by byte here, in every layout it reads
// (Go 1.2, 1.16, 1.18 and 1.20 headers; both byte orders; 4- and 8-byte pointers), and on
// truncated, unsorted and garbage tables: those give no answer, never a wrong one or a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "elf/go_pclntab.hpp"

namespace ehbt::elf {
namespace {

using Version = GoPclntab::Version;

// One function: its entry, name and frame-size steps (sp delta, pc where that value ends).
struct FuncSpec {
  uint64_t entry;
  std::string name;
  std::vector<std::pair<int32_t, uint64_t>> sp_steps;
};

// Writes a table the way Go's linker lays it out (cmd/link/internal/ld/pcln.go): header,
// function names, pc-value tables, then the function table and the _func records.
class TableBuilder {
 public:
  TableBuilder(Version v, bool big_endian, unsigned ptr, unsigned quantum)
      : v_(v), be_(big_endian), ptr_(ptr), quantum_(quantum) {}

  std::vector<std::byte> build(const std::vector<FuncSpec>& funcs, uint64_t end_pc,
                               uint64_t text_start) {
    const uint64_t header = v_ == Version::Go12    ? 8 + ptr_
                            : v_ == Version::Go116 ? 8 + 7 * ptr_
                                                   : 8 + 8 * ptr_;
    std::vector<uint8_t> names, pctab{0};  // offset 0 of pctab means "no table"
    std::vector<uint64_t> name_offs, pcsp_offs;
    for (const FuncSpec& f : funcs) {
      name_offs.push_back(names.size());
      names.insert(names.end(), f.name.begin(), f.name.end());
      names.push_back(0);
      if (f.sp_steps.empty()) {
        pcsp_offs.push_back(0);
        continue;
      }
      pcsp_offs.push_back(pctab.size());
      int64_t prev = -1;
      uint64_t pc = f.entry;
      for (auto [value, until] : f.sp_steps) {
        const int64_t d = value - prev;
        varint(pctab, d < 0 ? (uint32_t(-d - 1) << 1) | 1 : uint32_t(d) << 1);
        varint(pctab, uint32_t((until - pc) / quantum_));
        prev = value;
        pc = until;
      }
      pctab.push_back(0);
    }
    const bool go12 = v_ == Version::Go12;
    const uint64_t names_at = go12 ? 0 : header;
    const uint64_t pctab_at = go12 ? 0 : header + names.size();
    const uint64_t functab_at = go12 ? header : header + names.size() + pctab.size();
    const unsigned w = v_ >= Version::Go118 ? 4 : ptr_;
    const uint64_t ftab_size = (funcs.size() + 1) * 2 * w;
    const unsigned entry_w = v_ >= Version::Go118 ? 4 : ptr_;
    const uint64_t record_size = entry_w + 4 * 8;

    out_.clear();
    put(4, v_ == Version::Go12    ? 0xfffffffb
           : v_ == Version::Go116 ? 0xfffffffa
           : v_ == Version::Go118 ? 0xfffffff0
                                  : 0xfffffff1);
    put(1, 0), put(1, 0), put(1, quantum_), put(1, ptr_);
    put(ptr_, funcs.size());
    if (!go12) {
      put(ptr_, 0);  // nfiles
      if (v_ >= Version::Go118) put(ptr_, text_start);
      put(ptr_, names_at), put(ptr_, 0), put(ptr_, 0), put(ptr_, pctab_at), put(ptr_, functab_at);
      append(names), append(pctab);
    }
    // Before 1.16 the names and pc-value tables follow the records, at absolute offsets.
    const uint64_t records_at = functab_at + ftab_size;
    const uint64_t go12_names = records_at + funcs.size() * record_size;
    const uint64_t go12_pctab = go12_names + names.size();
    for (std::size_t i = 0; i <= funcs.size(); ++i) {
      const uint64_t entry = i < funcs.size() ? funcs[i].entry : end_pc;
      put(w, v_ >= Version::Go118 ? entry - text_start : entry);
      const uint64_t rec = records_at + i * record_size;
      put(w, i < funcs.size() ? (go12 ? rec : rec - functab_at) : 0);
    }
    for (std::size_t i = 0; i < funcs.size(); ++i) {
      put(entry_w, v_ >= Version::Go118 ? funcs[i].entry - text_start : funcs[i].entry);
      put(4, go12 ? go12_names + name_offs[i] - names_at : name_offs[i]);
      put(4, 0), put(4, 0);  // args, deferreturn
      const uint64_t pcsp = pcsp_offs[i] == 0 ? 0 : pcsp_offs[i] + (go12 ? go12_pctab : 0);
      put(4, pcsp);
      put(4, 0), put(4, 0), put(4, 0), put(4, 0);  // pcfile, pcln, npcdata, cu/flags
    }
    if (go12) append(names), append(pctab);
    return out_;
  }

 private:
  static void varint(std::vector<uint8_t>& out, uint32_t v) {
    while (v >= 0x80) {
      out.push_back(uint8_t(v | 0x80));
      v >>= 7;
    }
    out.push_back(uint8_t(v));
  }
  void put(unsigned size, uint64_t v) {
    for (unsigned i = 0; i < size; ++i) {
      const unsigned shift = be_ ? (size - 1 - i) * 8 : i * 8;
      out_.push_back(std::byte(uint8_t(v >> shift)));
    }
  }
  void append(const std::vector<uint8_t>& b) {
    for (uint8_t x : b) out_.push_back(std::byte(x));
  }

  Version v_;
  bool be_;
  unsigned ptr_, quantum_;
  std::vector<std::byte> out_;
};

// Three functions as Go's amd64 compiler emits them: a leaf without a frame, a function with
// a 0x18-byte frame set up at +4 and torn down at +0x20, and an assembly function without a
// pcsp table.
std::vector<FuncSpec> sample(uint64_t text) {
  return {
      {text + 0x00, "main.leaf", {{0, text + 0x08}}},
      {text + 0x20, "main.middle", {{0, text + 0x24}, {0x18, text + 0x40}, {0, text + 0x48}}},
      {text + 0x60, "runtime.raise.abi0", {}},
  };
}

void check_sample(const GoPclntab& t, uint64_t text) {
  ASSERT_EQ(t.size(), 3u);
  auto leaf = t.find(text + 3, 64);
  ASSERT_TRUE(leaf);
  EXPECT_EQ(leaf->entry, text);
  EXPECT_EQ(leaf->end, text + 0x20);
  EXPECT_EQ(t.name(*leaf), "main.leaf");
  EXPECT_EQ(t.sp_delta(*leaf, text + 3, 100), 0);

  auto mid = t.find(text + 0x3f, 64);
  ASSERT_TRUE(mid);
  EXPECT_EQ(t.name(*mid), "main.middle");
  EXPECT_EQ(t.sp_delta(*mid, text + 0x20, 100), 0);
  EXPECT_EQ(t.sp_delta(*mid, text + 0x23, 100), 0);
  EXPECT_EQ(t.sp_delta(*mid, text + 0x24, 100), 0x18);
  EXPECT_EQ(t.sp_delta(*mid, text + 0x3f, 100), 0x18);
  EXPECT_EQ(t.sp_delta(*mid, text + 0x40, 100), 0);
  // Past the table's last pc (padding): no value.
  EXPECT_FALSE(t.sp_delta(*mid, text + 0x50, 100));

  auto raise = t.find(text + 0x60, 64);
  ASSERT_TRUE(raise);
  EXPECT_EQ(t.name(*raise), "runtime.raise.abi0");
  EXPECT_EQ(raise->end, text + 0x70);
  EXPECT_FALSE(t.sp_delta(*raise, text + 0x60, 100));  // no pcsp table

  EXPECT_FALSE(t.find(text - 1, 64));
  EXPECT_FALSE(t.find(text + 0x70, 64));
}

struct Layout {
  Version version;
  bool big_endian;
  unsigned ptr;
  unsigned quantum;
};

class GoPclntabLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(GoPclntabLayouts, NamesAndFrameSizes) {
  const Layout l = GetParam();
  const uint64_t text = l.ptr == 8 ? 0x401000 : 0x8049000;
  TableBuilder b(l.version, l.big_endian, l.ptr, l.quantum);
  const auto bytes = b.build(sample(text), text + 0x70, text);
  auto t = GoPclntab::parse(bytes);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version(), l.version);
  EXPECT_EQ(t->big_endian(), l.big_endian);
  EXPECT_EQ(t->ptr_size(), l.ptr);
  check_sample(*t, text);
}

INSTANTIATE_TEST_SUITE_P(
    AllLayouts, GoPclntabLayouts,
    ::testing::Values(Layout{Version::Go118, false, 8, 1}, Layout{Version::Go120, false, 8, 1},
                      Layout{Version::Go118, true, 8, 1}, Layout{Version::Go116, false, 8, 1},
                      Layout{Version::Go116, true, 4, 1}, Layout{Version::Go12, false, 8, 1},
                      Layout{Version::Go12, true, 4, 1}, Layout{Version::Go118, false, 4, 1}),
    [](const auto& info) {
      const Layout& l = info.param;
      const char* v = l.version == Version::Go12    ? "Go12"
                      : l.version == Version::Go116 ? "Go116"
                      : l.version == Version::Go118 ? "Go118"
                                                    : "Go120";
      return std::string(v) + (l.big_endian ? "BE" : "LE") + std::to_string(l.ptr * 8);
    });

TEST(GoPclntab, PcQuantumScalesPcDeltas) {
  // arm64: pc deltas count 4-byte instructions.
  TableBuilder b(Version::Go118, false, 8, 4);
  const uint64_t text = 0x10000;
  const auto bytes =
      b.build({{text, "main.f", {{0, text + 8}, {0x20, text + 0x40}}}}, text + 0x40, text);
  auto t = GoPclntab::parse(bytes);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pc_quantum(), 4);
  auto f = t->find(text + 0x10, 64);
  ASSERT_TRUE(f);
  EXPECT_EQ(t->sp_delta(*f, text + 4, 100), 0);
  EXPECT_EQ(t->sp_delta(*f, text + 8, 100), 0x20);
}

TEST(GoPclntab, ZeroTextStartTakesTheHint) {
  // A position-independent build leaves textStart to a dynamic relocation: 0 in the file.
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x1000;
  auto bytes = b.build(sample(text), text + 0x70, text);
  for (unsigned i = 24; i < 32; ++i) bytes[i] = std::byte{0};  // textStart
  auto t = GoPclntab::parse(bytes, text);
  ASSERT_TRUE(t);
  check_sample(*t, text);
}

TEST(GoPclntab, EveryTruncationIsRejectedOrAnswersWithinTheBytes) {
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x401000;
  const auto full = b.build(sample(text), text + 0x70, text);
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::vector<std::byte> cut(full.begin(), full.begin() + n);
    auto t = GoPclntab::parse(cut);
    if (!t) continue;
    // Whatever still parses must not claim names or frame sizes it cannot read.
    for (uint64_t pc = text; pc < text + 0x70; ++pc) {
      auto f = t->find(pc, 64);
      if (!f) continue;
      if (auto name = t->name(*f)) {
        EXPECT_FALSE(name->empty());
      }
      (void)t->sp_delta(*f, pc, 100);
    }
  }
  // The header alone (no function table) is no table.
  EXPECT_FALSE(GoPclntab::parse(std::span(full).first(8 + 8 * 8)));
}

TEST(GoPclntab, BadHeadersAreRejected) {
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x401000;
  const auto good = b.build(sample(text), text + 0x70, text);
  ASSERT_TRUE(GoPclntab::parse(good));
  auto bad = good;
  bad[0] = std::byte{0xf5};  // unknown magic
  EXPECT_FALSE(GoPclntab::parse(bad));
  bad = good;
  bad[4] = std::byte{1};  // padding must be zero
  EXPECT_FALSE(GoPclntab::parse(bad));
  bad = good;
  bad[6] = std::byte{3};  // pc quantum
  EXPECT_FALSE(GoPclntab::parse(bad));
  bad = good;
  bad[7] = std::byte{2};  // pointer size
  EXPECT_FALSE(GoPclntab::parse(bad));
  bad = good;
  bad[8] = std::byte{0xff};  // nfunc beyond the bytes
  EXPECT_FALSE(GoPclntab::parse(bad));
  bad = good;
  bad[8 + 8 * 7 + 7] = std::byte{0x7f};  // function table offset beyond the bytes
  EXPECT_FALSE(GoPclntab::parse(bad));
}

TEST(GoPclntab, UnsortedTableGivesNoFunction) {
  // Entries out of order: the search notices instead of returning a wrong function.
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x401000;
  std::vector<FuncSpec> funcs;
  for (int i = 0; i < 16; ++i) funcs.push_back({text + 0x10 * i, "f" + std::to_string(i), {}});
  std::swap(funcs[3].entry, funcs[12].entry);
  const auto bytes = b.build(funcs, text + 0x100, text);
  auto t = GoPclntab::parse(bytes);
  ASSERT_TRUE(t);
  for (uint64_t pc = text; pc < text + 0x100; pc += 4) {
    auto f = t->find(pc, 64);
    if (f) {
      EXPECT_LE(f->entry, pc);
      EXPECT_LT(pc, f->end);
    }
  }
  // A function whose end lies before its entry has no range at all.
  EXPECT_FALSE(t->func(3));
}

TEST(GoPclntab, FrameSizeTableLimitsAndEnds) {
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x401000;
  std::vector<std::pair<int32_t, uint64_t>> steps;
  for (int i = 0; i < 40; ++i) steps.push_back({8 * (i % 3), text + 2 * (i + 1)});
  const auto bytes = b.build({{text, "main.many", steps}}, text + 0x60, text);
  auto t = GoPclntab::parse(bytes);
  ASSERT_TRUE(t);
  auto f = t->find(text, 64);
  ASSERT_TRUE(f);
  EXPECT_EQ(t->sp_delta(*f, text + 2 * 39, 100), 8 * (39 % 3));
  // The 40th entry is out of reach with 39 steps: no value rather than a wrong one.
  EXPECT_FALSE(t->sp_delta(*f, text + 2 * 39, 39));
  EXPECT_EQ(t->sp_delta(*f, text + 2 * 38, 39), 8 * (38 % 3));
  EXPECT_FALSE(t->sp_delta(*f, text + 2 * 40, 100));  // past the table's end
  EXPECT_FALSE(t->sp_delta(*f, text - 1, 100));
}

TEST(GoPclntab, SearchOfALargeTableAndItsProbeBudget) {
  // 1,000 functions of 0x20 bytes each, and one of size 0 (an entry equal to the next one's),
  // in both byte orders and both entry widths: every pc finds the function whose
  // [entry, end) holds it. A search over n entries takes at most ceil(log2(n)) probes.
  for (const auto& [version, big, ptr] :
       {std::tuple{Version::Go118, false, 8}, std::tuple{Version::Go118, true, 8},
        std::tuple{Version::Go116, false, 4}}) {
    SCOPED_TRACE(std::to_string(big) + " " + std::to_string(ptr));
    TableBuilder b(version, big, static_cast<uint8_t>(ptr), 1);
    const uint64_t text = 0x401000;
    std::vector<FuncSpec> funcs;
    for (int i = 0; i < 1000; ++i) {
      funcs.push_back({text + 0x20 * i, "f" + std::to_string(i), {}});
      if (i == 500) funcs.push_back({text + 0x20 * (i + 1), "empty", {}});
    }
    const uint64_t end = text + 0x20 * 1000;
    const auto bytes = b.build(funcs, end, text);
    auto t = GoPclntab::parse(bytes, text);
    ASSERT_TRUE(t);
    ASSERT_EQ(t->size(), 1001u);
    for (int i = 0; i < 1000; ++i) {
      for (uint64_t pc : {text + 0x20 * i, text + 0x20 * i + 0x11, text + 0x20 * i + 0x1f}) {
        auto f = t->find(pc, 64);
        ASSERT_TRUE(f) << std::hex << pc;
        EXPECT_EQ(f->entry, text + 0x20 * i);
        EXPECT_EQ(f->end, text + 0x20 * (i + 1));
        EXPECT_EQ(t->name(*f), "f" + std::to_string(i));
      }
    }
    EXPECT_FALSE(t->find(text - 1, 64));
    EXPECT_FALSE(t->find(end, 64));
    // 1,001 entries: ten probes always suffice, nine do not for every pc.
    int nine_failed = 0;
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(t->find(text + 0x20 * i + 4, 10));
      if (!t->find(text + 0x20 * i + 4, 9)) ++nine_failed;
    }
    EXPECT_GT(nine_failed, 0);
  }
}

// find() remembers its recent answers per thread: two tables with functions at the same pcs
// (different names and ends) answer each for itself, asked in turn, more often than it
// remembers; an answer found with ten probes is not given to a call allowing nine (covered by
// the test above), and one table's answer never outlives a table parsed again over new bytes
// at the same address.
TEST(GoPclntab, RememberedAnswersStayWithTheirTable) {
  TableBuilder b(Version::Go118, false, 8, 1);
  const uint64_t text = 0x401000;
  std::vector<FuncSpec> wide, narrow;
  for (int i = 0; i < 64; ++i) {
    wide.push_back({text + 0x40 * i, "wide" + std::to_string(i), {}});
    narrow.push_back({text + 0x40 * i, "narrow" + std::to_string(i), {}});
    narrow.push_back({text + 0x40 * i + 0x20, "gap" + std::to_string(i), {}});
  }
  const auto wide_bytes = b.build(wide, text + 0x40 * 64, text);
  const auto narrow_bytes = b.build(narrow, text + 0x40 * 64, text);
  auto w = GoPclntab::parse(wide_bytes);
  auto n = GoPclntab::parse(narrow_bytes);
  ASSERT_TRUE(w && n);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 64; ++i) {
      for (uint64_t pc : {text + 0x40 * i + 4, text + 0x40 * i + 0x24}) {
        auto fw = w->find(pc, 64);
        auto fn = n->find(pc, 64);
        ASSERT_TRUE(fw && fn) << std::hex << pc;
        EXPECT_EQ(w->name(*fw), "wide" + std::to_string(i));
        EXPECT_EQ(fw->end, text + 0x40 * (i + 1));
        const bool second_half = pc % 0x40 >= 0x20;
        EXPECT_EQ(n->name(*fn), (second_half ? "gap" : "narrow") + std::to_string(i));
        EXPECT_EQ(fn->end, text + 0x40 * i + (second_half ? 0x40 : 0x20));
      }
    }
  }
  // New bytes under the same object: its answers are the new table's.
  const uint64_t pc = text + 0x24;
  ASSERT_EQ(w->name(*w->find(pc, 64)), "wide0");
  *w = *GoPclntab::parse(narrow_bytes);
  auto again = w->find(pc, 64);
  ASSERT_TRUE(again);
  EXPECT_EQ(w->name(*again), "gap0");
  EXPECT_EQ(again->entry, text + 0x20);
}

TEST(GoPclntab, RandomGarbageAfterAValidMagicNeverCrashes) {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::byte> bytes(8 + rng() % 256);
    for (auto& x : bytes) x = std::byte(uint8_t(rng()));
    const uint8_t magics[] = {0xf0, 0xf1, 0xfa, 0xfb};
    bytes[0] = std::byte{magics[rng() % 4]};
    bytes[1] = bytes[2] = bytes[3] = std::byte{0xff};
    bytes[4] = bytes[5] = std::byte{0};
    bytes[6] = std::byte{1};
    bytes[7] = std::byte{uint8_t(rng() % 2 ? 8 : 4)};
    auto t = GoPclntab::parse(bytes, 0x1000);
    if (!t) continue;
    for (int probe = 0; probe < 16; ++probe) {
      auto f = t->find(rng() % 0x100000, 64);
      if (!f) continue;
      (void)t->name(*f);
      (void)t->sp_delta(*f, f->entry, 1000);
    }
  }
}

}  // namespace
}  // namespace ehbt::elf
