// SPDX-License-Identifier: Apache-2.0
// The writer from hand-made .eh_frame (tests/support/cfi_builder): what each version can and
// cannot express, DRAP in V3, glibc's PLT expression as a PCMASK function, signal frames,
// aarch64 pointer authentication, s390x register-saved RA, merging of identical rows,
// overlapping FDEs, and byte-exact output against sections written by hand.
#include <gtest/gtest.h>

#include "dwarf/cfi.hpp"
#include "sframe/sframe.hpp"
#include "support/cfi_builder.hpp"
#include "support/sframe_bytes.hpp"

namespace ehbt::sframe {
namespace {

using test::CfaOps;
using test::CfiBuilder;
using test::CieSpec;
using test::ExprOps;
using test::FdeSpec;

constexpr uint64_t kEhFrame = 0x10000;

struct Cfi {
  CfiBuilder eh{dwarf::SectionKind::EhFrame, kEhFrame};
  uint64_t cie = 0;

  explicit Cfi(CieSpec spec, bool big_endian = false)
      : eh(dwarf::SectionKind::EhFrame, kEhFrame, big_endian) {
    cie = eh.cie(spec);
  }
  void fde(uint64_t start, uint64_t size, const CfaOps& ops) {
    FdeSpec f;
    f.pc_begin = start;
    f.pc_range = size;
    f.instructions = ops;
    eh.fde(cie, f);
  }
  Conversion convert(Arch arch, uint8_t version) {
    eh.terminator();
    dwarf::ImageCfi cfi({}, eh.view(), {}, eh.format(), {}, Limits{});
    return convert_cfi(cfi, arch, version, Limits{});
  }
};

// x86-64 CIE: CFA = rsp+8, RA (r16) at CFA-8.
CieSpec amd64_cie(const std::string& augmentation = "zR") {
  CieSpec c;
  c.augmentation = augmentation;
  c.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
  return c;
}

void expect_row(const FrameRow& row, uint32_t start, uint16_t cfa_reg, int64_t cfa_off,
                bool deref = false) {
  EXPECT_EQ(row.start, start);
  EXPECT_EQ(row.cfa.reg, cfa_reg) << "row @" << start;
  EXPECT_EQ(row.cfa.offset, cfa_off) << "row @" << start;
  EXPECT_EQ(row.cfa.deref, deref) << "row @" << start;
}

TEST(SframeConvert, PushRbpFrameInBothVersionsMergingRows) {
  for (uint8_t version : {2, 3}) {
    Cfi cfi(amd64_cie());
    cfi.fde(0x1000, 0x20,
            CfaOps()
                .advance_loc(1)
                .def_cfa_offset(16)
                .offset(6, 2)  // rbp at CFA-16
                .advance_loc(3)
                .def_cfa_register(6)
                .advance_loc(2)
                .offset(3, 3)  // rbx at CFA-24: not SFrame's business, same FRE
                .advance_loc(24)
                .def_cfa(7, 8));
    Conversion c = cfi.convert(Arch::X86_64, version);
    EXPECT_EQ(c.header.version, version);
    EXPECT_EQ(c.header.abi, Abi::Amd64Little);
    EXPECT_EQ(c.header.fixed_ra_offset, -8);
    ASSERT_EQ(c.functions.size(), 1u);
    EXPECT_TRUE(c.inexpressible.empty());
    const Function& fn = c.functions[0];
    EXPECT_EQ(fn.start, 0x1000u);
    EXPECT_EQ(fn.size, 0x20u);
    EXPECT_EQ(fn.type, FdeType::Default);
    ASSERT_EQ(fn.rows.size(), 4u);  // the rbx row merged into the one before
    expect_row(fn.rows[0], 0, 7, 8);
    expect_row(fn.rows[1], 1, 7, 16);
    EXPECT_EQ(fn.rows[1].fp.kind, Recovery::Kind::AtCfa);
    EXPECT_EQ(fn.rows[1].fp.offset, -16);
    expect_row(fn.rows[2], 4, 6, 16);
    expect_row(fn.rows[3], 30, 7, 8);
    EXPECT_EQ(fn.rows[3].ra.kind, Recovery::Kind::Untracked);
  }
}

// gcc's DRAP prologue for an over-aligned stack:
//   0: lea 8(%rsp),%r10        CFA = r10+0 from 5
//   5: and $-16,%rsp
//   9: pushq -8(%r10)
//  13: push %rbp
//  14: mov %rsp,%rbp            rbp saved at rbp+0 from 17
//  17: push %r10                CFA = *(rbp-8) from 19
Cfi drap() {
  Cfi cfi(amd64_cie());
  cfi.fde(0x2000, 0x40,
          CfaOps()
              .advance_loc(5)
              .def_cfa(10, 0)
              .advance_loc(12)
              .expression(6, ExprOps().breg(6, 0))
              .advance_loc(2)
              .def_cfa_expression(ExprOps().breg(6, -8).op(0x06)));
  return cfi;
}

TEST(SframeConvert, DrapNeedsV3) {
  Conversion v2 = drap().convert(Arch::X86_64, 2);
  EXPECT_TRUE(v2.functions.empty());
  ASSERT_EQ(v2.inexpressible.size(), 1u);
  EXPECT_EQ(v2.inexpressible[0].function, 0x2000u);
  EXPECT_EQ(v2.inexpressible[0].pc, 0x2005u);  // the first row V2 cannot say
  EXPECT_NE(v2.inexpressible[0].why.find("needs V3"), std::string::npos);

  Conversion v3 = drap().convert(Arch::X86_64, 3);
  ASSERT_EQ(v3.functions.size(), 1u);
  EXPECT_TRUE(v3.inexpressible.empty());
  const Function& fn = v3.functions[0];
  EXPECT_EQ(fn.type, FdeType::Flex);
  ASSERT_EQ(fn.rows.size(), 4u);
  expect_row(fn.rows[0], 0, 7, 8);
  expect_row(fn.rows[1], 5, 10, 0);
  expect_row(fn.rows[2], 17, 10, 0);
  EXPECT_EQ(fn.rows[2].fp.kind, Recovery::Kind::AtRegister);
  EXPECT_EQ(fn.rows[2].fp.reg, 6);
  EXPECT_EQ(fn.rows[2].fp.offset, 0);
  expect_row(fn.rows[3], 19, 6, -8, true);
  EXPECT_EQ(fn.rows[3].ra.kind, Recovery::Kind::Untracked);  // still the fixed CFA-8

  // Through the bytes and back: the unwinder's row says CFA = *(rbp-8), rbp at [rbp+0].
  auto bytes = encode(v3, 0x8000);
  ASSERT_TRUE(bytes.has_value());
  auto t = Table::parse(*bytes, 0x8000, Limits{});
  ASSERT_TRUE(t.has_value());
  auto r = t->find_row(0x2020);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cfa.kind, dwarf::CfaKind::RegOffsetDeref);
  EXPECT_EQ(r->cfa.reg, 6);
  EXPECT_EQ(r->cfa.offset, -8);
  EXPECT_EQ(r->rule(6).kind, dwarf::RuleKind::AtRegOffset);
  EXPECT_EQ(r->rule(16).kind, dwarf::RuleKind::Offset);
  EXPECT_EQ(r->rule(16).offset, -8);
}

// glibc's .plt FDE: PLT0 (push; jmp) then the entries, whose CFA depends on the pc.
TEST(SframeConvert, GlibcPltBecomesPcMask) {
  for (uint8_t version : {2, 3}) {
    Cfi cfi(amd64_cie());
    cfi.fde(0x3000, 0x50,
            CfaOps()
                .def_cfa_offset(16)
                .advance_loc(6)
                .def_cfa_offset(24)
                .advance_loc(10)
                .def_cfa_expression(ExprOps()
                                        .breg(7, 8)
                                        .breg(16, 0)
                                        .lit(15)
                                        .op(0x1a)  // and
                                        .lit(11)
                                        .op(0x2a)  // ge
                                        .lit(3)
                                        .op(0x24)     // shl
                                        .op(0x22)));  // plus
    Conversion c = cfi.convert(Arch::X86_64, version);
    EXPECT_TRUE(c.inexpressible.empty());
    ASSERT_EQ(c.functions.size(), 2u);
    const Function& plt0 = c.functions[0];
    EXPECT_EQ(plt0.start, 0x3000u);
    EXPECT_EQ(plt0.size, 0x10u);
    EXPECT_EQ(plt0.pc_type, PcType::Increment);
    ASSERT_EQ(plt0.rows.size(), 2u);
    expect_row(plt0.rows[0], 0, 7, 16);
    expect_row(plt0.rows[1], 6, 7, 24);
    const Function& pltn = c.functions[1];
    EXPECT_EQ(pltn.start, 0x3010u);
    EXPECT_EQ(pltn.size, 0x40u);
    EXPECT_EQ(pltn.pc_type, PcType::Mask);
    EXPECT_EQ(pltn.rep_size, 16);
    ASSERT_EQ(pltn.rows.size(), 2u);
    expect_row(pltn.rows[0], 0, 7, 8);
    expect_row(pltn.rows[1], 11, 7, 16);
  }
}

TEST(SframeConvert, SignalFrameNeedsV3) {
  auto make = [] {
    Cfi cfi(amd64_cie("zRS"));
    cfi.fde(0x4000, 0x10, CfaOps());
    return cfi;
  };
  Conversion v2 = make().convert(Arch::X86_64, 2);
  EXPECT_TRUE(v2.functions.empty());
  ASSERT_EQ(v2.inexpressible.size(), 1u);
  EXPECT_NE(v2.inexpressible[0].why.find("signal"), std::string::npos);
  Conversion v3 = make().convert(Arch::X86_64, 3);
  ASSERT_EQ(v3.functions.size(), 1u);
  EXPECT_TRUE(v3.functions[0].signal_frame);
  auto bytes = encode(v3, 0x8000);
  ASSERT_TRUE(bytes.has_value());
  auto t = Table::parse(*bytes, 0x8000, Limits{});
  ASSERT_TRUE(t.has_value());
  auto fn = t->function(0);
  ASSERT_TRUE(fn.has_value());
  EXPECT_TRUE(fn->signal_frame);
}

TEST(SframeConvert, InexpressibleInAnyVersion) {
  struct Case {
    CfaOps ops;
    const char* why;
  };
  std::vector<Case> cases;
  cases.push_back({CfaOps().advance_loc(1).def_cfa_expression(ExprOps().lit(0)), "expression"});
  cases.push_back({CfaOps().advance_loc(1).val_offset(6, 2), "val_offset"});
  cases.push_back({CfaOps().advance_loc(1).register_(7, 8), "SP"});
  cases.push_back({CfaOps().advance_loc(1).same_value(16), "RA"});
  for (uint8_t version : {2, 3}) {
    for (const Case& k : cases) {
      Cfi cfi(amd64_cie());
      cfi.fde(0x5000, 0x10, k.ops);
      Conversion c = cfi.convert(Arch::X86_64, version);
      EXPECT_TRUE(c.functions.empty()) << k.why;
      ASSERT_EQ(c.inexpressible.size(), 1u) << k.why;
      EXPECT_EQ(c.inexpressible[0].pc, 0x5001u) << k.why;
      EXPECT_NE(c.inexpressible[0].why.find(k.why), std::string::npos)
          << k.why << ": " << c.inexpressible[0].why;
    }
  }
}

TEST(SframeConvert, OutermostFrame) {
  Cfi cfi(amd64_cie());
  cfi.fde(0x6000, 0x10, CfaOps().undefined(16));
  Conversion c = cfi.convert(Arch::X86_64, 2);
  ASSERT_EQ(c.functions.size(), 1u);
  EXPECT_EQ(c.functions[0].rows[0].ra.kind, Recovery::Kind::Undefined);
  auto bytes = encode(c, 0x8000);
  ASSERT_TRUE(bytes.has_value());
  auto t = Table::parse(*bytes, 0x8000, Limits{});
  ASSERT_TRUE(t.has_value());
  auto r = t->find_row(0x6004);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rule(16).kind, dwarf::RuleKind::Undefined);
}

TEST(SframeConvert, OverlappingFdesReported) {
  Cfi cfi(amd64_cie());
  cfi.fde(0x7000, 0x20, CfaOps());
  cfi.fde(0x7010, 0x20, CfaOps());
  Conversion c = cfi.convert(Arch::X86_64, 2);
  ASSERT_EQ(c.functions.size(), 1u);
  EXPECT_EQ(c.functions[0].start, 0x7000u);
  ASSERT_EQ(c.inexpressible.size(), 1u);
  EXPECT_EQ(c.inexpressible[0].function, 0x7010u);
  EXPECT_NE(c.inexpressible[0].why.find("overlaps"), std::string::npos);
}

// aarch64 CIE: CFA = sp+0, RA column x30.
CieSpec aarch64_cie(const std::string& augmentation = "zR") {
  CieSpec c;
  c.augmentation = augmentation;
  c.code_align = 4;
  c.data_align = -8;
  c.ra_reg = 30;
  c.instructions = CfaOps().def_cfa(31, 0);
  return c;
}

TEST(SframeConvert, Aarch64PointerAuthentication) {
  Cfi cfi(aarch64_cie("zRB"));
  cfi.fde(0x8000, 0x40,
          CfaOps()
              .advance_loc(1)  // 4 bytes: paciasp
              .AARCH64_negate_ra_state()
              .advance_loc(1)  // stp x29, x30, [sp, -32]!
              .def_cfa_offset(32)
              .offset(29, 4)
              .offset(30, 3));
  Conversion c = cfi.convert(Arch::AArch64, 2);
  ASSERT_EQ(c.functions.size(), 1u);
  EXPECT_EQ(c.header.abi, Abi::Aarch64Little);
  EXPECT_EQ(c.header.fixed_ra_offset, 0);
  const Function& fn = c.functions[0];
  EXPECT_TRUE(fn.pauth_b_key);
  ASSERT_EQ(fn.rows.size(), 3u);
  EXPECT_FALSE(fn.rows[0].ra_mangled);
  EXPECT_TRUE(fn.rows[1].ra_mangled);
  EXPECT_EQ(fn.rows[1].ra.kind, Recovery::Kind::Untracked);
  EXPECT_TRUE(fn.rows[2].ra_mangled);
  EXPECT_EQ(fn.rows[2].ra.offset, -24);
  EXPECT_EQ(fn.rows[2].fp.offset, -32);

  auto bytes = encode(c, 0x9000);
  ASSERT_TRUE(bytes.has_value());
  auto t = Table::parse(*bytes, 0x9000, Limits{});
  ASSERT_TRUE(t.has_value());
  auto r = t->find_row(0x8008);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ra_signed);
  EXPECT_TRUE(r->b_key);
  EXPECT_EQ(r->rule(30).offset, -24);
}

TEST(SframeConvert, Aarch64FpWithoutRaNeedsV3) {
  auto make = [] {
    Cfi cfi(aarch64_cie());
    cfi.fde(0x8000, 0x20, CfaOps().advance_loc(1).def_cfa_offset(16).offset(29, 2));
    return cfi;
  };
  Conversion v2 = make().convert(Arch::AArch64, 2);
  ASSERT_EQ(v2.inexpressible.size(), 1u);
  EXPECT_NE(v2.inexpressible[0].why.find("needs V3"), std::string::npos);
  Conversion v3 = make().convert(Arch::AArch64, 3);
  ASSERT_EQ(v3.functions.size(), 1u);
  EXPECT_EQ(v3.functions[0].type, FdeType::Flex);
  auto bytes = encode(v3, 0x9000);
  ASSERT_TRUE(bytes.has_value());
  auto t = Table::parse(*bytes, 0x9000, Limits{});
  ASSERT_TRUE(t.has_value());
  auto r = t->find_row(0x8004);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rule(29).kind, dwarf::RuleKind::Offset);
  EXPECT_EQ(r->rule(29).offset, -16);
  EXPECT_EQ(r->rule(30).kind, dwarf::RuleKind::Unspecified);
}

TEST(SframeConvert, S390xRaInRegister) {
  CieSpec cie;
  cie.data_align = -8;
  cie.ra_reg = 14;
  cie.instructions = CfaOps().def_cfa(15, 160);
  for (uint8_t version : {2, 3}) {
    Cfi cfi(cie, true);
    cfi.fde(0xa000, 0x20,
            CfaOps().advance_loc(4).register_(14, 7).advance_loc(4).def_cfa_offset(320));
    Conversion c = cfi.convert(Arch::S390x, version);
    ASSERT_EQ(c.functions.size(), 1u) << int(version);
    EXPECT_EQ(c.header.abi, Abi::S390xBig);
    EXPECT_EQ(c.functions[0].type, version == 3 ? FdeType::Flex : FdeType::Default);
    auto bytes = encode(c, 0xb000);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_EQ(std::to_integer<int>((*bytes)[0]), 0xde);  // big-endian magic
    auto t = Table::parse(*bytes, 0xb000, Limits{});
    ASSERT_TRUE(t.has_value());
    auto r = t->find_row(0xa00c);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->cfa.offset, 320);
    EXPECT_EQ(r->rule(14).kind, dwarf::RuleKind::Register);
    EXPECT_EQ(r->rule(14).reg, 7);
  }
}

// The writer's bytes against a section written by hand from the specification.
TEST(SframeEncode, V2BytesAsSpecified) {
  Conversion c;
  c.header.version = 2;
  c.header.flags = 0x5;
  c.header.abi = Abi::Amd64Little;
  c.header.fixed_ra_offset = -8;
  Function fn;
  fn.start = 0x2000;
  fn.size = 0x20;
  FrameRow r0;
  r0.cfa = {7, 8, false};
  FrameRow r1;
  r1.start = 1;
  r1.cfa = {7, 16, false};
  r1.fp = {Recovery::Kind::AtCfa, 0, -16};
  FrameRow r2;
  r2.start = 4;
  r2.cfa = {6, 0x1234, false};  // a 2-byte word
  r2.fp = {Recovery::Kind::AtCfa, 0, -16};
  fn.rows = {r0, r1, r2};
  c.functions = {fn};
  auto bytes = encode(c, 0x1000);
  ASSERT_TRUE(bytes.has_value());

  test::SframeSink fdes, fres;
  test::put_v2_fde(fdes, 0x2000 - (0x1000 + 28), 0x20, 0, 3, 0x00);
  fres.bytes({0, 0x03, 8});
  fres.bytes({1, 0x05, 16, -16});
  fres.bytes({4, 0x24}).u16(0x1234).u16(static_cast<uint16_t>(-16));  // FP base, 2 words, 2B
  test::SframeHeader h;
  h.num_fdes = 1;
  h.num_fres = 3;
  EXPECT_EQ(*bytes, test::assemble(h, fdes, fres));
}

TEST(SframeEncode, V3FlexBytesAsSpecified) {
  Conversion c;
  c.header.version = 3;
  c.header.flags = 0x5;
  c.header.abi = Abi::Amd64Little;
  c.header.fixed_ra_offset = -8;
  Function fn;
  fn.start = 0x2000;
  fn.size = 0x300;
  fn.type = FdeType::Flex;
  FrameRow r0;
  r0.cfa = {7, 8, false};
  FrameRow r1;
  r1.start = 0x120;  // ADDR2 starts
  r1.cfa = {6, -8, true};
  r1.fp = {Recovery::Kind::AtRegister, 6, 0};
  fn.rows = {r0, r1};
  c.functions = {fn};
  auto bytes = encode(c, 0x1000);
  ASSERT_TRUE(bytes.has_value());

  test::SframeSink fdes, fres;
  test::put_v3_index(fdes, 0x2000 - (0x1000 + 28), 0x300, 0);
  test::put_v3_attr(fres, 2, /*ADDR2*/ 0x01, /*FLEX*/ 0x01);
  fres.u16(0).bytes({2 << 1, (7 << 3) | 1, 8});
  fres.u16(0x120).bytes({5 << 1, (6 << 3) | 3, -8, 0, (6 << 3) | 3, 0});
  test::SframeHeader h;
  h.version = 3;
  h.num_fdes = 1;
  h.num_fres = 2;
  EXPECT_EQ(*bytes, test::assemble(h, fdes, fres));
}

TEST(SframeEncode, RefusesWhatItCannotWrite) {
  Conversion c;
  c.header.version = 2;
  c.header.abi = Abi::Amd64Little;
  c.header.fixed_ra_offset = -8;
  Function fn;
  fn.start = 0x2000;
  fn.size = 0x10;
  FrameRow r;
  r.cfa = {10, 0, false};  // not SP/FP: a default FDE cannot say it
  fn.rows = {r};
  c.functions = {fn};
  EXPECT_EQ(encode(c, 0x1000).error().code, ErrorCode::BadFre);
  c.functions[0].type = FdeType::Flex;  // V2 has no flexible FDEs
  EXPECT_EQ(encode(c, 0x1000).error().code, ErrorCode::BadFde);
  c.header.version = 4;
  EXPECT_EQ(encode(c, 0x1000).error().code, ErrorCode::BadVersion);
  c.header.version = 2;
  c.functions[0].type = FdeType::Default;
  c.functions[0].rows[0].cfa.reg = 7;
  c.functions[0].start = 0x100000000ull;  // too far for V2's 32-bit start
  EXPECT_EQ(encode(c, 0x1000).error().code, ErrorCode::Limit);
}

}  // namespace
}  // namespace ehbt::sframe
