// SPDX-License-Identifier: Apache-2.0
// The bounds-checked cursor: integers in both byte orders, LEB128 (values from the DWARF 5
// spec's tables 7.6 and 7.7), strings, alignment, and every way a read can run out.
#include <gtest/gtest.h>

#include <vector>

#include "support/cfi_builder.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::util {
namespace {

using test::bytes_of;

TEST(ByteReader, FixedSizeLittleEndian) {
  auto b = bytes_of(
      {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f});
  ByteReader r(b, false);
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  ASSERT_TRUE(r.read_u8(u8));
  ASSERT_TRUE(r.read_u16(u16));
  ASSERT_TRUE(r.read_u32(u32));
  ASSERT_TRUE(r.read_u64(u64));
  EXPECT_EQ(u8, 0x01);
  EXPECT_EQ(u16, 0x0302);
  EXPECT_EQ(u32, 0x07060504u);
  EXPECT_EQ(u64, 0x0f0e0d0c0b0a0908ull);
  EXPECT_TRUE(r.at_end());
  EXPECT_FALSE(r.read_u8(u8));
}

TEST(ByteReader, FixedSizeBigEndian) {
  auto b = bytes_of(
      {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f});
  ByteReader r(b, true);
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  ASSERT_TRUE(r.read_u8(u8));
  ASSERT_TRUE(r.read_u16(u16));
  ASSERT_TRUE(r.read_u32(u32));
  ASSERT_TRUE(r.read_u64(u64));
  EXPECT_EQ(u8, 0x01);
  EXPECT_EQ(u16, 0x0203);
  EXPECT_EQ(u32, 0x04050607u);
  EXPECT_EQ(u64, 0x08090a0b0c0d0e0full);
}

TEST(ByteReader, SignedValuesAreSignExtended) {
  auto b = bytes_of(
      {0xff, 0xfe, 0xff, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f});
  ByteReader r(b, false);
  int8_t s8 = 0;
  int16_t s16 = 0;
  int32_t s32 = 0;
  int64_t s64 = 0;
  ASSERT_TRUE(r.read_s8(s8));
  ASSERT_TRUE(r.read_s16(s16));
  ASSERT_TRUE(r.read_s32(s32));
  ASSERT_TRUE(r.read_s64(s64));
  EXPECT_EQ(s8, -1);
  EXPECT_EQ(s16, -2);         // 0xfffe
  EXPECT_EQ(s32, INT32_MIN);  // 0x80000000
  EXPECT_EQ(s64, INT64_MAX);  // 0x7fffffffffffffff
  int64_t v = 0;
  auto b3 = bytes_of({0x00, 0x00, 0x80});
  ByteReader r3b(b3, false);
  ASSERT_TRUE(r3b.read_sint(3, v));
  EXPECT_EQ(v, -0x800000);
}

TEST(ByteReader, ShortReadsFailAndDoNotMove) {
  auto b = bytes_of({0x01, 0x02, 0x03});
  ByteReader r(b, false);
  uint32_t u32 = 0;
  EXPECT_FALSE(r.read_u32(u32));
  EXPECT_EQ(r.offset(), 0u);
  uint16_t u16 = 0;
  EXPECT_TRUE(r.read_u16(u16));
  EXPECT_FALSE(r.read_u16(u16));
  EXPECT_EQ(r.offset(), 2u);
  uint64_t v = 0;
  EXPECT_FALSE(r.read_uint(0, v));
  EXPECT_FALSE(r.read_uint(9, v));
}

TEST(ByteReader, EmptySpan) {
  ByteReader r;
  uint8_t v = 0;
  EXPECT_FALSE(r.read_u8(v));
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(r.read_uleb128().error().code, ReadErrorCode::Truncated);
  EXPECT_EQ(r.read_sleb128().error().code, ReadErrorCode::Truncated);
  std::string_view s;
  EXPECT_FALSE(r.read_cstring(s));
}

struct UlebCase {
  std::vector<std::byte> bytes;
  uint64_t value;
};

TEST(ByteReader, Uleb128SpecExamples) {
  // DWARF 5 table 7.6.
  const UlebCase cases[] = {
      {bytes_of({0x02}), 2},
      {bytes_of({0x7f}), 127},
      {bytes_of({0x80, 0x01}), 128},
      {bytes_of({0x81, 0x01}), 129},
      {bytes_of({0x82, 0x01}), 130},
      {bytes_of({0xb9, 0x64}), 12857},
      // Redundant continuation bytes are still a valid encoding of 1.
      {bytes_of({0x81, 0x80, 0x80, 0x00}), 1},
      // UINT64_MAX: nine 0xff and a final 0x01 carrying bit 63.
      {bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), UINT64_MAX},
      // 2^63 exactly.
      {bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), 1ull << 63},
  };
  for (const auto& c : cases) {
    ByteReader r(c.bytes, false);
    auto v = r.read_uleb128();
    ASSERT_TRUE(v) << c.value;
    EXPECT_EQ(*v, c.value);
    EXPECT_TRUE(r.at_end());
  }
}

struct SlebCase {
  std::vector<std::byte> bytes;
  int64_t value;
};

TEST(ByteReader, Sleb128SpecExamples) {
  // DWARF 5 table 7.7.
  const SlebCase cases[] = {
      {bytes_of({0x02}), 2},
      {bytes_of({0x7e}), -2},
      {bytes_of({0xff, 0x00}), 127},
      {bytes_of({0x81, 0x7f}), -127},
      {bytes_of({0x80, 0x01}), 128},
      {bytes_of({0x80, 0x7f}), -128},
      {bytes_of({0x81, 0x01}), 129},
      {bytes_of({0xff, 0x7e}), -129},
      {bytes_of({0x40}), -64},
      {bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}), INT64_MAX},
      {bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}), INT64_MIN},
      {bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), -1},
  };
  for (const auto& c : cases) {
    ByteReader r(c.bytes, false);
    auto v = r.read_sleb128();
    ASSERT_TRUE(v) << c.value;
    EXPECT_EQ(*v, c.value);
    EXPECT_TRUE(r.at_end());
  }
}

TEST(ByteReader, Leb128TooLongOrOverflowing) {
  // Eleven bytes.
  auto eleven = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  // Ten bytes whose last carries bits 64 and up.
  auto overflow_u = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
  // Signed: a 10th byte that is neither 0x00 nor 0x7f.
  auto overflow_s = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01});
  {
    ByteReader r(eleven, false);
    auto v = r.read_uleb128();
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error().code, ReadErrorCode::BadLeb128);
    EXPECT_EQ(v.error().where, 0u);
  }
  {
    ByteReader r(eleven, false);
    EXPECT_EQ(r.read_sleb128().error().code, ReadErrorCode::BadLeb128);
  }
  {
    ByteReader r(overflow_u, false);
    EXPECT_EQ(r.read_uleb128().error().code, ReadErrorCode::BadLeb128);
  }
  {
    ByteReader r(overflow_s, false);
    EXPECT_EQ(r.read_sleb128().error().code, ReadErrorCode::BadLeb128);
  }
}

TEST(ByteReader, Leb128TruncatedReportsStart) {
  auto b = bytes_of({0x05, 0x80, 0x80});
  ByteReader r(b, false);
  ASSERT_EQ(*r.read_uleb128(), 5u);
  auto v = r.read_uleb128();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ReadErrorCode::Truncated);
  EXPECT_EQ(v.error().where, 1u);
}

TEST(ByteReader, CStringAndBytes) {
  auto b = bytes_of({'z', 'R', 0, 'x', 1, 2, 3});
  ByteReader r(b, false);
  std::string_view s;
  ASSERT_TRUE(r.read_cstring(s));
  EXPECT_EQ(s, "zR");
  std::span<const std::byte> sub;
  EXPECT_FALSE(r.read_cstring(s));  // no NUL before the end
  EXPECT_EQ(r.offset(), 3u);
  ASSERT_TRUE(r.read_bytes(2, sub));
  EXPECT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[0], std::byte{'x'});
  EXPECT_FALSE(r.read_bytes(3, sub));
  EXPECT_TRUE(r.read_bytes(2, sub));
  EXPECT_TRUE(r.at_end());
}

TEST(ByteReader, SeekSkipAlign) {
  std::vector<std::byte> b(16);
  ByteReader r(b, false, 0x1003);
  EXPECT_EQ(r.address(), 0x1003u);
  ASSERT_TRUE(r.align(4));  // 0x1003 -> 0x1004
  EXPECT_EQ(r.offset(), 1u);
  ASSERT_TRUE(r.align(8));  // 0x1004 -> 0x1008
  EXPECT_EQ(r.offset(), 5u);
  EXPECT_FALSE(r.align(3));  // not a power of two
  EXPECT_TRUE(r.seek(16));
  EXPECT_TRUE(r.at_end());
  EXPECT_FALSE(r.seek(17));
  EXPECT_TRUE(r.seek(10));
  EXPECT_FALSE(r.skip(7));
  EXPECT_TRUE(r.skip(6));
  ByteReader near_end(std::span<const std::byte>(b).first(2), false, 0x1001);
  EXPECT_FALSE(near_end.align(8));  // would need 7 bytes, only 2 exist
}

}  // namespace
}  // namespace ehbt::util
