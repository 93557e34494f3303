// SPDX-License-Identifier: Apache-2.0
// The SFrame reader on hand-made V3 sections: the FDE index + attributes layout, default
// and flexible FDEs (control words spelled out bit by bit), the signal-frame bit, s390x's
// CFA encoding inside flexible FDEs, and big-endian V3.
#include <gtest/gtest.h>

#include "sframe/sframe.hpp"
#include "support/sframe_bytes.hpp"
#include "support/sframe_checks.hpp"

namespace ehbt::sframe {
namespace {

using dwarf::CfaKind;
using dwarf::RuleKind;
using test::expect_rule;
using test::parse_ok;
using test::SframeHeader;
using test::SframeSink;

constexpr uint64_t kSection = test::kSframeAddr;  // link-time address of the section

// Flexible control words: regnum << 3 | deref_p << 1 | reg_p.
constexpr int ctrl(int reg, bool deref, bool reg_p) {
  return (reg << 3) | (deref ? 2 : 0) | (reg_p ? 1 : 0);
}

TEST(SframeReaderV3, DefaultFdeIndexAndAttributes) {
  SframeSink fdes, fres;
  // Two functions. Index entries are 16 bytes; the attributes (5 bytes) open each
  // function's FRE data.
  test::put_v3_index(fdes, test::v3_pcrel_start(0x2000), 0x20, 0);
  test::put_v3_index(fdes, test::v3_pcrel_start(0x2100, 1), 0x10, 12);
  test::put_v3_attr(fres, 2, /*info*/ 0x00, /*info2: default*/ 0x00);
  fres.bytes({0, 0x03, 8});
  fres.bytes({1, 0x05, 16, -16});
  test::put_v3_attr(fres, 1, 0x00, 0x00);
  fres.bytes({0, 0x03, 24});
  SframeHeader h;
  h.version = 3;
  h.num_fdes = 2;
  h.num_fres = 3;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  EXPECT_EQ(t.header().version, 3);
  auto f1 = t.function(1);
  ASSERT_TRUE(f1.has_value());
  EXPECT_EQ(f1->start, 0x2100u);
  EXPECT_EQ(f1->type, FdeType::Default);
  auto r = t.find_row(0x2005);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cfa.reg, 7);
  EXPECT_EQ(r->cfa.offset, 16);
  expect_rule(*r, 6, RuleKind::Offset, -16);
  expect_rule(*r, 16, RuleKind::Offset, -8);
  auto r2 = t.find_row(0x210f);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->cfa.offset, 24);
}

TEST(SframeReaderV3, SectionRelativeStartsAndSignalFrame) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, 0x2000 - static_cast<int64_t>(kSection), 0x10, 0);
  // info 0x80: signal frame.
  test::put_v3_attr(fres, 1, 0x80, 0x00);
  fres.bytes({0, 0x03, 8});
  SframeHeader h;
  h.version = 3;
  h.flags = 0x1;
  h.num_fdes = 1;
  h.num_fres = 1;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->start, 0x2000u);
  EXPECT_TRUE(fn->signal_frame);
  auto r = t.find_row(0x2004);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->signal_frame);
}

TEST(SframeReaderV3, FlexibleAmd64Drap) {
  // gcc's DRAP prologue: lea 8(%rsp),%r10; and $-16,%rsp; push -8(%r10); push %rbp;
  // mov %rsp,%rbp; push %r10 ...
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x6000), 0x40, 0);
  test::put_v3_attr(fres, 6, 0x00, /*info2: FLEX*/ 0x01);
  // FRE info for flexible FDEs: bit 0 unused (0); count << 1; size code << 5.
  fres.bytes({0x00, 2 << 1, ctrl(7, false, true), 8});    // CFA = rsp+8
  fres.bytes({0x05, 2 << 1, ctrl(10, false, true), 0});   // CFA = r10+0
  fres.bytes({0x10, 5 << 1, ctrl(6, true, true), -8,      // CFA = *(rbp-8)
              0,                                          // RA: padding (fixed slot)
              ctrl(6, true, true), 0});                   // rbp saved at rbp+0
  fres.bytes({0x20, 4 << 1, ctrl(7, false, true), 16,     // CFA = rsp+16
              ctrl(0, true, false), -16});                // RA at CFA-16
  fres.bytes({0x24, 5 << 1, ctrl(7, false, true), 16, 0,  //
              ctrl(3, false, true), 0});                  // rbp = rbx
  fres.bytes({0x28, 5 << 1, ctrl(7, false, true), 8, 0,   //
              ctrl(17, false, true), 4});                 // rbp = r17+4 (ctrl 0x89)
  SframeHeader h;
  h.version = 3;
  h.num_fdes = 1;
  h.num_fres = 6;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto fn = t.function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->type, FdeType::Flex);
  EXPECT_TRUE(fn->rows[2].cfa.deref);

  auto r0 = t.find_row(0x6000);
  ASSERT_TRUE(r0.has_value());
  EXPECT_EQ(r0->cfa.kind, CfaKind::RegOffset);
  EXPECT_EQ(r0->cfa.reg, 7);
  auto r1 = t.find_row(0x6006);
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->cfa.reg, 10);
  EXPECT_EQ(r1->cfa.offset, 0);
  auto r2 = t.find_row(0x6010);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->cfa.kind, CfaKind::RegOffsetDeref);
  EXPECT_EQ(r2->cfa.reg, 6);
  EXPECT_EQ(r2->cfa.offset, -8);
  expect_rule(*r2, 16, RuleKind::Offset, -8);
  expect_rule(*r2, 6, RuleKind::AtRegOffset, 0, 6);
  auto r3 = t.find_row(0x6020);
  ASSERT_TRUE(r3.has_value());
  expect_rule(*r3, 16, RuleKind::Offset, -16);
  expect_rule(*r3, 6, RuleKind::Unspecified);
  auto r4 = t.find_row(0x6024);
  ASSERT_TRUE(r4.has_value());
  expect_rule(*r4, 6, RuleKind::Register, 0, 3);
  auto r5 = t.find_row(0x6030);
  ASSERT_TRUE(r5.has_value());
  expect_rule(*r5, 6, RuleKind::RegOffset, 4, 17);
}

TEST(SframeReaderV3, FlexibleRaInRegisterAndTwoByteWords) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x6000), 0x10, 0);
  test::put_v3_attr(fres, 1, 0x00, 0x01);
  // 4 words of 2 bytes: info = 1 << 5 | 4 << 1 = 0x28. RA value = rax + 0; RA at [r12 + 0x200]
  // would need deref: here RA saved at [r12+0x200].
  fres.bytes({0, 0x28}).u16(ctrl(7, false, true)).u16(0x100).u16(ctrl(12, true, true)).u16(0x200);
  SframeHeader h;
  h.version = 3;
  h.num_fdes = 1;
  h.num_fres = 1;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x6008);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cfa.offset, 0x100);
  expect_rule(*r, 16, RuleKind::AtRegOffset, 0x200, 12);
}

TEST(SframeReaderV3, S390xBigEndianFlexAndDefault) {
  SframeSink fdes(true), fres(true);
  test::put_v3_index(fdes, test::v3_pcrel_start(0x7000), 0x20, 0);
  test::put_v3_index(fdes, test::v3_pcrel_start(0x7100, 1), 0x20, 13);
  // Function 0, flexible: the CFA offset word keeps s390x's (offset - 160) / 8 encoding.
  test::put_v3_attr(fres, 1, 0x00, 0x01);
  fres.bytes({0, 6 << 1, ctrl(15, false, true), 2,  // CFA = r15 + 176
              ctrl(7, false, true), 0,              // RA = r7
              ctrl(8, false, true), 0});            // FP = r8
  // Function 1, default: odd words are plain offsets in V3 (no register encoding).
  test::put_v3_attr(fres, 1, 0x00, 0x00);
  fres.bytes({0, 0x07, 20, -48, -72});
  SframeHeader h;
  h.version = 3;
  h.abi = 4;
  h.fixed_ra = 0;
  h.num_fdes = 2;
  h.num_fres = 2;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x7004);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cfa.reg, 15);
  EXPECT_EQ(r->cfa.offset, 176);
  expect_rule(*r, 14, RuleKind::Register, 0, 7);
  expect_rule(*r, 11, RuleKind::Register, 0, 8);
  auto r2 = t.find_row(0x7104);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->cfa.offset, 320);
  expect_rule(*r2, 14, RuleKind::Offset, -48);
  expect_rule(*r2, 11, RuleKind::Offset, -72);
}

TEST(SframeReaderV3, Aarch64PcMaskV3) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x8000), 0x40, 0);
  test::put_v3_attr(fres, 2, /*PCMASK*/ 0x10, 0x00, /*rep*/ 32);
  fres.bytes({0, 0x03, 0});
  fres.bytes({8, 0x03, 16});
  SframeHeader h;
  h.version = 3;
  h.abi = 2;
  h.fixed_ra = 0;
  h.num_fdes = 1;
  h.num_fres = 2;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x8000 + 32 + 9);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cfa.offset, 16);
  EXPECT_EQ(r->start, 0x8028u);
  EXPECT_EQ(r->end, 0x8040u);
  auto r2 = t.find_row(0x8000 + 32 + 7);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->cfa.offset, 0);
}

TEST(SframeReaderV3, OutermostInFlexFde) {
  SframeSink fdes, fres;
  test::put_v3_index(fdes, test::v3_pcrel_start(0x6000), 0x10, 0);
  test::put_v3_attr(fres, 1, 0x00, 0x01);
  fres.bytes({0, 0x00});
  SframeHeader h;
  h.version = 3;
  h.num_fdes = 1;
  h.num_fres = 1;
  Table t = parse_ok(test::assemble(h, fdes, fres));
  auto r = t.find_row(0x6001);
  ASSERT_TRUE(r.has_value());
  expect_rule(*r, 16, RuleKind::Undefined);
}

}  // namespace
}  // namespace ehbt::sframe
