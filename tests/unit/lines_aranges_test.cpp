// SPDX-License-Identifier: Apache-2.0
// .debug_aranges read from its bytes (engine/src/lines/aranges_table.hpp): tables built byte by
// byte after DWARF 5 section 6.1.2, well-formed and malformed. A malformed one must be refused
// (Malformed: the caller then asks libdw), never read past its end.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lines/aranges_table.hpp"

namespace ehbt::lines {
namespace {

// Little- or big-endian bytes of a table under construction.
struct Bytes {
  bool big = false;
  std::vector<std::byte> b;
  void put(uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      const unsigned shift = 8 * (big ? n - 1 - i : i);
      b.push_back(static_cast<std::byte>((v >> shift) & 0xff));
    }
  }
};

struct Range {
  uint64_t addr, length;
};

// One set: 32-bit DWARF, version 2, unit at `unit`, address size `as`, no segments, padded
// to 2*as after the 12-byte header, the ranges, then the terminating pair.
void add_set(Bytes& t, uint64_t unit, unsigned as, const std::vector<Range>& ranges,
             bool terminate = true) {
  const std::size_t start = t.b.size();
  t.put(0, 4);  // length, patched below
  t.put(2, 2);
  t.put(unit, 4);
  t.put(as, 1);
  t.put(0, 1);
  while ((t.b.size() - start) % (2 * as) != 0) t.b.push_back(std::byte{0});
  for (const Range& r : ranges) {
    t.put(r.addr, as);
    t.put(r.length, as);
  }
  if (terminate) {
    t.put(0, as);
    t.put(0, as);
  }
  const uint64_t length = t.b.size() - start - 4;
  Bytes len{t.big, {}};
  len.put(length, 4);
  for (int i = 0; i < 4; ++i) t.b[start + i] = len.b[i];
}

constexpr uint64_t kInfo = 0x1000;  // bytes of .debug_info the tables point into

ArangesTable parse(const Bytes& t, uint32_t cap = 1000) {
  return parse_aranges(t.b, t.big, kInfo, cap);
}

TEST(Aranges, SortsByAddressAndFindsTheCoveringRange) {
  Bytes t;
  add_set(t, 0x0, 8, {{0x2000, 0x100}, {0x1000, 0x10}});
  add_set(t, 0x80, 8, {{0x1800, 0x20}});
  const ArangesTable got = parse(t);
  ASSERT_EQ(got.status, ArangesStatus::Ok);
  ASSERT_EQ(got.entries.size(), 3u);
  EXPECT_EQ(got.entries[0].addr, 0x1000u);
  EXPECT_EQ(got.entries[1].addr, 0x1800u);
  EXPECT_EQ(got.entries[2].addr, 0x2000u);
  EXPECT_EQ(find_arange(got.entries, 0x1000)->unit, 0x0u);
  EXPECT_EQ(find_arange(got.entries, 0x100f)->unit, 0x0u);
  EXPECT_EQ(find_arange(got.entries, 0x1010), nullptr);  // one past the end
  EXPECT_EQ(find_arange(got.entries, 0x181f)->unit, 0x80u);
  EXPECT_EQ(find_arange(got.entries, 0x20ff)->unit, 0x0u);
  EXPECT_EQ(find_arange(got.entries, 0xfff), nullptr);
  EXPECT_EQ(find_arange(got.entries, 0x2100), nullptr);
}

TEST(Aranges, BigEndianFourByteAddresses) {
  Bytes t{true, {}};
  add_set(t, 0x40, 4, {{0x400000, 0x30}});
  const ArangesTable got = parse(t);
  ASSERT_EQ(got.status, ArangesStatus::Ok);
  ASSERT_EQ(got.entries.size(), 1u);
  EXPECT_EQ(got.entries[0].addr, 0x400000u);
  EXPECT_EQ(got.entries[0].length, 0x30u);
  EXPECT_EQ(got.entries[0].unit, 0x40u);
}

TEST(Aranges, EmptySectionAndSetWithoutRangesAreNoRanges) {
  EXPECT_EQ(parse(Bytes{}).status, ArangesStatus::Ok);
  Bytes t;
  add_set(t, 0, 8, {});
  const ArangesTable got = parse(t);
  EXPECT_EQ(got.status, ArangesStatus::Ok);
  EXPECT_TRUE(got.entries.empty());
}

// dwarf_getarange_addr returns a zero-length range for its own start address.
TEST(Aranges, ZeroLengthRangeAtItsAddressAsLibdw) {
  Bytes t;
  add_set(t, 0x10, 8, {{0x5000, 0}});
  const ArangesTable got = parse(t);
  ASSERT_EQ(got.status, ArangesStatus::Ok);
  ASSERT_NE(find_arange(got.entries, 0x5000), nullptr);
  EXPECT_EQ(find_arange(got.entries, 0x5001), nullptr);
}

TEST(Aranges, PastTheCapIsTooLarge) {
  Bytes t;
  add_set(t, 0, 8, {{0x1000, 1}, {0x2000, 1}, {0x3000, 1}});
  EXPECT_EQ(parse(t, 3).status, ArangesStatus::Ok);
  const ArangesTable got = parse(t, 2);
  EXPECT_EQ(got.status, ArangesStatus::TooLarge);
  EXPECT_TRUE(got.entries.empty());
}

// Every way a table can be malformed, each from a good one changed in one place.
TEST(Aranges, MalformedTablesAreRefused) {
  Bytes good;
  add_set(good, 0x20, 8, {{0x1000, 0x10}});
  ASSERT_EQ(parse(good).status, ArangesStatus::Ok);
  auto malformed = [](const Bytes& t) { return parse(t).status == ArangesStatus::Malformed; };

  for (std::size_t cut = 1; cut < good.b.size(); ++cut) {  // truncated anywhere
    Bytes t = good;
    t.b.resize(cut);
    EXPECT_TRUE(malformed(t)) << "cut at " << cut;
  }
  {
    Bytes t = good;  // length past the section
    t.b[0] = std::byte{0x7f};
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // a reserved length escape (0xfffffff0)
    t.b[0] = std::byte{0xf0};
    t.b[1] = t.b[2] = t.b[3] = std::byte{0xff};
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // version 3
    t.b[4] = std::byte{3};
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // unit offset whose length field would run past .debug_info
    t.b[6] = std::byte{0xfd};
    t.b[7] = std::byte{0x0f};  // 0xffd + 4 > 0x1000
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // address size 2
    t.b[10] = std::byte{2};
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // a segment selector
    t.b[11] = std::byte{4};
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t;  // no terminating pair: the pairs run into the next set
    add_set(t, 0, 8, {{0x1000, 0x10}}, false);
    add_set(t, 0x20, 8, {{0x2000, 0x10}});
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t;  // a pair of zeros before the set's end (libdw versions differ)
    add_set(t, 0, 8, {{0x1000, 0x10}, {0, 0}, {0x2000, 0x10}});
    EXPECT_TRUE(malformed(t));
  }
  {
    Bytes t = good;  // trailing zeros after the last set
    t.put(0, 8);
    EXPECT_TRUE(malformed(t));
  }
}

// 64-bit DWARF: the 0xffffffff escape, an 8-byte length and an 8-byte unit offset.
TEST(Aranges, SixtyFourBitDwarf) {
  Bytes t;
  t.put(0xffffffff, 4);
  const std::size_t len_at = t.b.size();
  t.put(0, 8);
  t.put(2, 2);
  t.put(0x30, 8);
  t.put(8, 1);
  t.put(0, 1);
  while (t.b.size() % 16 != 0) t.b.push_back(std::byte{0});
  t.put(0x7000, 8);
  t.put(0x40, 8);
  t.put(0, 8);
  t.put(0, 8);
  Bytes len;
  len.put(t.b.size() - len_at - 8, 8);
  for (int i = 0; i < 8; ++i) t.b[len_at + i] = len.b[i];
  const ArangesTable got = parse(t);
  ASSERT_EQ(got.status, ArangesStatus::Ok);
  ASSERT_EQ(got.entries.size(), 1u);
  EXPECT_EQ(got.entries[0].unit, 0x30u);
  EXPECT_EQ(find_arange(got.entries, 0x703f)->addr, 0x7000u);
}

}  // namespace
}  // namespace ehbt::lines
