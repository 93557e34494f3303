// SPDX-License-Identifier: Apache-2.0
// CIE/FDE parsing: .eh_frame and .debug_frame, 32- and 64-bit records, CIE versions 1/3/4,
// every augmentation, both byte orders, and the malformed records that must be refused.
// The first tests use hand-assembled bytes (offsets and values computed from the spec by
// hand); later ones use the CfiBuilder, which the first tests check against the same bytes.
#include <gtest/gtest.h>

#include <map>

#include "dwarf/cfi.hpp"
#include "dwarf/record_framing.hpp"
#include "support/cfi_builder.hpp"

namespace ehbt::dwarf {
namespace {

using test::bytes_of;
using test::CfaOps;
using test::CfiBuilder;
using test::CieSpec;
using test::FdeSpec;

SectionView view_of(const std::vector<std::byte>& b, uint64_t addr) {
  return {addr, b};
}

// A GCC-style x86-64 .eh_frame at 0x1000: one CIE, one FDE for [0x401000, 0x401020), and the
// terminator.
std::vector<std::byte> gcc_style_eh_frame() {
  return bytes_of({
      // CIE at 0x00
      0x14,
      0x00,
      0x00,
      0x00,  // length 20
      0x00,
      0x00,
      0x00,
      0x00,  // CIE id
      0x01,  // version 1
      'z',
      'R',
      0x00,  // augmentation
      0x01,  // code alignment 1
      0x78,  // data alignment -8
      0x10,  // return address column 16 (u8 in version 1)
      0x01,  // augmentation data length
      0x1b,  // FDE encoding pcrel|sdata4
      0x0c,
      0x07,
      0x08,  // DW_CFA_def_cfa rsp+8
      0x90,
      0x01,  // DW_CFA_offset r16, 1*-8
      0x00,
      0x00,  // DW_CFA_nop padding
      // FDE at 0x18
      0x14,
      0x00,
      0x00,
      0x00,  // length 20
      0x1c,
      0x00,
      0x00,
      0x00,  // CIE pointer: field at 0x1c - 0x1c = CIE at 0
      0xe0,
      0xff,
      0x3f,
      0x00,  // pc_begin: field at 0x1020, + 0x3fffe0 = 0x401000
      0x20,
      0x00,
      0x00,
      0x00,  // pc_range 0x20
      0x00,  // augmentation data length
      0x41,  // DW_CFA_advance_loc 1
      0x0e,
      0x10,  // DW_CFA_def_cfa_offset 16
      0x86,
      0x02,  // DW_CFA_offset r6, 2*-8
      0x00,
      0x00,  // padding
      // terminator at 0x30
      0x00,
      0x00,
      0x00,
      0x00,
  });
}

TEST(Records, HandAssembledEhFrame) {
  auto b = gcc_style_eh_frame();
  SectionView sec = view_of(b, 0x1000);
  Format fmt;
  Limits lim;
  auto cie = parse_cie(SectionKind::EhFrame, sec, 0, fmt, lim);
  ASSERT_TRUE(cie) << to_string(cie.error().code);
  EXPECT_EQ(cie->offset, 0u);
  EXPECT_EQ(cie->version, 1);
  EXPECT_EQ(cie->augmentation, "zR");
  EXPECT_EQ(cie->code_align, 1u);
  EXPECT_EQ(cie->data_align, -8);
  EXPECT_EQ(cie->ra_reg, 16);
  EXPECT_EQ(cie->fde_encoding, 0x1b);
  EXPECT_EQ(cie->lsda_encoding, 0xff);
  EXPECT_TRUE(cie->has_z);
  EXPECT_FALSE(cie->signal_frame);
  EXPECT_EQ(cie->instructions_offset, 17u);
  EXPECT_EQ(cie->instructions.size(), 7u);
  EXPECT_EQ(cie->instructions[0], std::byte{0x0c});

  auto fde = parse_fde(SectionKind::EhFrame, sec, 0x18, *cie, fmt, lim);
  ASSERT_TRUE(fde) << to_string(fde.error().code);
  EXPECT_EQ(fde->offset, 0x18u);
  EXPECT_EQ(fde->cie_offset, 0u);
  EXPECT_EQ(fde->pc_begin, 0x401000u);
  EXPECT_EQ(fde->pc_end, 0x401020u);
  EXPECT_EQ(fde->lsda, 0u);
  EXPECT_EQ(fde->instructions_offset, 0x29u);
  EXPECT_EQ(fde->instructions.size(), 7u);
  EXPECT_EQ(fde->end_offset, 0x30u);

  auto term = parse_record_header(SectionKind::EhFrame, sec, 0x30, fmt, lim);
  ASSERT_TRUE(term);
  EXPECT_EQ(term->kind, RecordKind::Terminator);
  auto h = parse_record_header(SectionKind::EhFrame, sec, 0x18, fmt, lim);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, RecordKind::Fde);
  EXPECT_EQ(h->cie_offset, 0u);
  EXPECT_EQ(h->body, 0x20u);
  EXPECT_EQ(h->end, 0x30u);
}

TEST(Records, BuilderMatchesHandAssembledBytes) {
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
  cs.pad_to = 8;
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x20;
  fs.instructions = CfaOps().advance_loc(1).def_cfa_offset(16).offset(6, 2);
  fs.pad_to = 8;
  b.fde(cie, fs);
  b.terminator();
  EXPECT_EQ(b.bytes(), gcc_style_eh_frame());
}

TEST(Records, HandAssembledDebugFrame) {
  auto b = bytes_of({
      // CIE at 0
      0x10,
      0x00,
      0x00,
      0x00,  // length 16
      0xff,
      0xff,
      0xff,
      0xff,  // CIE id (32-bit .debug_frame)
      0x03,  // version 3
      0x00,  // no augmentation
      0x01,
      0x78,  // code 1, data -8
      0x10,  // RA column 16 (uleb in version 3)
      0x0c,
      0x07,
      0x08,
      0x90,
      0x01,
      0x00,
      0x00,  // padding
      // FDE at 0x14
      0x1c,
      0x00,
      0x00,
      0x00,  // length 28
      0x00,
      0x00,
      0x00,
      0x00,  // CIE pointer: section offset 0
      0x00,
      0x10,
      0x40,
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,  // pc_begin 0x401000 (absptr)
      0x30,
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,  // pc_range 0x30
      0x41,
      0x0e,
      0x10,  // advance 1, def_cfa_offset 16
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,
  });
  SectionView sec = view_of(b, 0);  // .debug_frame is not loaded: address 0
  Format fmt;
  Limits lim;
  auto cie = parse_cie(SectionKind::DebugFrame, sec, 0, fmt, lim);
  ASSERT_TRUE(cie) << to_string(cie.error().code);
  EXPECT_EQ(cie->version, 3);
  EXPECT_EQ(cie->augmentation, "");
  EXPECT_FALSE(cie->has_z);
  EXPECT_EQ(cie->ra_reg, 16);
  EXPECT_EQ(cie->fde_encoding, 0x00);
  auto fde = parse_fde(SectionKind::DebugFrame, sec, 0x14, *cie, fmt, lim);
  ASSERT_TRUE(fde) << to_string(fde.error().code);
  EXPECT_EQ(fde->pc_begin, 0x401000u);
  EXPECT_EQ(fde->pc_end, 0x401030u);
  EXPECT_EQ(fde->instructions.size(), 8u);
  // In .eh_frame the same bytes are an FDE whose CIE pointer (0xffffffff) leads outside.
  auto as_eh = parse_record_header(SectionKind::EhFrame, sec, 0, fmt, lim);
  ASSERT_FALSE(as_eh);
  EXPECT_EQ(as_eh.error().code, ErrorCode::BadCie);
}

TEST(Records, Dwarf64Records) {
  for (SectionKind kind : {SectionKind::EhFrame, SectionKind::DebugFrame}) {
    CfiBuilder b(kind, 0x2000);
    CieSpec cs;
    cs.dwarf64 = true;
    cs.version = 3;
    cs.instructions = CfaOps().def_cfa(7, 8);
    uint64_t cie = b.cie(cs);
    FdeSpec fs;
    fs.dwarf64 = true;
    fs.pc_begin = 0x500000;
    fs.pc_range = 0x44;
    fs.instructions = CfaOps().advance_loc(4).def_cfa_offset(32);
    uint64_t fde_off = b.fde(cie, fs);
    auto h = parse_record_header(kind, b.view(), cie, b.format(), Limits{});
    ASSERT_TRUE(h);
    EXPECT_TRUE(h->dwarf64);
    EXPECT_EQ(h->kind, RecordKind::Cie);
    // 12-byte length, then the id: 4 bytes in .eh_frame, 8 in 64-bit .debug_frame.
    EXPECT_EQ(h->body, kind == SectionKind::EhFrame ? 16u : 20u);
    auto c = parse_cie(kind, b.view(), cie, b.format(), Limits{});
    ASSERT_TRUE(c) << to_string(c.error().code);
    EXPECT_EQ(c->ra_reg, 16);
    auto f = parse_fde(kind, b.view(), fde_off, *c, b.format(), Limits{});
    ASSERT_TRUE(f) << to_string(f.error().code);
    EXPECT_EQ(f->pc_begin, 0x500000u);
    EXPECT_EQ(f->pc_end, 0x500044u);
    EXPECT_EQ(f->instructions.size(), 3u);
  }
}

TEST(Records, Dwarf64DebugFrameCieIdIsAllOnes) {
  // A 64-bit .debug_frame record whose id is 0xffffffff in 8 bytes is an FDE (pointer 2^32-1:
  // outside the section), not a CIE.
  auto b = bytes_of({0xff, 0xff, 0xff, 0xff, 0x09, 0,    0,    0,    0,   0, 0, 0,  // length 9
                     0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00});
  auto h = parse_record_header(SectionKind::DebugFrame, view_of(b, 0), 0, Format{}, Limits{});
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::BadCie);
}

TEST(Records, Version4AddressAndSegmentSize) {
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.version = 4;
  cs.augmentation = "";
  cs.address_size = 4;
  cs.segment_size = 2;
  cs.ra_reg = 300;  // uleb in version 4
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x8000;
  fs.pc_range = 0x10;
  fs.segment = 0x1234;
  uint64_t fde = b.fde(cie, fs);
  // Body: 2-byte segment + 4-byte address + 4-byte range.
  EXPECT_EQ(b.size() - fde, 4u + 4u + 2u + 4u + 4u);
  auto c = parse_cie(SectionKind::DebugFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c) << to_string(c.error().code);
  EXPECT_EQ(c->address_size, 4);
  EXPECT_EQ(c->segment_size, 2);
  EXPECT_EQ(c->ra_reg, 300);
  auto f = parse_fde(SectionKind::DebugFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_TRUE(f) << to_string(f.error().code);
  EXPECT_EQ(f->pc_begin, 0x8000u);
  EXPECT_EQ(f->pc_end, 0x8010u);
  EXPECT_TRUE(f->instructions.empty());
}

TEST(Records, Version4BadAddressSize) {
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.version = 4;
  cs.augmentation = "";
  cs.address_size = 3;
  b.cie(cs);
  EXPECT_EQ(parse_cie(SectionKind::DebugFrame, b.view(), 0, b.format(), Limits{}).error().code,
            ErrorCode::BadCie);
}

TEST(Records, ReturnAddressColumnByVersion) {
  // Version 1: one byte (0x81 = 129); version 3: uleb (0x81 0x01 = 129).
  for (uint8_t version : {1, 3}) {
    CfiBuilder b(SectionKind::EhFrame, 0x1000);
    CieSpec cs;
    cs.version = version;
    cs.ra_reg = 129;
    b.cie(cs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->ra_reg, 129);
  }
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.version = 3;
  cs.ra_reg = 0x10000;
  b.cie(cs);
  EXPECT_EQ(parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{}).error().code,
            ErrorCode::BadRegister);
}

TEST(Records, BadVersions) {
  for (uint8_t version : {0, 2, 5, 255}) {
    CfiBuilder b(SectionKind::EhFrame, 0x1000);
    CieSpec cs;
    cs.version = version;
    b.cie(cs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().code, ErrorCode::BadVersion) << int(version);
  }
}

TEST(Records, BigEndian) {
  CfiBuilder b(SectionKind::EhFrame, 0x3000, /*big_endian=*/true);
  CieSpec cs;
  cs.data_align = -8;
  cs.ra_reg = 14;
  cs.instructions = CfaOps(true).def_cfa(15, 160);
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x10000;
  fs.pc_range = 0x123;
  uint64_t fde = b.fde(cie, fs);
  // The length field is big-endian: 00 00 00 len.
  EXPECT_EQ(b.bytes()[0], std::byte{0});
  auto c = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ra_reg, 14);
  auto f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pc_begin, 0x10000u);
  EXPECT_EQ(f->pc_end, 0x10123u);
  // Read as little-endian, the lengths are nonsense.
  Format le;
  EXPECT_FALSE(parse_cie(SectionKind::EhFrame, b.view(), cie, le, Limits{}));
}

TEST(Records, PersonalityLsdaAndFlags) {
  // "zPLR": personality indirect|pcrel|sdata4 through a cell, LSDA pcrel|sdata4.
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.augmentation = "zPLRSBG";
  cs.personality_encoding = 0x9b;
  cs.personality = 0x7000;  // the cell
  cs.lsda_encoding = 0x1b;
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x40;
  fs.lsda = 0x402345;
  uint64_t fde = b.fde(cie, fs);

  IndirectReader reader = [](uint64_t addr) -> std::optional<uint64_t> {
    if (addr == 0x7000) return 0x40abcd;
    return std::nullopt;
  };
  auto c = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{}, {}, reader);
  ASSERT_TRUE(c) << to_string(c.error().code);
  EXPECT_EQ(c->personality_encoding, 0x9b);
  EXPECT_EQ(c->personality_ptr, 0x7000u);
  EXPECT_EQ(c->personality, 0x40abcdu);
  EXPECT_EQ(c->lsda_encoding, 0x1b);
  EXPECT_EQ(c->fde_encoding, 0x1b);
  EXPECT_TRUE(c->signal_frame);
  EXPECT_TRUE(c->b_key);
  EXPECT_TRUE(c->mte_tagged);
  auto f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_TRUE(f) << to_string(f.error().code);
  EXPECT_EQ(f->lsda, 0x402345u);

  // Without a reader the personality is unknown but the CIE still parses: unwinding does not
  // need it.
  auto c2 = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->personality, 0u);
  EXPECT_EQ(c2->personality_ptr, 0x7000u);
}

TEST(Records, HandAssembledPersonalityAndLsda) {
  // CIE at 0x1000 with "zPLR": P = udata4 0x00402000, L = funcrel|udata2, R = udata4.
  auto b = bytes_of({
      0x18,
      0x00,
      0x00,
      0x00,  // length 24
      0x00,
      0x00,
      0x00,
      0x00,  // CIE id
      0x01,
      'z',
      'P',
      'L',
      'R',
      0x00,
      0x01,
      0x78,
      0x10,  // code 1, data -8, RA 16
      0x07,  // augmentation data length 7
      0x03,
      0x00,
      0x20,
      0x40,
      0x00,  // P: udata4 0x402000
      0x42,  // L: funcrel|udata2
      0x03,  // R: udata4
      0x00,
      0x00,
      0x00,  // nops (bytes 0x19-0x1b)
      // FDE at 0x1c
      0x14,
      0x00,
      0x00,
      0x00,  // length 20
      0x20,
      0x00,
      0x00,
      0x00,  // CIE pointer: 0x20 - 0x20 = 0
      0x00,
      0x10,
      0x40,
      0x00,  // pc_begin 0x401000 (udata4, absolute)
      0x10,
      0x00,
      0x00,
      0x00,  // range 0x10
      0x02,
      0x30,
      0x00,  // aug length 2, LSDA funcrel 0x30 -> 0x401030
      0x00,
      0x00,
      0x00,
      0x00,
      0x00,
  });
  SectionView sec = view_of(b, 0x1000);
  auto c = parse_cie(SectionKind::EhFrame, sec, 0, Format{}, Limits{});
  ASSERT_TRUE(c) << to_string(c.error().code);
  EXPECT_EQ(c->personality, 0x402000u);
  EXPECT_EQ(c->personality_ptr, 0u);
  EXPECT_EQ(c->lsda_encoding, 0x42);
  EXPECT_EQ(c->fde_encoding, 0x03);
  auto f = parse_fde(SectionKind::EhFrame, sec, 0x1c, *c, Format{}, Limits{});
  ASSERT_TRUE(f) << to_string(f.error().code);
  EXPECT_EQ(f->pc_begin, 0x401000u);
  EXPECT_EQ(f->pc_end, 0x401010u);
  EXPECT_EQ(f->lsda, 0x401030u);
}

TEST(Records, AlignedPersonality) {
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.augmentation = "zPR";
  cs.personality_encoding = 0x50;  // aligned absptr
  cs.personality = 0x4142434445464748;
  b.cie(cs);
  auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
  ASSERT_TRUE(c) << to_string(c.error().code);
  EXPECT_EQ(c->personality, 0x4142434445464748u);
  EXPECT_EQ(c->fde_encoding, 0x1b);
}

TEST(Records, OldGccEhAugmentation) {
  // "eh": an address-size word after the augmentation string, before the alignments.
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.augmentation = "eh";
  cs.eh_data = 0x1122334455667788;
  cs.code_align = 4;
  cs.data_align = -4;
  cs.fde_encoding = 0x00;
  cs.instructions = CfaOps().def_cfa(7, 8);
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x400000;
  fs.pc_range = 8;
  uint64_t fde = b.fde(cie, fs);
  auto c = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c) << to_string(c.error().code);
  EXPECT_EQ(c->code_align, 4u);
  EXPECT_EQ(c->data_align, -4);
  EXPECT_FALSE(c->has_z);
  EXPECT_EQ(c->fde_encoding, 0x00);
  EXPECT_EQ(c->instructions.size(), 3u);
  auto f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pc_begin, 0x400000u);  // absptr
}

TEST(Records, UnknownAugmentation) {
  {
    // After 'z' an unknown letter ends the parse; the data length skips the rest.
    CfiBuilder b(SectionKind::EhFrame, 0x1000);
    CieSpec cs;
    cs.augmentation = "zRX";
    cs.augmentation_data = bytes_of({0x03, 0xaa, 0xbb});
    cs.instructions = CfaOps().def_cfa(7, 8);
    b.cie(cs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
    ASSERT_TRUE(c) << to_string(c.error().code);
    EXPECT_EQ(c->fde_encoding, 0x03);
    EXPECT_EQ(c->instructions.size(), 3u);
    EXPECT_EQ(c->instructions[0], std::byte{0x0c});
  }
  for (const char* aug : {"X", "R", "Rz", "e"}) {
    CfiBuilder b(SectionKind::EhFrame, 0x1000);
    CieSpec cs;
    cs.augmentation = aug;
    b.cie(cs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
    ASSERT_FALSE(c) << aug;
    EXPECT_EQ(c.error().code, ErrorCode::BadAugmentation) << aug;
  }
}

TEST(Records, BadFdeEncodingInCie) {
  for (int enc : {0xff, 0x07, 0x70}) {
    CfiBuilder b(SectionKind::EhFrame, 0x1000);
    CieSpec cs;
    cs.fde_encoding = static_cast<uint8_t>(enc);
    cs.augmentation_data = bytes_of({enc});
    b.cie(cs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
    ASSERT_FALSE(c) << enc;
    EXPECT_EQ(c.error().code, ErrorCode::BadEncoding) << enc;
  }
}

TEST(Records, AugmentationDataPastTheRecord) {
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.augmentation_data = bytes_of({0x1b});
  b.cie(cs);
  // The augmentation data length is the byte after the RA column: make it claim 100 bytes.
  // Record: len(4) id(4) ver(1) "zR\0"(3) code(1) data(1) ra(1) -> length byte at 15.
  b.patch(15, 1, 100);
  auto c = parse_cie(SectionKind::EhFrame, b.view(), 0, b.format(), Limits{});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::Truncated);
}

TEST(Records, TruncatedCieBody) {
  // Length 5: the id and the version only.
  auto b = bytes_of({0x05, 0, 0, 0, 0, 0, 0, 0, 0x01});
  auto c = parse_cie(SectionKind::EhFrame, view_of(b, 0), 0, Format{}, Limits{});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::Truncated);
  // Length 2: not even room for the id.
  auto b2 = bytes_of({0x02, 0, 0, 0, 0, 0});
  auto h = parse_record_header(SectionKind::EhFrame, view_of(b2, 0), 0, Format{}, Limits{});
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, ErrorCode::BadLength);
  // Three bytes: not even a length.
  auto b3 = bytes_of({0x10, 0, 0});
  EXPECT_EQ(
      parse_record_header(SectionKind::EhFrame, view_of(b3, 0), 0, Format{}, Limits{}).error().code,
      ErrorCode::Truncated);
}

TEST(Records, OverlongLeb128InCie) {
  // code_align (at offset 10) is an 11-byte LEB128.
  auto raw = bytes_of({0x16, 0,    0,    0,    0,    0,    0,    0,    0x01, 0x00, 0x80, 0x80, 0x80,
                       0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x78, 0x10, 0,    0,    0});
  auto c = parse_cie(SectionKind::EhFrame, view_of(raw, 0), 0, Format{}, Limits{});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::BadLeb128);
  EXPECT_EQ(c.error().where, 10u);
}

TEST(Records, LengthPastTheSection) {
  auto b = gcc_style_eh_frame();
  b[0x18] = std::byte{0x40};  // the FDE claims 64 bytes; only 24 follow
  SectionView sec = view_of(b, 0x1000);
  auto cie = parse_cie(SectionKind::EhFrame, sec, 0, Format{}, Limits{});
  ASSERT_TRUE(cie);
  auto f = parse_fde(SectionKind::EhFrame, sec, 0x18, *cie, Format{}, Limits{});
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::BadLength);
  EXPECT_EQ(f.error().where, 0x18u);
  // A 64-bit length past the section.
  auto b64 = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0});
  Limits huge;
  huge.max_record_bytes = UINT64_MAX;
  EXPECT_EQ(
      parse_record_header(SectionKind::EhFrame, view_of(b64, 0), 0, Format{}, huge).error().code,
      ErrorCode::BadLength);
  // Reserved initial lengths.
  auto reserved = bytes_of({0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0});
  EXPECT_EQ(parse_record_header(SectionKind::EhFrame, view_of(reserved, 0), 0, Format{}, huge)
                .error()
                .code,
            ErrorCode::BadLength);
  // An offset outside the section.
  EXPECT_EQ(parse_record_header(SectionKind::EhFrame, sec, 0x1000, Format{}, Limits{}).error().code,
            ErrorCode::BadLength);
}

TEST(Records, LimitRecordBytes) {
  auto b = gcc_style_eh_frame();
  Limits lim;
  lim.max_record_bytes = 19;  // both records are 20 bytes long
  auto c = parse_cie(SectionKind::EhFrame, view_of(b, 0x1000), 0, Format{}, lim);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::LimitRecordBytes);
  lim.max_record_bytes = 20;
  EXPECT_TRUE(parse_cie(SectionKind::EhFrame, view_of(b, 0x1000), 0, Format{}, lim));
}

TEST(Records, BadCiePointers) {
  auto b = gcc_style_eh_frame();
  SectionView sec = view_of(b, 0x1000);
  auto cie = parse_cie(SectionKind::EhFrame, sec, 0, Format{}, Limits{});
  ASSERT_TRUE(cie);
  auto fde_with_pointer = [&](uint32_t ptr) {
    auto copy = b;
    copy[0x1c] = std::byte(ptr & 0xff);
    copy[0x1d] = std::byte((ptr >> 8) & 0xff);
    copy[0x1e] = std::byte((ptr >> 16) & 0xff);
    copy[0x1f] = std::byte((ptr >> 24) & 0xff);
    return copy;
  };
  {
    // Points at the FDE itself: field 0x1c - 4 = 0x18.
    auto copy = fde_with_pointer(4);
    auto h =
        parse_record_header(SectionKind::EhFrame, view_of(copy, 0x1000), 0x18, Format{}, Limits{});
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error().code, ErrorCode::BadCie);
    EXPECT_EQ(parse_fde(SectionKind::EhFrame, view_of(copy, 0x1000), 0x18, *cie, Format{}, Limits{})
                  .error()
                  .code,
              ErrorCode::BadCie);
  }
  {
    // Before the section start.
    auto copy = fde_with_pointer(0x100);
    EXPECT_EQ(
        parse_record_header(SectionKind::EhFrame, view_of(copy, 0x1000), 0x18, Format{}, Limits{})
            .error()
            .code,
        ErrorCode::BadCie);
  }
  {
    // At an FDE: a second FDE pointing at the first.
    CfiBuilder bb(SectionKind::EhFrame, 0x1000);
    uint64_t c = bb.cie(CieSpec{});
    FdeSpec fs;
    fs.pc_begin = 0x400000;
    fs.pc_range = 4;
    uint64_t f1 = bb.fde(c, fs);
    const uint64_t f2 = bb.size();
    fs.cie_pointer = f2 + 4 - f1;
    bb.fde(c, fs);
    auto h = parse_record_header(SectionKind::EhFrame, bb.view(), f2, bb.format(), Limits{});
    ASSERT_TRUE(h);
    EXPECT_EQ(h->cie_offset, f1);
    auto as_cie = parse_cie(SectionKind::EhFrame, bb.view(), f1, bb.format(), Limits{});
    ASSERT_FALSE(as_cie);
    EXPECT_EQ(as_cie.error().code, ErrorCode::BadCie);
  }
  {
    // .debug_frame: a CIE offset outside the section.
    CfiBuilder bb(SectionKind::DebugFrame, 0);
    CieSpec cs;
    cs.augmentation = "";
    uint64_t c = bb.cie(cs);
    FdeSpec fs;
    fs.cie_pointer = 0x10000;
    uint64_t f = bb.fde(c, fs);
    EXPECT_EQ(parse_record_header(SectionKind::DebugFrame, bb.view(), f, bb.format(), Limits{})
                  .error()
                  .code,
              ErrorCode::BadCie);
  }
  {
    // parse_fde with a CIE the FDE does not name.
    Cie other = *cie;
    other.offset = 8;
    EXPECT_EQ(parse_fde(SectionKind::EhFrame, sec, 0x18, other, Format{}, Limits{}).error().code,
              ErrorCode::BadCie);
  }
}

TEST(Records, IndirectFdeAddressNeedsReader) {
  CfiBuilder b(SectionKind::EhFrame, 0x1000);
  CieSpec cs;
  cs.fde_encoding = 0x80;  // indirect absptr
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x9000;  // the cell
  fs.pc_range = 0x10;
  uint64_t fde = b.fde(cie, fs);
  auto c = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c);
  auto f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::MemoryFault);
  EXPECT_EQ(f.error().where, 0x9000u);
  IndirectReader reader = [](uint64_t a) -> std::optional<uint64_t> {
    if (a == 0x9000) return 0x405000;
    return std::nullopt;
  };
  f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{}, {}, reader);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pc_begin, 0x405000u);
  EXPECT_EQ(f->pc_end, 0x405010u);
}

TEST(Records, TextAndDataRelativeFdes) {
  test::EncodeBases eb;
  eb.text = 0x400000;
  eb.data = 0x600000;
  for (uint8_t enc : {0x23, 0x3b}) {  // textrel|udata4, datarel|sdata4
    CfiBuilder b(SectionKind::EhFrame, 0x1000, false, 8, eb);
    CieSpec cs;
    cs.fde_encoding = enc;
    uint64_t cie = b.cie(cs);
    FdeSpec fs;
    fs.pc_begin = 0x401234;
    fs.pc_range = 0x10;
    uint64_t fde = b.fde(cie, fs);
    auto c = parse_cie(SectionKind::EhFrame, b.view(), cie, b.format(), Limits{});
    ASSERT_TRUE(c);
    Bases bases{0x400000, 0x600000};
    auto f = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{}, bases);
    ASSERT_TRUE(f) << int(enc);
    EXPECT_EQ(f->pc_begin, 0x401234u);
    // Without bases the encoding cannot be used.
    auto g = parse_fde(SectionKind::EhFrame, b.view(), fde, *c, b.format(), Limits{});
    ASSERT_FALSE(g);
    EXPECT_EQ(g.error().code, ErrorCode::BadEncoding);
  }
}

TEST(Records, DebugFrameIgnoresFdeEncoding) {
  // A .debug_frame CIE with 'zR' still has absptr FDE addresses.
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;  // zR with pcrel|sdata4
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x123456789a;
  fs.pc_range = 0x20;
  uint64_t fde = b.fde(cie, fs);
  auto c = parse_cie(SectionKind::DebugFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->fde_encoding, 0x00);
  auto f = parse_fde(SectionKind::DebugFrame, b.view(), fde, *c, b.format(), Limits{});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pc_begin, 0x123456789au);
}

TEST(Records, FdeRangeOverflow) {
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.augmentation = "";
  uint64_t cie = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0xfffffffffffffff0;
  fs.pc_range = 0x20;
  uint64_t fde = b.fde(cie, fs);
  auto c = parse_cie(SectionKind::DebugFrame, b.view(), cie, b.format(), Limits{});
  ASSERT_TRUE(c);
  EXPECT_EQ(
      parse_fde(SectionKind::DebugFrame, b.view(), fde, *c, b.format(), Limits{}).error().code,
      ErrorCode::BadLength);
}

// What the index of a section reads of each FDE (parse_fde_range) is what parse_fde reads: the
// same range, or the same error, for every FDE shape the index meets and for every body cut
// short of its range (a record whose length leaves k bytes after the CIE pointer).
TEST(Records, FdeRangeAgreesWithParseFde) {
  struct Shape {
    const char* what;
    SectionKind kind;
    bool big_endian;
    CieSpec cie;
    FdeSpec fde;
    bool valid = true;  // false: the whole record is refused too (by both)
  };
  std::vector<Shape> shapes;
  {
    Shape s{".debug_frame, 8-byte addresses", SectionKind::DebugFrame, false, {}, {}};
    s.cie.augmentation = "";
    s.fde.pc_begin = 0x401000;
    s.fde.pc_range = 0x30;
    shapes.push_back(s);
  }
  {
    Shape s{".debug_frame v4, 4-byte addresses, 2-byte segment",
            SectionKind::DebugFrame,
            false,
            {},
            {}};
    s.cie.version = 4;
    s.cie.augmentation = "";
    s.cie.address_size = 4;
    s.cie.segment_size = 2;
    s.fde.pc_begin = 0x8000;
    s.fde.pc_range = 0x10;
    s.fde.segment = 0x1234;
    shapes.push_back(s);
  }
  {
    Shape s{".debug_frame, big-endian", SectionKind::DebugFrame, true, {}, {}};
    s.cie.augmentation = "";
    s.fde.pc_begin = 0x1000000001234;
    s.fde.pc_range = 0x44;
    shapes.push_back(s);
  }
  {
    Shape s{".debug_frame, a range past 2^64", SectionKind::DebugFrame, false, {}, {}};
    s.cie.augmentation = "";
    s.fde.pc_begin = 0xfffffffffffffff0;
    s.fde.pc_range = 0x20;
    s.valid = false;
    shapes.push_back(s);
  }
  {
    Shape s{".eh_frame, pcrel|sdata4", SectionKind::EhFrame, false, {}, {}};
    s.fde.pc_begin = 0x401000;
    s.fde.pc_range = 0x20;
    shapes.push_back(s);
  }
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.what);
    CfiBuilder b(shape.kind, 0x2000, shape.big_endian);
    const uint64_t cie_off = b.cie(shape.cie);
    const uint64_t fde_off = b.fde(cie_off, shape.fde);
    const std::vector<std::byte> whole = b.bytes();
    const Format fmt = b.format();
    const Limits lim;
    auto cie = parse_cie(shape.kind, b.view(), cie_off, fmt, lim);
    ASSERT_TRUE(cie) << to_string(cie.error().code);
    const uint64_t body_len = whole.size() - fde_off - 8;  // after length and CIE pointer
    std::optional<uint64_t> range_whole;  // where the range fields end, once read whole
    for (uint64_t k = 0; k <= body_len; ++k) {
      SCOPED_TRACE("body bytes " + std::to_string(k));
      std::vector<std::byte> cut(whole.begin(), whole.begin() + fde_off + 8 + k);
      CfiBuilder patch(shape.kind, 0x2000, shape.big_endian);
      patch.bytes() = cut;
      patch.patch(fde_off, 4, 4 + k);
      const SectionView sec = patch.view();
      auto full = parse_fde(shape.kind, sec, fde_off, *cie, fmt, lim);
      auto header = parse_record_header(shape.kind, sec, fde_off, fmt, lim);
      ASSERT_TRUE(header) << to_string(header.error().code);
      auto range = parse_fde_range(shape.kind, sec, *header, *cie, fmt, {}, {});
      if (!range) {
        // Cut inside the range fields: parse_fde fails there too, in the same way.
        ASSERT_FALSE(full);
        EXPECT_EQ(to_string(range.error().code), to_string(full.error().code));
        EXPECT_EQ(range.error().where, full.error().where);
        continue;
      }
      if (!range_whole) range_whole = header->body + k;
      if (full) {
        EXPECT_EQ(range->pc_begin, full->pc_begin);
        EXPECT_EQ(range->pc_end, full->pc_end);
      } else {
        // What parse_fde read past the range (augmentation data) is cut: not the index's.
        EXPECT_GE(full.error().where, *range_whole);
      }
    }
    EXPECT_EQ(range_whole.has_value(), shape.valid);
  }
  // Checked by hand for the first shape: the whole record gives [0x401000, 0x401030).
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.augmentation = "";
  const uint64_t cie_off = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x30;
  const uint64_t fde_off = b.fde(cie_off, fs);
  auto cie = parse_cie(SectionKind::DebugFrame, b.view(), cie_off, b.format(), Limits{});
  ASSERT_TRUE(cie);
  auto header = parse_record_header(SectionKind::DebugFrame, b.view(), fde_off, b.format(), {});
  ASSERT_TRUE(header);
  auto range =
      parse_fde_range(SectionKind::DebugFrame, b.view(), *header, *cie, b.format(), {}, {});
  ASSERT_TRUE(range);
  EXPECT_EQ(range->pc_begin, 0x401000u);
  EXPECT_EQ(range->pc_end, 0x401030u);
  // A header that is not this CIE's FDE is refused.
  RecordHeader other = *header;
  other.cie_offset += 1;
  EXPECT_EQ(parse_fde_range(SectionKind::DebugFrame, b.view(), other, *cie, b.format(), {}, {})
                .error()
                .code,
            ErrorCode::BadCie);
}

// The index's in-place reading of a common .debug_frame FDE (common_debug_fde) gives what the
// general path gives (parse_record_framing, then parse_fde_range): the same end and range for
// every body length, and nothing where that path would judge differently.
TEST(Records, CommonDebugFdeIsWhatTheGeneralPathReads) {
  struct Shape {
    const char* what;
    bool big_endian;
    uint8_t version, address_size;
    uint64_t begin, range;
  };
  const Shape shapes[] = {{"8-byte addresses", false, 3, 8, 0x401000, 0x30},
                          {"v4, 4-byte addresses", false, 4, 4, 0x8000, 0x10},
                          {"big-endian", true, 3, 8, 0x1000000001234, 0x44}};
  const Limits lim;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.what);
    CfiBuilder b(SectionKind::DebugFrame, 0, shape.big_endian);
    CieSpec cs;
    cs.version = shape.version;
    cs.augmentation = "";
    cs.address_size = shape.address_size;
    const uint64_t cie_off = b.cie(cs);
    FdeSpec fs;
    fs.pc_begin = shape.begin;
    fs.pc_range = shape.range;
    fs.instructions = CfaOps().advance_loc(1).def_cfa_offset(16);
    const uint64_t fde_off = b.fde(cie_off, fs);
    const std::vector<std::byte> whole = b.bytes();
    const Format fmt = b.format();
    auto cie = parse_cie(SectionKind::DebugFrame, b.view(), cie_off, fmt, lim);
    ASSERT_TRUE(cie) << to_string(cie.error().code);
    ASSERT_EQ(cie->address_size, shape.address_size);
    const uint64_t body_len = whole.size() - fde_off - 8;
    unsigned read_in_place = 0;
    for (uint64_t k = 0; k <= body_len; ++k) {
      SCOPED_TRACE("body bytes " + std::to_string(k));
      CfiBuilder cut(SectionKind::DebugFrame, 0, shape.big_endian);
      cut.bytes().assign(whole.begin(), whole.begin() + fde_off + 8 + k);
      cut.patch(fde_off, 4, 4 + k);
      auto fast = common_debug_fde(cut.view(), fde_off, *cie, fmt, lim);
      auto framing = parse_record_framing(SectionKind::DebugFrame, cut.view(), fde_off, fmt, lim);
      ASSERT_TRUE(framing);
      auto range =
          parse_fde_range(SectionKind::DebugFrame, cut.view(), framing->header, *cie, fmt, {}, {});
      // The range fields are whole from 2 * address size on; the general path reads them too.
      EXPECT_EQ(fast.has_value(), k >= 2u * shape.address_size);
      EXPECT_EQ(range.has_value(), k >= 2u * shape.address_size);
      if (!fast) continue;
      ++read_in_place;
      ASSERT_TRUE(range);
      EXPECT_EQ(framing->header.kind, RecordKind::Fde);
      EXPECT_TRUE(framing->cie_ok);
      EXPECT_EQ(fast->end, framing->header.end);
      EXPECT_EQ(fast->range.pc_begin, range->pc_begin);
      EXPECT_EQ(fast->range.pc_end, range->pc_end);
      EXPECT_EQ(fast->range.pc_begin, shape.begin);
      EXPECT_EQ(fast->range.pc_end, shape.begin + shape.range);
    }
    EXPECT_GT(read_in_place, 0u);
  }
}

// What common_debug_fde leaves to the general path: a CIE, another CIE's FDE, a CIE with
// augmentation data or a segment selector, a range past 2^64, a 64-bit record, a record over
// the cap or past the section, a terminator.
TEST(Records, CommonDebugFdeLeavesTheRestToTheGeneralPath) {
  CfiBuilder b(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.version = 3;
  cs.augmentation = "";
  const uint64_t cie_a = b.cie(cs);
  const uint64_t cie_b = b.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x20;
  const uint64_t fde_a = b.fde(cie_a, fs);
  FdeSpec wraps = fs;
  wraps.pc_begin = 0xfffffffffffffff0;
  const uint64_t fde_wraps = b.fde(cie_a, wraps);
  FdeSpec wide = fs;
  wide.dwarf64 = true;
  const uint64_t fde_wide = b.fde(cie_a, wide);
  const uint64_t end = b.terminator();
  const Format fmt = b.format();
  const Limits lim;
  auto a = parse_cie(SectionKind::DebugFrame, b.view(), cie_a, fmt, lim);
  auto other = parse_cie(SectionKind::DebugFrame, b.view(), cie_b, fmt, lim);
  ASSERT_TRUE(a && other);
  auto ok = common_debug_fde(b.view(), fde_a, *a, fmt, lim);
  ASSERT_TRUE(ok);  // the control: this one is read in place
  EXPECT_EQ(ok->range.pc_end, 0x401020u);
  EXPECT_FALSE(common_debug_fde(b.view(), cie_a, *a, fmt, lim));      // a CIE
  EXPECT_FALSE(common_debug_fde(b.view(), fde_a, *other, fmt, lim));  // another CIE's
  EXPECT_FALSE(common_debug_fde(b.view(), fde_wraps, *a, fmt, lim));  // past 2^64
  EXPECT_FALSE(common_debug_fde(b.view(), fde_wide, *a, fmt, lim));   // 64-bit DWARF
  EXPECT_FALSE(common_debug_fde(b.view(), end, *a, fmt, lim));        // the terminator
  EXPECT_FALSE(common_debug_fde(b.view(), b.size(), *a, fmt, lim));   // the section's end
  Cie z = *a;
  z.has_z = true;
  EXPECT_FALSE(common_debug_fde(b.view(), fde_a, z, fmt, lim));
  Cie segmented = *a;
  segmented.segment_size = 2;
  EXPECT_FALSE(common_debug_fde(b.view(), fde_a, segmented, fmt, lim));
  Limits small;
  small.max_record_bytes = 8;
  EXPECT_FALSE(common_debug_fde(b.view(), fde_a, *a, fmt, small));
  // Its length one byte past the section.
  CfiBuilder past = b;
  past.bytes().resize(fde_wraps);
  past.patch(fde_a, 4, fde_wraps - fde_a - 4 + 1);
  EXPECT_FALSE(common_debug_fde(past.view(), fde_a, *a, fmt, lim));
}

TEST(Records, ErrorNamesAndStopReasons) {
  EXPECT_EQ(to_string(ErrorCode::Truncated), "truncated");
  EXPECT_EQ(to_string(ErrorCode::LimitCfiInstructions), "limit_cfi_instructions");
  EXPECT_EQ(to_string(ErrorCode::BadCie), "bad_cie");
  EXPECT_EQ(to_string(ErrorCode::LimitSearchProbes), "limit_search_probes");
  EXPECT_EQ(to_stop_reason(ErrorCode::MemoryFault), StopReason::MemoryFault);
  EXPECT_EQ(to_stop_reason(ErrorCode::Unsupported), StopReason::Unsupported);
  EXPECT_EQ(to_stop_reason(ErrorCode::NoEntry), StopReason::NoUnwindInfo);
  EXPECT_EQ(to_stop_reason(ErrorCode::NotCovered), StopReason::NoUnwindInfo);
  EXPECT_EQ(to_stop_reason(ErrorCode::BadOpcode), StopReason::BadUnwindInfo);
  EXPECT_EQ(to_stop_reason(ErrorCode::LimitRules), StopReason::BadUnwindInfo);
  // Every code has a distinct name.
  std::map<std::string_view, int> names;
  for (int c = 0; c <= static_cast<int>(ErrorCode::LimitSearchProbes); ++c) {
    names[to_string(static_cast<ErrorCode>(c))]++;
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(ErrorCode::LimitSearchProbes) + 1);
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace ehbt::dwarf
