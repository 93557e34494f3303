// SPDX-License-Identifier: Apache-2.0
// Every way a section can be wrong, and the error the reader gives for it: header fields,
// sub-section bounds, FDE fields, FRE contents, FDE order found during a search, caps, and
// truncation at every byte.
#include <gtest/gtest.h>

#include "sframe/sframe.hpp"
#include "support/sframe_bytes.hpp"

namespace ehbt::sframe {
namespace {

using test::SframeHeader;
using test::SframeSink;

constexpr uint64_t kSection = test::kSframeAddr;  // link-time address of the section
constexpr uint64_t kHeader = test::kSframeHeaderSize;

// A valid amd64 V2 section: one function at 0x2000 (0x20 bytes), two FREs.
std::vector<std::byte> good_v2(SframeHeader h = {}) {
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 0, 2, 0x00);
  fres.bytes({0, 0x03, 8});
  fres.bytes({1, 0x05, 16, -16});
  h.num_fdes = 1;
  h.num_fres = 2;
  return test::assemble(h, fdes, fres);
}

ErrorCode parse_error(const std::vector<std::byte>& bytes, const Limits& limits = {}) {
  auto t = Table::parse(bytes, kSection, limits);
  EXPECT_FALSE(t.has_value());
  return t ? ErrorCode::NotCovered : t.error().code;
}

// Parses (must succeed) and returns the error decoding function 0.
ErrorCode decode_error(const std::vector<std::byte>& bytes, const Limits& limits = {}) {
  auto t = Table::parse(bytes, kSection, limits);
  EXPECT_TRUE(t.has_value()) << (t ? "" : to_string(t.error().code));
  if (!t) return ErrorCode::NotCovered;
  auto fn = t->function(0);
  EXPECT_FALSE(fn.has_value());
  return fn ? ErrorCode::NotCovered : fn.error().code;
}

std::vector<std::byte> one_fre_v2(std::initializer_list<int> fre, uint8_t info = 0x00,
                                  uint8_t abi = 3, uint8_t rep = 0, uint32_t size = 0x20) {
  const bool be = abi == 1 || abi == 4;
  SframeSink fdes(be), fres(be);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), size, 0, 1, info, rep);
  fres.bytes(fre);
  SframeHeader h;
  h.abi = abi;
  h.fixed_ra = abi == 3 ? -8 : 0;
  h.num_fdes = 1;
  h.num_fres = 1;
  return test::assemble(h, fdes, fres);
}

std::vector<std::byte> one_fre_v3_flex(std::initializer_list<int> fre, uint8_t info2 = 0x01) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x2000), 0x20, 0);
  test::put_v3_attr(fres, 1, 0x00, info2);
  fres.bytes(fre);
  SframeHeader h;
  h.version = 3;
  h.num_fdes = 1;
  h.num_fres = 1;
  return test::assemble(h, fdes, fres);
}

TEST(SframeMalformed, HeaderFields) {
  EXPECT_EQ(parse_error(std::vector<std::byte>(27)), ErrorCode::Truncated);
  SframeHeader h;
  h.magic = 0x1234;
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadMagic);
  for (uint8_t v : {0, 1, 4, 255}) {
    h = {};
    h.version = v;
    EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadVersion) << int(v);
  }
  h = {};
  h.flags = 0x8 | 0x5;  // an unknown flag
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadHeader);
  h = {};
  h.flags = 0x4;  // not sorted
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadHeader);
  h = {};
  h.abi = 0;
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadAbi);
  h.abi = 5;
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadAbi);
  h.abi = 4;  // s390x is big-endian, the magic says little
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadAbi);
  h = {};
  h.fixed_ra = 0;  // amd64 must name its RA slot
  EXPECT_EQ(parse_error(good_v2(h)), ErrorCode::BadHeader);
}

TEST(SframeMalformed, V3DropsTheFramePointerFlag) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x2000), 0x20, 0);
  test::put_v3_attr(fres, 1, 0, 0);
  fres.bytes({0, 0x03, 8});
  SframeHeader h;
  h.version = 3;
  h.flags = 0x7;  // FRAME_POINTER is defined for V2 only
  h.num_fdes = 1;
  h.num_fres = 1;
  EXPECT_EQ(parse_error(test::assemble(h, fdes, fres)), ErrorCode::BadHeader);
  SframeHeader h2;
  h2.flags = 0x7;
  EXPECT_TRUE(Table::parse(good_v2(h2), kSection, {}).has_value());
}

TEST(SframeMalformed, BigEndianMagicForLittleAbi) {
  SframeSink fdes(true), fres(true);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 0, 1, 0);
  fres.bytes({0, 0x03, 8});
  SframeHeader h;  // amd64, but written big-endian
  h.num_fdes = 1;
  h.num_fres = 1;
  EXPECT_EQ(parse_error(test::assemble(h, fdes, fres)), ErrorCode::BadAbi);
}

TEST(SframeMalformed, SubSectionBounds) {
  std::vector<std::byte> base = good_v2();
  auto patched = [&](uint32_t offset, uint32_t value) {
    std::vector<std::byte> b = base;
    for (int i = 0; i < 4; ++i) b[offset + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
    return b;
  };
  // Header fields at 8 num_fdes, 12 num_fres, 16 fre_len, 20 fdeoff, 24 freoff.
  EXPECT_EQ(parse_error(patched(8, 1000)), ErrorCode::BadHeader);  // FDEs past the end
  EXPECT_EQ(parse_error(patched(20, 100)), ErrorCode::BadHeader);  // fdeoff past the end
  EXPECT_EQ(parse_error(patched(16, 100)), ErrorCode::BadHeader);  // fre_len past the end
  EXPECT_EQ(parse_error(patched(24, 100)), ErrorCode::BadHeader);  // freoff past the end
  EXPECT_EQ(parse_error(patched(24, 10)), ErrorCode::BadHeader);   // FREs inside the FDEs
  EXPECT_EQ(parse_error(patched(12, 5)), ErrorCode::BadHeader);    // 5 FREs cannot fit 7 bytes
  EXPECT_EQ(parse_error(patched(8, 0xffffffffu)), ErrorCode::BadHeader);  // no overflow
  std::vector<std::byte> aux = base;
  aux[7] = std::byte{200};  // auxiliary header past the end
  EXPECT_EQ(parse_error(aux), ErrorCode::Truncated);
}

TEST(SframeMalformed, FdeFields) {
  // FRE type 3 does not exist.
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x03, 8}, 0x03)), ErrorCode::BadFde);
  // PCMASK with a zero block size.
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x03, 8}, 0x10, 3, 0)), ErrorCode::BadFde);
  // V3 FDE type 2 is not defined.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 4, 57, 8}, 0x02)), ErrorCode::BadFde);
  // The first FRE offset leads past the FRE sub-section.
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 40, 1, 0);
  fres.bytes({0, 0x03, 8});
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 1;
  EXPECT_EQ(decode_error(test::assemble(h, fdes, fres)), ErrorCode::BadFde);
  // V3 attributes cut short by the end of the FRE sub-section: the header check sees that
  // the attributes of every function cannot fit...
  SframeSink f3, r3;
  test::put_v3_index(f3, test::v3_pcrel_start(0x2000), 0x20, 0);
  test::put_v3_attr(r3, 1, 0, 0);
  r3.bytes({0, 0x03, 8});
  SframeHeader h3;
  h3.version = 3;
  h3.num_fdes = 1;
  h3.num_fres = 0;
  std::vector<std::byte> bytes = test::assemble(h3, f3, r3);
  bytes[16] = std::byte{4};  // fre_len 4 < attributes
  bytes.resize(bytes.size() - 4);
  EXPECT_EQ(parse_error(bytes), ErrorCode::BadHeader);
  // ...and decoding sees one function's attributes run past the end.
  SframeSink f4, r4;
  test::put_v3_index(f4, test::v3_pcrel_start(0x2000), 0x20, 0);
  test::put_v3_index(f4, test::v3_pcrel_start(0x3000, 1), 0x20, 10);
  test::put_v3_attr(r4, 1, 0, 0);
  r4.bytes({0, 0x03, 8, 0, 0, 0, 0, 0});  // FRE + 5 spare bytes: 13 in all
  SframeHeader h4;
  h4.version = 3;
  h4.num_fdes = 2;
  h4.num_fres = 1;
  const std::vector<std::byte> t4_bytes = test::assemble(h4, f4, r4);
  auto t4 = Table::parse(t4_bytes, kSection, {});
  ASSERT_TRUE(t4.has_value());
  EXPECT_TRUE(t4->function(0).has_value());
  ASSERT_FALSE(t4->function(1).has_value());
  EXPECT_EQ(t4->function(1).error().code, ErrorCode::BadFde);
}

TEST(SframeMalformed, FreStartsAndBounds) {
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 0, 3, 0);
  fres.bytes({0, 0x03, 8});
  fres.bytes({4, 0x03, 16});
  fres.bytes({4, 0x03, 8});  // not strictly increasing
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 3;
  EXPECT_EQ(decode_error(test::assemble(h, fdes, fres)), ErrorCode::BadFre);

  // A start at the function's end.
  EXPECT_EQ(decode_error(one_fre_v2({0x20, 0x03, 8})), ErrorCode::BadFre);
  // PCMASK: a start outside the repeated block.
  EXPECT_EQ(decode_error(one_fre_v2({16, 0x03, 8}, 0x10, 3, 16)), ErrorCode::BadFre);
  // The FDE claims more FREs than the sub-section holds (the header agrees with the FDE, and
  // six bytes would be enough for three minimal FREs: only decoding finds out).
  SframeSink f2, r2;
  test::put_v2_fde(f2, test::v2_pcrel_start(0x2000), 0x20, 0, 3, 0);
  r2.bytes({0, 0x03, 8});
  r2.bytes({4, 0x03, 16});
  SframeHeader h2;
  h2.num_fdes = 1;
  h2.num_fres = 3;
  EXPECT_EQ(decode_error(test::assemble(h2, f2, r2)), ErrorCode::BadFde);
  // Data words running past the sub-section.
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x05, 8})), ErrorCode::BadFde);
}

TEST(SframeMalformed, DataWordCounts) {
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x63, 8})), ErrorCode::BadFre);        // size code 3
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x07, 8, 1, 2})), ErrorCode::BadFre);  // amd64: 3 words
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x09, 8, 1, 2, 3}, 0, 2)),
            ErrorCode::BadFre);  // aarch64: 4 words
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x09, 8, 1, 2, 3}, 0, 4)),
            ErrorCode::BadFre);  // s390x: 4 words
  // s390x: the RA padding word only stands in front of an FP word.
  EXPECT_EQ(decode_error(one_fre_v2({0, 0x05, 0, 0}, 0, 4)), ErrorCode::BadFre);
}

TEST(SframeMalformed, FlexibleWords) {
  // Too few words for the CFA pair.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 1 << 1, 57})), ErrorCode::BadFre);
  // CFA control word without reg_p (the CFA cannot be based on itself).
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 2 << 1, 2, 8})), ErrorCode::BadFre);
  // Reserved bit 2 set.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 2 << 1, 57 | 4, 8})), ErrorCode::BadFre);
  // RA control word without its offset.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 3 << 1, 57, 8, 2})), ErrorCode::BadFre);
  // Padding with nothing after it.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 3 << 1, 57, 8, 0})), ErrorCode::BadFre);
  // CFA-based rule naming a register (reg_p clear, regnum 5).
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 4 << 1, 57, 8, (5 << 3) | 2, -16})),
            ErrorCode::BadFre);
  // CFA-based value rule (reg_p and deref_p clear, nonzero only through the reserved bit).
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 4 << 1, 57, 8, 4, -16})), ErrorCode::BadFre);
  // An FP padding word.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 5 << 1, 57, 8, 2, -8, 0})), ErrorCode::BadFre);
  // Words left over.
  EXPECT_EQ(decode_error(one_fre_v3_flex({0, 7 << 1, 57, 8, 2, -8, 51, 0, 9})), ErrorCode::BadFre);
}

// Five FDEs whose starts are out of order in the middle: 0x1000, 0x5000, 0x2000, 0x3000,
// 0x4000. A search for 0x1800 probes index 2 (0x2000, above the pc) and then index 1,
// whose 0x5000 lies above a start already seen to its right.
TEST(SframeMalformed, UnsortedFdesFoundDuringSearch) {
  SframeSink fdes, fres;
  const uint64_t starts[] = {0x1000, 0x5000, 0x2000, 0x3000, 0x4000};
  for (unsigned i = 0; i < 5; ++i) {
    test::put_v2_fde(fdes, test::v2_pcrel_start(starts[i], i), 0x100, static_cast<uint32_t>(3 * i),
                     1, 0);
    fres.bytes({0, 0x03, 8});
  }
  SframeHeader h;
  h.num_fdes = 5;
  h.num_fres = 5;
  const std::vector<std::byte> t_bytes = test::assemble(h, fdes, fres);
  auto t = Table::parse(t_bytes, 0x1000, {});
  ASSERT_TRUE(t.has_value());
  auto r = t->find_row(0x1800);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::Unsorted);
  EXPECT_EQ(r.error().where, kHeader + 20);  // FDE 1
}

TEST(SframeMalformed, CorruptFunctionFailsItsLookupOnly) {
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 0, 1, 0);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x3000, 1), 0x20, 3, 1, 0);
  fres.bytes({0, 0x03, 8});
  fres.bytes({0, 0x63, 8});  // size code 3
  SframeHeader h;
  h.num_fdes = 2;
  h.num_fres = 2;
  const std::vector<std::byte> t_bytes = test::assemble(h, fdes, fres);
  auto t = Table::parse(t_bytes, kSection, {});
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->find_row(0x2004).has_value());
  auto bad = t->find_row(0x3004);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::BadFre);
  EXPECT_EQ(bad.error().where, kHeader + 40 + 3);  // the second FRE
}

TEST(SframeMalformed, Caps) {
  Limits few;
  few.max_sframe_fres = 1;
  EXPECT_EQ(decode_error(good_v2(), few), ErrorCode::Limit);
  // One probe cannot search five FDEs.
  SframeSink fdes, fres;
  for (unsigned i = 0; i < 5; ++i) {
    test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000 + 0x100 * i, i), 0x100,
                     static_cast<uint32_t>(3 * i), 1, 0);
    fres.bytes({0, 0x03, 8});
  }
  SframeHeader h;
  h.num_fdes = 5;
  h.num_fres = 5;
  Limits probes;
  probes.max_search_probes = 1;
  const std::vector<std::byte> t_bytes = test::assemble(h, fdes, fres);
  auto t = Table::parse(t_bytes, kSection, probes);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->find_row(0x2250).error().code, ErrorCode::Limit);
}

// Cut a valid section at every length: the header check refuses every prefix. Then make the
// header's FRE length agree with the cut (as a forger would): the header check still refuses
// a sub-section too short for the three FREs it counts; where it is long enough, decoding
// refuses the cut FREs.
TEST(SframeMalformed, TruncatedEverywhere) {
  for (uint8_t version : {2, 3}) {
    SframeSink fdes, fres;
    SframeHeader h;
    h.version = version;
    h.num_fdes = 1;
    h.num_fres = 3;
    if (version == 2) {
      test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x200, 0, 3, 0x01);
    } else {
      test::put_v3_index(fdes, test::v3_pcrel_start(0x2000), 0x200, 0);
      test::put_v3_attr(fres, 3, 0x01, 0x00);
    }
    fres.u16(0).bytes({0x03, 8});
    fres.u16(0x10).bytes({0x25}).u16(16).u16(static_cast<uint16_t>(-16));
    fres.u16(0x100).bytes({0x45}).u32(32).u32(static_cast<uint32_t>(-16));
    const std::vector<std::byte> full = test::assemble(h, fdes, fres);
    auto ok = Table::parse(full, kSection, {});
    ASSERT_TRUE(ok.has_value());
    ASSERT_TRUE(ok->function(0).has_value());
    for (std::size_t len = 0; len < full.size(); ++len) {
      std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_FALSE(Table::parse(cut, kSection, {}).has_value())
          << "v" << int(version) << " " << len;
      if (len < kHeader + fdes.size()) continue;
      const uint32_t fre_len = static_cast<uint32_t>(len - kHeader - fdes.size());
      for (int i = 0; i < 4; ++i) cut[16 + i] = static_cast<std::byte>((fre_len >> (8 * i)) & 0xff);
      auto t = Table::parse(cut, kSection, {});
      const uint64_t min_fre_bytes = 3 * 2 + (version == 3 ? 5 : 0);
      EXPECT_EQ(t.has_value(), fre_len >= min_fre_bytes) << "v" << int(version) << " " << len;
      if (!t) continue;
      EXPECT_FALSE(t->function(0).has_value()) << "v" << int(version) << " " << len;
      EXPECT_FALSE(t->find_row(0x2150).has_value()) << len;
    }
  }
}

// A header that counts fewer FREs than its functions claim is refused whole, in both
// versions, even when every FRE it does count would decode: a strict reader's rule.
TEST(SframeMalformed, HeaderCountsFewerFresThanFunctions) {
  for (uint8_t version : {2, 3}) {
    for (uint32_t header_fres : {0u, 1u, 2u, 3u}) {
      SframeSink fdes, fres;
      SframeHeader h;
      h.version = version;
      h.num_fdes = 2;
      h.num_fres = header_fres;
      // Function 0 has one FRE, function 1 two: three in all.
      if (version == 2) {
        test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000, 0), 0x20, 0, 1, 0x00);
        test::put_v2_fde(fdes, test::v2_pcrel_start(0x2100, 1), 0x20, 3, 2, 0x00);
      } else {
        test::put_v3_index(fdes, test::v3_pcrel_start(0x2000, 0), 0x20, 0);
        test::put_v3_index(fdes, test::v3_pcrel_start(0x2100, 1), 0x20, 8);
        test::put_v3_attr(fres, 1, 0x00, 0x00);
      }
      fres.bytes({0, 0x03, 8});
      if (version == 3) test::put_v3_attr(fres, 2, 0x00, 0x00);
      fres.bytes({0, 0x03, 8});
      fres.bytes({1, 0x05, 16, -16});
      const std::vector<std::byte> bytes = test::assemble(h, fdes, fres);
      auto t = Table::parse(bytes, kSection, {});
      const std::string what =
          "v" + std::to_string(version) + " header counts " + std::to_string(header_fres);
      if (header_fres < 3) {
        ASSERT_FALSE(t.has_value()) << what;
        EXPECT_EQ(t.error().code, ErrorCode::BadHeader) << what;
        EXPECT_EQ(t.error().where, 12u) << what;  // the header's num_fres field
      } else {
        ASSERT_TRUE(t.has_value()) << what << ": " << to_string(t.error().code);
        EXPECT_TRUE(t->find_row(0x2101).has_value()) << what;
      }
    }
  }
}

}  // namespace
}  // namespace ehbt::sframe
