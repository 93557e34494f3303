// SPDX-License-Identifier: Apache-2.0
// .eh_frame_hdr: header fields, every fixed-size table encoding, the binary search and its
// sortedness and probe checks, and malformed headers.
#include <gtest/gtest.h>

#include <vector>

#include "dwarf/cfi.hpp"
#include "support/cfi_builder.hpp"

namespace ehbt::dwarf {
namespace {

using test::build_eh_frame_hdr;
using test::bytes_of;
using test::HdrSpec;

TEST(EhFrameHdr, HandAssembled) {
  // At 0x2000; .eh_frame at 0x1000; three entries, datarel|sdata4 from 0x2000.
  auto b = bytes_of({
      0x01, 0x1b, 0x03, 0x3b,  // version, pcrel|sdata4, udata4, datarel|sdata4
      0xfc, 0xef, 0xff, 0xff,  // eh_frame_ptr: 0x2004 - 0x1004 = 0x1000
      0x03, 0x00, 0x00, 0x00,  // fde_count 3
      0x00, 0xf0, 0x3f, 0x00, 0x18, 0xf0, 0xff, 0xff,  // 0x401000 -> FDE 0x1018
      0x00, 0xf1, 0x3f, 0x00, 0x30, 0xf0, 0xff, 0xff,  // 0x401100 -> FDE 0x1030
      0x00, 0x00, 0x40, 0x00, 0x48, 0xf0, 0xff, 0xff,  // 0x402000 -> FDE 0x1048
  });
  auto h = EhFrameHdr::parse({0x2000, b}, Format{}, Limits{});
  ASSERT_TRUE(h) << to_string(h.error().code);
  EXPECT_EQ(h->eh_frame_addr(), 0x1000u);
  EXPECT_TRUE(h->has_table());
  EXPECT_EQ(h->count(), 3u);
  EXPECT_EQ(h->table_encoding(), 0x3b);
  auto e = h->entry(1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->initial_loc, 0x401100u);
  EXPECT_EQ(e->fde_addr, 0x1030u);
  EXPECT_FALSE(h->entry(3));

  EXPECT_EQ(h->lookup(0x400fff).error().code, ErrorCode::NoEntry);
  EXPECT_EQ(*h->lookup(0x401000), 0x1018u);
  EXPECT_EQ(*h->lookup(0x4010ff), 0x1018u);
  EXPECT_EQ(*h->lookup(0x401100), 0x1030u);
  EXPECT_EQ(*h->lookup(0x401fff), 0x1030u);
  EXPECT_EQ(*h->lookup(0x402000), 0x1048u);
  EXPECT_EQ(*h->lookup(UINT64_MAX), 0x1048u);
  EXPECT_EQ(h->lookup_entry(0x401234)->initial_loc, 0x401100u);
}

TEST(EhFrameHdr, EveryFixedSizeTableEncoding) {
  // Values that fit every format, signed or not, relative or not: below 0x8000 (sdata2) and
  // above every field address (unsigned relative formats): hdr at 0x1000.
  const std::vector<std::pair<uint64_t, uint64_t>> entries = {
      {0x5000, 0x3000}, {0x5100, 0x3040}, {0x6000, 0x3080}};
  for (uint8_t format : {0x00, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c}) {
    for (uint8_t app : {0x00, 0x10, 0x30}) {
      for (bool be : {false, true}) {
        HdrSpec spec;
        spec.table_enc = format | app;
        spec.eh_frame_addr = 0x2000;
        spec.entries = entries;
        auto b = build_eh_frame_hdr(spec, 0x1000, be);
        auto h = EhFrameHdr::parse({0x1000, b}, Format{be, 8}, Limits{});
        const int enc = spec.table_enc;
        ASSERT_TRUE(h) << enc;
        ASSERT_TRUE(h->has_table()) << enc;
        EXPECT_EQ(h->count(), 3u);
        EXPECT_EQ(h->eh_frame_addr(), 0x2000u);
        EXPECT_EQ(h->lookup(0x4fff).error().code, ErrorCode::NoEntry) << enc;
        EXPECT_EQ(h->lookup(0x5000).value_or(0), 0x3000u) << enc;
        EXPECT_EQ(h->lookup(0x50ff).value_or(0), 0x3000u) << enc;
        EXPECT_EQ(h->lookup(0x5100).value_or(0), 0x3040u) << enc;
        EXPECT_EQ(h->lookup(0x6000).value_or(0), 0x3080u) << enc;
        EXPECT_EQ(h->lookup(0x7fff).value_or(0), 0x3080u) << enc;
      }
    }
  }
  // sdata2 really is signed: 0xb000 stored absolutely reads back as 0xffffffffffffb000.
  HdrSpec spec;
  spec.table_enc = 0x0a;
  spec.entries = {{0xb000, 0x3000}};
  auto b = build_eh_frame_hdr(spec, 0x1000);
  auto h = EhFrameHdr::parse({0x1000, b}, Format{}, Limits{});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->entry(0)->initial_loc, 0xffffffffffffb000u);
}

// The usual table (datarel|sdata4) with 4-byte addresses wraps modulo 2^32, as any encoded
// pointer does; with the header at address 0 datarel has no base, and an entry is an error.
TEST(EhFrameHdr, DatarelSdata4WithFourByteAddresses) {
  // Header at 0xfffff000: offset +0x3000 is 0x1_00002000 in 64 bits, 0x2000 in 32.
  auto b = bytes_of({
      0x01, 0x1b, 0x03, 0x3b,  // version, pcrel|sdata4, udata4, datarel|sdata4
      0x00, 0x01, 0x00, 0x00,  // eh_frame_ptr: 0xfffff004 + 0x100
      0x01, 0x00, 0x00, 0x00,  // fde_count 1
      0x00, 0x30, 0x00, 0x00, 0x00, 0xf0, 0xff, 0xff,  // +0x3000 -> FDE -0x1000
  });
  auto h = EhFrameHdr::parse({0xfffff000, b}, Format{false, 4}, Limits{});
  ASSERT_TRUE(h) << to_string(h.error().code);
  auto e = h->entry(0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->initial_loc, 0x2000u);
  EXPECT_EQ(e->fde_addr, 0xffffe000u);
  auto at_zero = EhFrameHdr::parse({0, b}, Format{false, 4}, Limits{});
  ASSERT_TRUE(at_zero);
  ASSERT_TRUE(at_zero->has_table());
  EXPECT_FALSE(at_zero->entry(0));
}

TEST(EhFrameHdr, AbsptrWithFourByteAddresses) {
  HdrSpec spec;
  spec.eh_frame_ptr_enc = 0x00;
  spec.table_enc = 0x00;
  spec.eh_frame_addr = 0x9000;
  spec.entries = {{0x10000, 0x9010}, {0x20000, 0x9020}};
  auto b = build_eh_frame_hdr(spec, 0x8000, false, 4);
  EXPECT_EQ(b.size(), 4u + 4u + 4u + 2u * 8u);
  auto h = EhFrameHdr::parse({0x8000, b}, Format{false, 4}, Limits{});
  ASSERT_TRUE(h);
  EXPECT_EQ(h->eh_frame_addr(), 0x9000u);
  EXPECT_EQ(*h->lookup(0x1ffff), 0x9010u);
  EXPECT_EQ(*h->lookup(0x20000), 0x9020u);
}

TEST(EhFrameHdr, NoUsableTable) {
  // Variable-size, omitted or context-dependent table encodings; an omitted count.
  for (int enc : {0x01, 0x09, 0x1b | 0x80, 0x23, 0x43, 0x50, 0xff}) {
    HdrSpec spec;
    spec.table_enc = static_cast<uint8_t>(enc);
    spec.eh_frame_addr = 0x9000;
    spec.entries = {{0xb000, 0xa000}, {0xb100, 0xa040}};
    auto b = build_eh_frame_hdr(spec, 0x8000);
    auto h = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
    ASSERT_TRUE(h) << enc;
    EXPECT_FALSE(h->has_table()) << enc;
    EXPECT_EQ(h->eh_frame_addr(), 0x9000u);
    EXPECT_EQ(h->lookup(0x1234).error().code, ErrorCode::NoEntry);
  }
  HdrSpec spec;
  spec.fde_count_enc = 0xff;
  spec.entries = {{0xb000, 0xa000}};
  auto b = build_eh_frame_hdr(spec, 0x8000);
  auto h = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->has_table());
}

TEST(EhFrameHdr, MalformedHeaders) {
  {
    HdrSpec spec;
    spec.version = 2;
    auto b = build_eh_frame_hdr(spec, 0x8000);
    EXPECT_EQ(EhFrameHdr::parse({0x8000, b}, Format{}, Limits{}).error().code,
              ErrorCode::BadVersion);
  }
  {
    auto b = bytes_of({0x01, 0x1b, 0x03});
    EXPECT_EQ(EhFrameHdr::parse({0x8000, b}, Format{}, Limits{}).error().code,
              ErrorCode::Truncated);
  }
  {
    auto b = bytes_of({0x01, 0xff, 0x03, 0x3b, 0, 0, 0, 0});
    EXPECT_EQ(EhFrameHdr::parse({0x8000, b}, Format{}, Limits{}).error().code,
              ErrorCode::BadEncoding);
  }
  {
    auto b = bytes_of({0x01, 0x1b, 0x03, 0x3b, 0, 0});  // eh_frame_ptr cut short
    EXPECT_EQ(EhFrameHdr::parse({0x8000, b}, Format{}, Limits{}).error().code,
              ErrorCode::Truncated);
  }
}

TEST(EhFrameHdr, CountLargerThanTheSection) {
  HdrSpec spec;
  spec.entries = {{0xb000, 0xa000}, {0xb100, 0xa040}, {0xc000, 0xa080}};
  spec.fde_count = 4;
  auto b = build_eh_frame_hdr(spec, 0x8000);
  auto h = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::BadLength);
  spec.fde_count = UINT32_MAX;  // no overflow in count * entry size
  b = build_eh_frame_hdr(spec, 0x8000);
  EXPECT_EQ(EhFrameHdr::parse({0x8000, b}, Format{}, Limits{}).error().code, ErrorCode::BadLength);
  spec.fde_count = 2;  // fewer is fine: the extra bytes are ignored
  b = build_eh_frame_hdr(spec, 0x8000);
  auto ok = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok->lookup(0xc000), 0xa040u);
}

TEST(EhFrameHdr, UnsortedTableDetectedByProbes) {
  HdrSpec spec;
  spec.entries = {{0x401000, 0xa000},
                  {0x405000, 0xa040},  // out of order
                  {0x402000, 0xa080},
                  {0x403000, 0xa0c0},
                  {0x404000, 0xa100}};
  auto b = build_eh_frame_hdr(spec, 0x8000);
  auto h = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
  ASSERT_TRUE(h);
  // Probes for 0x401500: entry 2 (0x402000 > pc: upper bound), then entry 1 (0x405000 is
  // above that upper bound).
  auto r = h->lookup(0x401500);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::Unsorted);
  EXPECT_EQ(r.error().where, 12u + 8u);  // entry 1 in the section

  // A reversed pair found from below.
  spec.entries = {{0x401000, 0xa000}, {0x402000, 0xa040}, {0x400000, 0xa080}};
  b = build_eh_frame_hdr(spec, 0x8000);
  h = EhFrameHdr::parse({0x8000, b}, Format{}, Limits{});
  ASSERT_TRUE(h);
  // 0x402800: entry 1 (0x402000 <= pc: lower bound), then entry 2 (0x400000 below it).
  EXPECT_EQ(h->lookup(0x402800).error().code, ErrorCode::Unsorted);
}

TEST(EhFrameHdr, LimitSearchProbes) {
  HdrSpec spec;
  for (uint64_t i = 0; i < 16; ++i) spec.entries.push_back({0x400000 + i * 0x100, 0xa000 + i});
  auto b = build_eh_frame_hdr(spec, 0x8000);
  Limits lim;
  lim.max_search_probes = 5;  // ceil(log2(16 + 1)) = 5 probes at most
  auto h = EhFrameHdr::parse({0x8000, b}, Format{}, lim);
  ASSERT_TRUE(h);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(*h->lookup(0x400000 + i * 0x100 + 0x80), 0xa000 + i);
  lim.max_search_probes = 3;
  h = EhFrameHdr::parse({0x8000, b}, Format{}, lim);
  ASSERT_TRUE(h);
  auto r = h->lookup(0x400f80);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::LimitSearchProbes);
}

}  // namespace
}  // namespace ehbt::dwarf
