// SPDX-License-Identifier: Apache-2.0
// DW_EH_PE_* decoding: every format, every application, indirect, aligned, omit, and the
// encodings that must be refused. Expected values are computed by hand from the LSB.
#include <gtest/gtest.h>

#include <map>

#include "support/cfi_builder.hpp"
#include "util/eh_pe.hpp"

namespace ehbt::util {
namespace {

using test::bytes_of;

Expected<uint64_t, ReadError> decode(const std::vector<std::byte>& b, uint8_t enc,
                                     const PointerContext& ctx = {}, uint64_t base = 0x1000,
                                     bool big_endian = false, std::size_t* consumed = nullptr) {
  ByteReader r(b, big_endian, base);
  auto v = read_encoded_pointer(r, enc, ctx);
  if (consumed != nullptr) *consumed = r.offset();
  return v;
}

TEST(EhPe, EveryFormat) {
  std::size_t n = 0;
  // absptr: one address-size word.
  EXPECT_EQ(
      *decode(bytes_of({0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}), 0x00, {}, 0, false, &n),
      0x1122334455667788ull);
  EXPECT_EQ(n, 8u);
  PointerContext ctx4;
  ctx4.address_size = 4;
  EXPECT_EQ(*decode(bytes_of({0x78, 0x56, 0x34, 0x12, 0xff}), 0x00, ctx4, 0, false, &n),
            0x12345678u);
  EXPECT_EQ(n, 4u);
  // uleb128 624485 = e5 8e 26.
  EXPECT_EQ(*decode(bytes_of({0xe5, 0x8e, 0x26}), 0x01), 624485u);
  // udata2/4/8.
  EXPECT_EQ(*decode(bytes_of({0x34, 0x12}), 0x02), 0x1234u);
  EXPECT_EQ(*decode(bytes_of({0x78, 0x56, 0x34, 0x12}), 0x03), 0x12345678u);
  EXPECT_EQ(*decode(bytes_of({1, 0, 0, 0, 0, 0, 0, 0x80}), 0x04), 0x8000000000000001ull);
  // sleb128 -2 = 7e.
  EXPECT_EQ(*decode(bytes_of({0x7e}), 0x09), static_cast<uint64_t>(-2));
  // sdata2/4/8.
  EXPECT_EQ(*decode(bytes_of({0xfe, 0xff}), 0x0a), static_cast<uint64_t>(-2));
  EXPECT_EQ(*decode(bytes_of({0xf0, 0xff, 0xff, 0xff}), 0x0b), static_cast<uint64_t>(-16));
  EXPECT_EQ(*decode(bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), 0x0c), UINT64_MAX);
}

TEST(EhPe, BigEndian) {
  EXPECT_EQ(*decode(bytes_of({0x12, 0x34}), 0x02, {}, 0, true), 0x1234u);
  // pcrel|sdata4 -16 read at 0x2000 -> 0x1ff0.
  EXPECT_EQ(*decode(bytes_of({0xff, 0xff, 0xff, 0xf0}), 0x1b, {}, 0x2000, true), 0x1ff0u);
}

TEST(EhPe, PcRelIsRelativeToTheField) {
  // The field is the 5th byte of a span at 0x1000: 0x1004 - 16 = 0xff4.
  auto b = bytes_of({0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff});
  ByteReader r(b, false, 0x1000);
  r.skip(4);
  auto v = read_encoded_pointer(r, 0x1b, {});
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 0xff4u);
  // pcrel|udata2: 0x1000 + 0x10.
  EXPECT_EQ(*decode(bytes_of({0x10, 0x00}), 0x12), 0x1010u);
  // pcrel|sleb128 -8: 0x1000 - 8.
  EXPECT_EQ(*decode(bytes_of({0x78}), 0x19), 0xff8u);
}

TEST(EhPe, TextDataFuncRelNeedTheirBase) {
  PointerContext ctx;
  ctx.text_base = 0x400000;
  ctx.data_base = 0x600000;
  ctx.func_base = 0x401000;
  EXPECT_EQ(*decode(bytes_of({0x10, 0, 0, 0}), 0x23, ctx), 0x400010u);  // textrel|udata4
  // datarel|sdata4 -0x100.
  EXPECT_EQ(*decode(bytes_of({0x00, 0xff, 0xff, 0xff}), 0x3b, ctx), 0x5fff00u);
  EXPECT_EQ(*decode(bytes_of({0x20, 0}), 0x42, ctx), 0x401020u);  // funcrel|udata2

  PointerContext none;
  for (uint8_t enc : {0x23, 0x3b, 0x42}) {
    auto v = decode(bytes_of({0x10, 0, 0, 0}), enc, none);
    ASSERT_FALSE(v) << int(enc);
    EXPECT_EQ(v.error().code, ReadErrorCode::BadEncoding);
  }
}

TEST(EhPe, AlignedSkipsToTheNextWord) {
  // A span at 0x1001: the aligned word starts at 0x1008, i.e. offset 7.
  auto b = bytes_of(
      {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01});
  std::size_t n = 0;
  EXPECT_EQ(*decode(b, 0x50, {}, 0x1001, false, &n), 0x0102030405060708ull);
  EXPECT_EQ(n, 15u);
  // Address size 4: from 0x1001 the word starts at 0x1004 (offset 3).
  PointerContext ctx4;
  ctx4.address_size = 4;
  EXPECT_EQ(*decode(b, 0x50, ctx4, 0x1001, false, &n), 0xaaaaaaaau);
  EXPECT_EQ(n, 7u);
  // Not enough bytes to reach the boundary.
  auto v = decode(bytes_of({0, 0}), 0x50, {}, 0x1001);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ReadErrorCode::Truncated);
}

TEST(EhPe, IndirectReadsThroughTheReader) {
  std::map<uint64_t, uint64_t> cells{{0x1100, 0xdeadbeef}};
  IndirectFn reader = [&](uint64_t addr) -> std::optional<uint64_t> {
    auto it = cells.find(addr);
    if (it == cells.end()) return std::nullopt;
    return it->second;
  };
  PointerContext ctx;
  ctx.indirect = &reader;
  // indirect|pcrel|sdata4 (0x9b): cell = 0x1000 + 0x100.
  EXPECT_EQ(*decode(bytes_of({0x00, 0x01, 0, 0}), 0x9b, ctx), 0xdeadbeefu);
  // indirect|absptr: cell 0x1100 directly.
  EXPECT_EQ(*decode(bytes_of({0x00, 0x11, 0, 0, 0, 0, 0, 0}), 0x80, ctx), 0xdeadbeefu);

  // A cell the reader cannot read, and no reader at all: MemoryFault at the cell address.
  auto v = decode(bytes_of({0x00, 0x02, 0, 0}), 0x9b, ctx);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ReadErrorCode::MemoryFault);
  EXPECT_EQ(v.error().where, 0x1200u);
  v = decode(bytes_of({0x00, 0x01, 0, 0}), 0x9b, {});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ReadErrorCode::MemoryFault);
  EXPECT_EQ(v.error().where, 0x1100u);
  IndirectFn empty;
  ctx.indirect = &empty;
  EXPECT_EQ(decode(bytes_of({0x00, 0x01, 0, 0}), 0x9b, ctx).error().code,
            ReadErrorCode::MemoryFault);
}

TEST(EhPe, OmitConsumesNothing) {
  std::size_t n = 99;
  auto v = decode(bytes_of({0x12, 0x34}), 0xff, {}, 0x1000, false, &n);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 0u);
  EXPECT_EQ(n, 0u);
}

TEST(EhPe, RejectsUnknownEncodings) {
  // Formats 5-8 and 0xd-0xf, applications 0x60/0x70, aligned with a non-absptr format.
  for (int enc : {0x05, 0x06, 0x07, 0x08, 0x0d, 0x0e, 0x0f, 0x60, 0x70, 0x53, 0x1f, 0xfe}) {
    auto v = decode(bytes_of({0, 0, 0, 0, 0, 0, 0, 0}), static_cast<uint8_t>(enc));
    ASSERT_FALSE(v) << enc;
    EXPECT_EQ(v.error().code, ReadErrorCode::BadEncoding) << enc;
    EXPECT_FALSE(valid_pointer_encoding(static_cast<uint8_t>(enc))) << enc;
  }
  PointerContext odd;
  odd.address_size = 3;
  EXPECT_EQ(decode(bytes_of({0, 0, 0, 0}), 0x00, odd).error().code, ReadErrorCode::BadEncoding);
}

TEST(EhPe, TruncatedValues) {
  for (int enc : {0x00, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x01, 0x09}) {
    auto v = decode(bytes_of({0x80}), static_cast<uint8_t>(enc));
    ASSERT_FALSE(v) << enc;
    EXPECT_EQ(v.error().code, ReadErrorCode::Truncated) << enc;
  }
  auto bad_leb = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  EXPECT_EQ(decode(bad_leb, 0x01).error().code, ReadErrorCode::BadLeb128);
}

TEST(EhPe, ResultsWrapToTheAddressSize) {
  PointerContext ctx4;
  ctx4.address_size = 4;
  // pcrel|sdata4 -0x20 at 0x10: 0x10 - 0x20 wraps to 0xfffffff0 in 32 bits.
  EXPECT_EQ(*decode(bytes_of({0xe0, 0xff, 0xff, 0xff}), 0x1b, ctx4, 0x10), 0xfffffff0u);
  EXPECT_EQ(*decode(bytes_of({0xe0, 0xff, 0xff, 0xff}), 0x1b, {}, 0x10), 0xfffffffffffffff0ull);
}

TEST(EhPe, ValueSizes) {
  EXPECT_EQ(encoded_value_size(0x00, 8), 8u);
  EXPECT_EQ(encoded_value_size(0x00, 4), 4u);
  EXPECT_EQ(encoded_value_size(0x1b, 8), 4u);
  EXPECT_EQ(encoded_value_size(0x3a, 8), 2u);
  EXPECT_EQ(encoded_value_size(0x04, 4), 8u);
  EXPECT_EQ(encoded_value_size(0x01, 8), 0u);
  EXPECT_EQ(encoded_value_size(0x09, 8), 0u);
}

}  // namespace
}  // namespace ehbt::util
