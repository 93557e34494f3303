// SPDX-License-Identifier: Apache-2.0
// The SFrame reader on hand-made V2 sections (bytes from the specification, every info byte
// worked out in the comments): both function-start encodings, the three ABIs in both byte
// orders, FRE start sizes 1/2/4, PCMASK, the outermost-frame FRE and the mangled-RA bit.
#include <gtest/gtest.h>

#include "sframe/sframe.hpp"
#include "support/sframe_bytes.hpp"
#include "support/sframe_checks.hpp"

namespace ehbt::sframe {
namespace {

using dwarf::RuleKind;
using test::expect_cfa;
using test::expect_rule;
using test::parse_ok;
using test::SframeHeader;
using test::SframeSink;

constexpr uint64_t kSection = test::kSframeAddr;  // link-time address of the section

// FRE info bytes (bit 0 base: 1 SP / 0 FP; bits 1-4 word count; bits 5-6 word size; bit 7
// mangled RA).
constexpr int kSp1x1 = 0x03;  // SP, 1 word, 1 byte
constexpr int kSp2x1 = 0x05;  // SP, 2 words, 1 byte
constexpr int kFp2x1 = 0x04;  // FP, 2 words, 1 byte

// amd64: one function at 0x2000, 0x20 bytes, the classic push rbp / mov rsp,rbp frame.
SframeSink amd64_fres() {
  SframeSink fres;
  fres.bytes({0x00, kSp1x1, 8});        // @0:  CFA = rsp+8
  fres.bytes({0x01, kSp2x1, 16, -16});  // @1:  CFA = rsp+16, rbp at CFA-16
  fres.bytes({0x04, kFp2x1, 16, -16});  // @4:  CFA = rbp+16
  fres.bytes({0x1e, kSp1x1, 8});        // @30: CFA = rsp+8 (after leave)
  return fres;
}

TEST(SframeReaderV2, Amd64PcRelativeStarts) {
  SframeSink fdes;
  // PC-relative: the start is counted from the FDE's own start field, at section offset 28.
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x20, 0, 4,
                   /*info: ADDR1, PCINC*/ 0x00);
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 4;
  Table t = parse_ok(test::assemble(h, fdes, amd64_fres()));
  EXPECT_EQ(t.header().version, 2);
  EXPECT_EQ(t.header().abi, Abi::Amd64Little);
  EXPECT_EQ(t.header().fixed_ra_offset, -8);
  EXPECT_EQ(t.arch(), Arch::X86_64);
  ASSERT_EQ(t.num_functions(), 1u);

  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->start, 0x2000u);
  EXPECT_EQ(fn->size, 0x20u);
  ASSERT_EQ(fn->rows.size(), 4u);
  EXPECT_EQ(fn->rows[1].start, 1u);
  EXPECT_EQ(fn->rows[1].fp.kind, Recovery::Kind::AtCfa);
  EXPECT_EQ(fn->rows[1].fp.offset, -16);
  EXPECT_EQ(fn->rows[0].ra.kind, Recovery::Kind::Untracked);

  auto r0 = t.find_row(0x2000);
  ASSERT_TRUE(r0.has_value());
  expect_cfa(*r0, 7, 8);
  EXPECT_EQ(r0->ra_reg, 16);
  expect_rule(*r0, 16, RuleKind::Offset, -8);  // the header's fixed RA slot
  expect_rule(*r0, 6, RuleKind::Unspecified);
  EXPECT_EQ(r0->start, 0x2000u);
  EXPECT_EQ(r0->end, 0x2001u);

  auto r1 = t.find_row(0x2003);
  ASSERT_TRUE(r1.has_value());
  expect_cfa(*r1, 7, 16);
  expect_rule(*r1, 6, RuleKind::Offset, -16);
  EXPECT_EQ(r1->start, 0x2001u);
  EXPECT_EQ(r1->end, 0x2004u);

  auto r2 = t.find_row(0x2010);
  ASSERT_TRUE(r2.has_value());
  expect_cfa(*r2, 6, 16);

  auto r3 = t.find_row(0x201f);
  ASSERT_TRUE(r3.has_value());
  expect_cfa(*r3, 7, 8);
  EXPECT_EQ(r3->end, 0x2020u);

  EXPECT_EQ(t.find_row(0x2020).error().code, ErrorCode::NotCovered);
  EXPECT_EQ(t.find_row(0x1fff).error().code, ErrorCode::NotCovered);
}

TEST(SframeReaderV2, Amd64SectionRelativeStarts) {
  SframeSink fdes;
  // Without FDE_FUNC_START_PCREL the start counts from the section's first byte.
  test::put_v2_fde(fdes, 0x2000 - static_cast<int64_t>(kSection), 0x20, 0, 4, 0x00);
  SframeHeader h;
  h.flags = 0x1;  // FDE_SORTED only
  h.num_fdes = 1;
  h.num_fres = 4;
  Table t = parse_ok(test::assemble(h, fdes, amd64_fres()));
  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->start, 0x2000u);
  auto r = t.find_row(0x2002);
  ASSERT_TRUE(r.has_value());
  expect_cfa(*r, 7, 16);
}

TEST(SframeReaderV2, SeveralFunctionsAndAuxHeader) {
  // Three functions; an auxiliary header of 4 bytes moves everything (offsets count from
  // its end).
  SframeSink fdes, fres;
  const uint64_t starts[] = {0x2000, 0x2100, 0x2400};
  for (int i = 0; i < 3; ++i) {
    test::put_v2_fde(fdes, test::v2_pcrel_start(starts[i], static_cast<unsigned>(i), kSection, 4),
                     0x80, static_cast<uint32_t>(3 * i), 1, 0x00);
    fres.bytes({0x00, kSp1x1, 8 * (i + 1)});
  }
  SframeHeader h;
  h.num_fdes = 3;
  h.num_fres = 3;
  Table t = parse_ok(test::assemble(h, fdes, fres, false, 4));
  for (int i = 0; i < 3; ++i) {
    auto r = t.find_row(static_cast<uint64_t>(starts[i]) + 0x7f);
    ASSERT_TRUE(r.has_value()) << i;
    expect_cfa(*r, 7, 8 * (i + 1));
  }
  EXPECT_EQ(t.find_row(0x2080).error().code, ErrorCode::NotCovered);  // gap after function 0
  EXPECT_EQ(t.find_row(0x2480).error().code, ErrorCode::NotCovered);
}

TEST(SframeReaderV2, FreStartSizes2And4) {
  SframeSink fdes, fres;
  // Function 0 (0x20000 bytes): ADDR2 starts (info 0x01). Function 1: ADDR4 (info 0x02).
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x10000), 0x10000, 0, 2, 0x01);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x20000, 1), 0x30000, 8, 2, 0x02);
  fres.u16(0x0000).bytes({kSp1x1, 8});
  fres.u16(0x0300).bytes({kSp1x1, 24});
  fres.u32(0x00000).bytes({kSp1x1, 8});
  fres.u32(0x12345).bytes({kSp1x1, 40});
  SframeHeader h;
  h.num_fdes = 2;
  h.num_fres = 4;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto a = t.find_row(0x10000 + 0x2ff);
  ASSERT_TRUE(a.has_value());
  expect_cfa(*a, 7, 8);
  auto b = t.find_row(0x10000 + 0x300);
  ASSERT_TRUE(b.has_value());
  expect_cfa(*b, 7, 24);
  auto c = t.find_row(0x20000 + 0x12345);
  ASSERT_TRUE(c.has_value());
  expect_cfa(*c, 7, 40);
  EXPECT_EQ(c->start, 0x32345u);
  EXPECT_EQ(c->end, 0x50000u);
}

TEST(SframeReaderV2, PcMaskRepeatsPerBlock) {
  // A PLT of four 16-byte entries: CFA rsp+8, then rsp+16 from byte 11 of every entry.
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x3000), 0x40, 0, 2,
                   /*info: PCMASK (bit 4), ADDR1*/ 0x10, /*rep*/ 16);
  fres.bytes({0, kSp1x1, 8});
  fres.bytes({11, kSp1x1, 16});
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 2;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->pc_type, PcType::Mask);
  EXPECT_EQ(fn->rep_size, 16);

  auto a = t.find_row(0x3015);  // entry 1, byte 5
  ASSERT_TRUE(a.has_value());
  expect_cfa(*a, 7, 8);
  EXPECT_EQ(a->start, 0x3010u);
  EXPECT_EQ(a->end, 0x301bu);
  auto b = t.find_row(0x302c);  // entry 2, byte 12
  ASSERT_TRUE(b.has_value());
  expect_cfa(*b, 7, 16);
  EXPECT_EQ(b->start, 0x302bu);
  EXPECT_EQ(b->end, 0x3030u);
  auto c = t.find_row(0x303f);  // last byte
  ASSERT_TRUE(c.has_value());
  expect_cfa(*c, 7, 16);
}

TEST(SframeReaderV2, OutermostFreHasNoWords) {
  // _start: FRE info 0x00 (no data words) says the RA is undefined.
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x10, 0, 2, 0x00);
  fres.bytes({0, 0x00});
  fres.bytes({4, kSp1x1, 16});
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 2;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->rows[0].ra.kind, Recovery::Kind::Undefined);
  auto r = t.find_row(0x2001);
  ASSERT_TRUE(r.has_value());
  expect_rule(*r, 16, RuleKind::Undefined);
  auto r2 = t.find_row(0x2004);
  ASSERT_TRUE(r2.has_value());
  expect_rule(*r2, 16, RuleKind::Offset, -8);
}

TEST(SframeReaderV2, Aarch64LittleMangledRaAndBKey) {
  SframeSink fdes, fres;
  // info 0x20: PAUTH key B, PCINC, ADDR1.
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x4000), 0x40, 0, 3, 0x20);
  fres.bytes({0, 0x03, 0});             // CFA = sp+0 (RA still in x30)
  fres.bytes({4, 0x83, 0});             // paciasp: RA mangled (bit 7)
  fres.bytes({8, 0x87, 32, -24, -32});  // sp+32, RA at CFA-24, FP at CFA-32, mangled
  SframeHeader h;
  h.abi = 2;  // AARCH64 little-endian
  h.fixed_ra = 0;
  h.num_fdes = 1;
  h.num_fres = 3;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  EXPECT_EQ(t.arch(), Arch::AArch64);
  auto r0 = t.find_row(0x4000);
  ASSERT_TRUE(r0.has_value());
  expect_cfa(*r0, 31, 0);
  EXPECT_EQ(r0->ra_reg, 30);
  expect_rule(*r0, 30, RuleKind::Unspecified);  // still in the link register
  EXPECT_FALSE(r0->ra_signed);
  EXPECT_TRUE(r0->b_key);
  auto r1 = t.find_row(0x4005);
  ASSERT_TRUE(r1.has_value());
  EXPECT_TRUE(r1->ra_signed);
  auto r2 = t.find_row(0x4010);
  ASSERT_TRUE(r2.has_value());
  expect_cfa(*r2, 31, 32);
  expect_rule(*r2, 30, RuleKind::Offset, -24);
  expect_rule(*r2, 29, RuleKind::Offset, -32);
  EXPECT_TRUE(r2->ra_signed);
}

TEST(SframeReaderV2, Aarch64BigEndianTwoByteFields) {
  SframeSink fdes(true), fres(true);
  // ADDR2 starts (info 0x01), 2-byte words: FRE info 0x27 = SP, 3 words, size code 1.
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x4000), 0x400, 0, 2, 0x01);
  fres.u16(0).bytes({0x03, 0});
  fres.u16(0x104)
      .u8(0x27)
      .u16(0x110)
      .u16(static_cast<uint16_t>(-0x110))
      .u16(static_cast<uint16_t>(-0x108));
  SframeHeader h;
  h.abi = 1;  // AARCH64 big-endian
  h.fixed_ra = 0;
  h.num_fdes = 1;
  h.num_fres = 2;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  EXPECT_EQ(t.header().abi, Abi::Aarch64Big);
  auto r = t.find_row(0x4200);
  ASSERT_TRUE(r.has_value());
  expect_cfa(*r, 31, 0x110);
  expect_rule(*r, 30, RuleKind::Offset, -0x110);
  expect_rule(*r, 29, RuleKind::Offset, -0x108);
}

TEST(SframeReaderV2, S390xCfaEncodingPaddingAndRegisters) {
  SframeSink fdes(true), fres(true);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x5000), 0x40, 0, 4, 0x00);
  // CFA words are (offset - 160) / 8: 0 -> 160, 20 -> 320.
  fres.bytes({0, kSp1x1, 0});           // CFA = r15+160
  fres.bytes({6, 0x07, 20, -48, -72});  // r15+320, RA at CFA-48, FP at CFA-72
  fres.bytes({12, 0x07, 20, 0, -72});   // RA word 0: padding (RA not saved)
  fres.bytes({16, 0x07, 0, 15, 17});    // odd words: RA in r7, FP in r8 (reg<<1|1)
  SframeHeader h;
  h.abi = 4;  // s390x big-endian
  h.fixed_ra = 0;
  h.num_fdes = 1;
  h.num_fres = 4;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  EXPECT_EQ(t.arch(), Arch::S390x);
  auto r0 = t.find_row(0x5000);
  ASSERT_TRUE(r0.has_value());
  expect_cfa(*r0, 15, 160);
  EXPECT_EQ(r0->ra_reg, 14);
  auto r1 = t.find_row(0x5006);
  ASSERT_TRUE(r1.has_value());
  expect_cfa(*r1, 15, 320);
  expect_rule(*r1, 14, RuleKind::Offset, -48);
  expect_rule(*r1, 11, RuleKind::Offset, -72);
  auto r2 = t.find_row(0x500c);
  ASSERT_TRUE(r2.has_value());
  expect_rule(*r2, 14, RuleKind::Unspecified);
  expect_rule(*r2, 11, RuleKind::Offset, -72);
  auto r3 = t.find_row(0x5010);
  ASSERT_TRUE(r3.has_value());
  EXPECT_EQ(r3->rule(14).kind, RuleKind::Register);
  EXPECT_EQ(r3->rule(14).reg, 7);
  EXPECT_EQ(r3->rule(11).kind, RuleKind::Register);
  EXPECT_EQ(r3->rule(11).reg, 8);
}

TEST(SframeReaderV2, S390xFpBasedCfa) {
  SframeSink fdes(true), fres(true);
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x5000), 0x10, 0, 1, 0x00);
  fres.bytes({0, 0x02, 1});  // FP (r11) base, 1 word: 1 -> 168
  SframeHeader h;
  h.abi = 4;
  h.fixed_ra = 0;
  h.num_fdes = 1;
  h.num_fres = 1;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x5008);
  ASSERT_TRUE(r.has_value());
  expect_cfa(*r, 11, 168);
}

TEST(SframeReaderV2, FourByteWordsLittleEndian) {
  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000), 0x10, 0, 1, 0x00);
  // 0x45 = SP, 2 words, size code 2 (4 bytes).
  fres.bytes({0, 0x45}).u32(0x12345).u32(static_cast<uint32_t>(-0x12000));
  SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 1;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x2000);
  ASSERT_TRUE(r.has_value());
  expect_cfa(*r, 7, 0x12345);
  expect_rule(*r, 6, RuleKind::Offset, -0x12000);
}

TEST(SframeReaderV2, NamesOfErrorCodes) {
  EXPECT_EQ(to_string(ErrorCode::BadMagic), "bad_magic");
  EXPECT_EQ(to_string(ErrorCode::Unsorted), "unsorted");
  EXPECT_EQ(to_string(ErrorCode::Limit), "limit");
}

}  // namespace
}  // namespace ehbt::sframe
