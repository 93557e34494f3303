// SPDX-License-Identifier: Apache-2.0
// ImageCfi: lookups through .eh_frame_hdr and through the scanned index, .debug_frame
// fallback, the row cache, sections marked bad, and the record walk used by `ehbt cfi`.
#include <gtest/gtest.h>

#include <vector>

#include "dwarf/cfi.hpp"
#include "support/cfi_builder.hpp"

namespace ehbt::dwarf {
namespace {

using test::build_eh_frame_hdr;
using test::CfaOps;
using test::CfiBuilder;
using test::CieSpec;
using test::FdeSpec;
using test::HdrSpec;

constexpr uint64_t kHdrAddr = 0x1000;
constexpr uint64_t kEhAddr = 0x2000;

// Three functions, stored out of address order:
//   F1 [0x401000, 0x401040): CFA rsp+8, then rsp+16 from 0x401004
//   F3 [0x401040, 0x401080): CFA rbp+16 throughout
//   F2 [0x401100, 0x401180): CFA rsp+8, then rsp+32 from 0x401110
struct Image {
  CfiBuilder eh{SectionKind::EhFrame, kEhAddr};
  std::vector<std::byte> hdr;
  uint64_t cie = 0, f1 = 0, f2 = 0, f3 = 0;

  Image() {
    CieSpec cs;
    cs.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
    cie = eh.cie(cs);
    FdeSpec fs;
    fs.pc_begin = 0x401000;
    fs.pc_range = 0x40;
    fs.instructions = CfaOps().advance_loc(4).def_cfa_offset(16).offset(6, 2);
    f1 = eh.fde(cie, fs);
    fs.pc_begin = 0x401100;
    fs.pc_range = 0x80;
    fs.instructions = CfaOps().advance_loc(0x10).def_cfa_offset(32);
    f2 = eh.fde(cie, fs);
    fs.pc_begin = 0x401040;
    fs.pc_range = 0x40;
    fs.instructions = CfaOps().def_cfa(6, 16);
    f3 = eh.fde(cie, fs);
    eh.terminator();
    set_table({{0x401000, kEhAddr + f1}, {0x401040, kEhAddr + f3}, {0x401100, kEhAddr + f2}});
  }
  void set_table(std::vector<std::pair<uint64_t, uint64_t>> entries) {
    HdrSpec spec;
    spec.eh_frame_addr = kEhAddr;
    spec.entries = std::move(entries);
    hdr = build_eh_frame_hdr(spec, kHdrAddr);
  }
  SectionView hdr_view() const { return {kHdrAddr, hdr}; }
};

struct Want {
  uint64_t pc, start, end;
  uint16_t cfa_reg;
  int64_t cfa_off;
};

const Want kRows[] = {
    {0x401000, 0x401000, 0x401004, 7, 8},  {0x401003, 0x401000, 0x401004, 7, 8},
    {0x401004, 0x401004, 0x401040, 7, 16}, {0x40103f, 0x401004, 0x401040, 7, 16},
    {0x401040, 0x401040, 0x401080, 6, 16}, {0x40107f, 0x401040, 0x401080, 6, 16},
    {0x401100, 0x401100, 0x401110, 7, 8},  {0x401110, 0x401110, 0x401180, 7, 32},
    {0x40117f, 0x401110, 0x401180, 7, 32},
};

void check_rows(ImageCfi& cfi) {
  for (const Want& w : kRows) {
    SectionKind from = SectionKind::DebugFrame;
    auto r = cfi.find_row(w.pc, &from);
    ASSERT_TRUE(r) << std::hex << w.pc << " " << to_string(r.error().code);
    EXPECT_EQ(from, SectionKind::EhFrame);
    EXPECT_EQ(r->start, w.start) << std::hex << w.pc;
    EXPECT_EQ(r->end, w.end) << std::hex << w.pc;
    EXPECT_EQ(r->cfa.reg, w.cfa_reg) << std::hex << w.pc;
    EXPECT_EQ(r->cfa.offset, w.cfa_off) << std::hex << w.pc;
    EXPECT_EQ(r->rule(16).offset, -8);
  }
  for (uint64_t pc : {uint64_t{0x400fff}, uint64_t{0x401080}, uint64_t{0x4010ff},
                      uint64_t{0x401180}, uint64_t{0}, UINT64_MAX}) {
    auto r = cfi.find_row(pc);
    ASSERT_FALSE(r) << std::hex << pc;
    EXPECT_EQ(r.error().code, ErrorCode::NoEntry) << std::hex << pc;
  }
}

// A .debug_frame CIE (version 3, no augmentation) with these initial instructions.
CieSpec debug_frame_cie(std::vector<std::byte> instructions) {
  CieSpec cs;
  cs.version = 3;
  cs.augmentation = "";
  cs.instructions = std::move(instructions);
  return cs;
}

TEST(ImageCfi, LookupThroughTheHeader) {
  Image img;
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  check_rows(cfi);
  check_rows(cfi);  // warm: served from the row cache, same answers
  EXPECT_FALSE(cfi.eh_frame_bad());
}

TEST(ImageCfi, LookupThroughTheScannedIndex) {
  Image img;
  ImageCfi cfi({}, img.eh.view(), {}, Format{}, Bases{}, Limits{});
  check_rows(cfi);
  check_rows(cfi);
  // A header without a searchable table falls back to the scan as well.
  HdrSpec spec;
  spec.eh_frame_addr = kEhAddr;
  spec.table_enc = 0x01;  // uleb128: not searchable
  std::vector<std::byte> hdr = build_eh_frame_hdr(spec, kHdrAddr);
  ImageCfi cfi2({kHdrAddr, hdr}, img.eh.view(), {}, Format{}, Bases{}, Limits{});
  check_rows(cfi2);
}

TEST(ImageCfi, FindRowRefAgreesWithFindRow) {
  Image img;
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  for (int round = 0; round < 2; ++round) {
    for (const Want& w : kRows) {
      SectionKind from = SectionKind::DebugFrame;
      auto r = cfi.find_row_ref(w.pc, &from);
      ASSERT_TRUE(r);
      const Row* row = *r;
      EXPECT_EQ(from, SectionKind::EhFrame);
      EXPECT_EQ(row->start, w.start);
      EXPECT_EQ(row->end, w.end);
      EXPECT_EQ(row->cfa.reg, w.cfa_reg);
      EXPECT_EQ(row->cfa.offset, w.cfa_off);
    }
  }
  EXPECT_EQ(cfi.find_row_ref(0x401080).error().code, ErrorCode::NoEntry);
}

TEST(ImageCfi, EveryPcOfAFunctionTwice) {
  // Neighbouring pcs fill the cache with both rows of F1; each answer must still be the row
  // that contains the pc.
  Image img;
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  for (int round = 0; round < 2; ++round) {
    for (uint64_t pc = 0x401000; pc < 0x401040; ++pc) {
      auto r = cfi.find_row(pc);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->cfa.offset, pc < 0x401004 ? 8 : 16) << std::hex << pc;
      EXPECT_LE(r->start, pc);
      EXPECT_GT(r->end, pc);
    }
  }
}

TEST(ImageCfi, FindFde) {
  Image img;
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  auto r = cfi.find_fde(SectionKind::EhFrame, 0x401150);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first.offset, img.f2);
  EXPECT_EQ(r->first.pc_begin, 0x401100u);
  EXPECT_EQ(r->first.pc_end, 0x401180u);
  EXPECT_EQ(r->second.offset, img.cie);
  EXPECT_EQ(cfi.find_fde(SectionKind::DebugFrame, 0x401150).error().code, ErrorCode::NoEntry);
}

TEST(ImageCfi, UnsortedTableMarksTheSectionBad) {
  Image img;
  // F2 before F1: a search for 0x401000's neighbourhood probes both.
  img.set_table(
      {{0x401100, kEhAddr + img.f2}, {0x401000, kEhAddr + img.f1}, {0x401040, kEhAddr + img.f3}});
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  // Probes for 0x401050: entry 1 (0x401000 <= pc), then entry 2 (0x401040 <= pc): sorted so
  // far and F3 covers it.
  EXPECT_TRUE(cfi.find_row(0x401050));
  // Probes for 0x400800: entry 1 (0x401000 > pc), then entry 0 (0x401100 > 0x401000).
  auto r = cfi.find_row(0x400800);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::Unsorted);
  EXPECT_TRUE(cfi.eh_frame_bad());
  // Not parsed again: every later lookup that misses the cache reports the same error.
  auto s = cfi.find_row(0x401110);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::Unsorted);
  // The row cached before the table was found bad is still a valid row.
  EXPECT_TRUE(cfi.find_row(0x401050));
}

TEST(ImageCfi, TableEntryOutsideEhFrame) {
  Image img;
  img.set_table({{0x401000, kEhAddr + img.f1}, {0x401040, 0x900000}});
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  auto r = cfi.find_row(0x401050);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadLength);
  EXPECT_EQ(r.error().where, 0x900000u);
  EXPECT_TRUE(cfi.eh_frame_bad());
  EXPECT_EQ(cfi.find_row(0x401000).error().code, ErrorCode::BadLength);
}

TEST(ImageCfi, TableEntryPointingAtACie) {
  Image img;
  img.set_table({{0x401000, kEhAddr + img.cie}});
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  auto r = cfi.find_row(0x401000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::BadCie);
  EXPECT_TRUE(cfi.eh_frame_bad());
}

TEST(ImageCfi, TableEntryThatDoesNotCoverThePc) {
  // Only F1 in the table: a pc in F3 finds F1, which ends before it: no FDE covers the pc.
  Image img;
  img.set_table({{0x401000, kEhAddr + img.f1}});
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  EXPECT_EQ(cfi.find_row(0x401050).error().code, ErrorCode::NoEntry);
  EXPECT_FALSE(cfi.eh_frame_bad());
}

TEST(ImageCfi, EvaluationErrorsDoNotMarkTheSectionBad) {
  CfiBuilder eh(SectionKind::EhFrame, kEhAddr);
  CieSpec cs;
  cs.instructions = CfaOps().def_cfa(7, 8);
  uint64_t cie = eh.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x10;
  fs.instructions = CfaOps().advance_loc(4).raw({0x3f});  // unknown opcode
  eh.fde(cie, fs);
  ImageCfi cfi({}, eh.view(), {}, Format{}, Bases{}, Limits{});
  EXPECT_TRUE(cfi.find_row(0x401000));
  EXPECT_EQ(cfi.find_row(0x401004).error().code, ErrorCode::BadOpcode);
  EXPECT_FALSE(cfi.eh_frame_bad());
}

TEST(ImageCfi, DebugFrameFallback) {
  Image img;
  CfiBuilder dbg(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.version = 3;
  cs.augmentation = "";
  cs.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
  uint64_t cie = dbg.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x402000;
  fs.pc_range = 0x20;
  fs.instructions = CfaOps().advance_loc(1).def_cfa_offset(16);
  dbg.fde(cie, fs);

  ImageCfi cfi(img.hdr_view(), img.eh.view(), dbg.view(), Format{}, Bases{}, Limits{});
  SectionKind from = SectionKind::EhFrame;
  auto r = cfi.find_row(0x402005, &from);
  ASSERT_TRUE(r) << to_string(r.error().code);
  EXPECT_EQ(from, SectionKind::DebugFrame);
  EXPECT_EQ(r->start, 0x402001u);
  EXPECT_EQ(r->cfa.offset, 16);
  r = cfi.find_row(0x402005, &from);  // cached, with its source
  ASSERT_TRUE(r);
  EXPECT_EQ(from, SectionKind::DebugFrame);
  EXPECT_EQ(cfi.find_row(0x402010, nullptr, false).error().code, ErrorCode::NoEntry);
  // .eh_frame answers first where both could.
  EXPECT_TRUE(cfi.find_row(0x401000, &from));
  EXPECT_EQ(from, SectionKind::EhFrame);
  EXPECT_EQ(cfi.find_row(0x403000).error().code, ErrorCode::NoEntry);

  // A bad .eh_frame does not hide .debug_frame; where neither answers, the .eh_frame error
  // is the one reported.
  img.set_table({{0x401100, kEhAddr + img.f2}, {0x401000, kEhAddr + img.f1}});
  ImageCfi bad(img.hdr_view(), img.eh.view(), dbg.view(), Format{}, Bases{}, Limits{});
  EXPECT_EQ(bad.find_row(0x400800).error().code, ErrorCode::Unsorted);
  ASSERT_TRUE(bad.eh_frame_bad());
  EXPECT_TRUE(bad.find_row(0x402000, &from));
  EXPECT_EQ(from, SectionKind::DebugFrame);
  EXPECT_EQ(bad.find_row(0x403000).error().code, ErrorCode::Unsorted);
}

// The scanned index of .debug_frame, in address order (as linkers write it, and left as it
// is) and out of it (sorted), gives the same answers; of two FDEs with the same start, the
// later one in the section answers, whichever order the others are in.
TEST(ImageCfi, DebugFrameIndexInAndOutOfOrder) {
  struct Fn {
    uint64_t begin, range;
    int64_t offset;  // CFA rsp + offset from the second byte on
  };
  auto section = [](const std::vector<Fn>& fns) {
    CfiBuilder dbg(SectionKind::DebugFrame, 0);
    const uint64_t cie = dbg.cie(debug_frame_cie(CfaOps().def_cfa(7, 8).offset(16, 1)));
    for (const Fn& f : fns) {
      FdeSpec fs;
      fs.pc_begin = f.begin;
      fs.pc_range = f.range;
      fs.instructions = CfaOps().advance_loc(1).def_cfa_offset(f.offset);
      dbg.fde(cie, fs);
    }
    return dbg;
  };
  // The same start twice: [0x500000, +0x10) with 24, then [0x500000, +0x40) with 40.
  const Fn a{0x401000, 0x20, 16}, b{0x402000, 0x20, 32}, c{0x403000, 0x20, 48};
  const Fn dup1{0x500000, 0x10, 24}, dup2{0x500000, 0x40, 40};
  for (const auto& order : {std::vector<Fn>{a, b, c, dup1, dup2},     // in order
                            std::vector<Fn>{c, dup1, a, dup2, b},     // out of order
                            std::vector<Fn>{dup1, dup2, c, b, a}}) {  // descending
    CfiBuilder dbg = section(order);
    ImageCfi cfi({}, {}, dbg.view(), Format{}, Bases{}, Limits{});
    for (const Fn& f : {a, b, c}) {
      SectionKind from = SectionKind::EhFrame;
      auto r = cfi.find_row(f.begin + 5, &from);
      ASSERT_TRUE(r) << std::hex << f.begin << " " << to_string(r.error().code);
      EXPECT_EQ(from, SectionKind::DebugFrame);
      EXPECT_EQ(r->start, f.begin + 1);
      EXPECT_EQ(r->cfa.offset, f.offset);
      EXPECT_EQ(cfi.find_row(f.begin + f.range).error().code, ErrorCode::NoEntry);
    }
    auto r = cfi.find_row(0x500005);
    ASSERT_TRUE(r) << to_string(r.error().code);
    EXPECT_EQ(r->cfa.offset, 40);  // dup2: after dup1 in every order above
    EXPECT_EQ(r->end, 0x500040u);
    EXPECT_FALSE(cfi.debug_frame_bad());
  }
}

// The index of .debug_frame reads an FDE of the CIE the FDE before had in place, and any other
// record the general way: FDEs of two CIEs interleaved and a 64-bit one are all found, each
// with its own CIE's rules; the cap on index entries holds for both ways.
TEST(ImageCfi, DebugFrameIndexAcrossTwoCies) {
  CfiBuilder dbg(SectionKind::DebugFrame, 0);
  const uint64_t cie_a = dbg.cie(debug_frame_cie(CfaOps().def_cfa(7, 8).offset(16, 1)));
  const uint64_t cie_b = dbg.cie(debug_frame_cie(CfaOps().def_cfa(6, 16).offset(16, 1)));  // rbp
  struct Fn {
    uint64_t begin;
    uint64_t cie;
    bool dwarf64;
  };
  const Fn fns[] = {{0x401000, cie_a, false}, {0x402000, cie_a, false}, {0x403000, cie_b, false},
                    {0x404000, cie_a, false}, {0x405000, cie_a, true},  {0x406000, cie_a, false}};
  for (const Fn& f : fns) {
    FdeSpec fs;
    fs.pc_begin = f.begin;
    fs.pc_range = 0x20;
    fs.dwarf64 = f.dwarf64;
    dbg.fde(f.cie, fs);
  }
  ImageCfi cfi({}, {}, dbg.view(), Format{}, Bases{}, Limits{});
  for (const Fn& f : fns) {
    SectionKind from = SectionKind::EhFrame;
    auto r = cfi.find_row(f.begin + 4, &from);
    ASSERT_TRUE(r) << std::hex << f.begin << " " << to_string(r.error().code);
    EXPECT_EQ(from, SectionKind::DebugFrame);
    EXPECT_EQ(r->start, f.begin);
    EXPECT_EQ(r->cfa.reg, f.cie == cie_b ? 6u : 7u) << std::hex << f.begin;
    EXPECT_EQ(r->cfa.offset, f.cie == cie_b ? 16 : 8) << std::hex << f.begin;
  }
  EXPECT_EQ(cfi.find_row(0x401020).error().code, ErrorCode::NoEntry);
  EXPECT_FALSE(cfi.debug_frame_bad());
  Limits lim;
  lim.max_index_entries = 5;
  ImageCfi capped({}, {}, dbg.view(), Format{}, Bases{}, lim);
  EXPECT_EQ(capped.find_row(0x401004).error().code, ErrorCode::LimitIndexEntries);
  EXPECT_TRUE(capped.debug_frame_bad());
}

TEST(ImageCfi, LimitIndexEntries) {
  Image img;
  Limits lim;
  lim.max_index_entries = 3;
  ImageCfi ok({}, img.eh.view(), {}, Format{}, Bases{}, lim);
  EXPECT_TRUE(ok.find_row(0x401000));
  lim.max_index_entries = 2;
  ImageCfi cfi({}, img.eh.view(), {}, Format{}, Bases{}, lim);
  auto r = cfi.find_row(0x401000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::LimitIndexEntries);
  EXPECT_TRUE(cfi.eh_frame_bad());
}

TEST(ImageCfi, ForEachFdeInSectionOrder) {
  Image img;
  ImageCfi cfi(img.hdr_view(), img.eh.view(), {}, Format{}, Bases{}, Limits{});
  std::vector<uint64_t> seen;
  int errors = 0;
  cfi.for_each_fde(
      SectionKind::EhFrame,
      [&](const Fde& f, const Cie& c) {
        seen.push_back(f.pc_begin);
        EXPECT_EQ(c.offset, img.cie);
      },
      [&](const Error&) { ++errors; });
  EXPECT_EQ(seen, (std::vector<uint64_t>{0x401000, 0x401100, 0x401040}));
  EXPECT_EQ(errors, 0);
}

TEST(ImageCfi, ForEachFdeReportsAndContinues) {
  CfiBuilder eh(SectionKind::EhFrame, kEhAddr);
  uint64_t cie = eh.cie(CieSpec{});
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x10;
  eh.fde(cie, fs);
  FdeSpec broken = fs;
  broken.cie_pointer = 0x7fffffff;  // before the section
  eh.fde(cie, broken);
  CieSpec bad_cie;
  bad_cie.version = 9;
  uint64_t cie2 = eh.cie(bad_cie);
  fs.pc_begin = 0x402000;
  eh.fde(cie2, fs);  // its CIE does not parse
  fs.pc_begin = 0x403000;
  eh.fde(cie, fs);
  const std::size_t tail = eh.size();
  eh.raw({0x40, 0, 0, 0, 0, 0, 0, 0});  // claims 64 bytes; 4 follow
  std::vector<uint64_t> seen;
  std::vector<ErrorCode> errors;
  ImageCfi cfi({}, eh.view(), {}, Format{}, Bases{}, Limits{});
  cfi.for_each_fde(
      SectionKind::EhFrame, [&](const Fde& f, const Cie&) { seen.push_back(f.pc_begin); },
      [&](const Error& e) {
        errors.push_back(e.code);
        if (e.code == ErrorCode::BadLength) {
          EXPECT_EQ(e.where, tail);
        }
      });
  EXPECT_EQ(seen, (std::vector<uint64_t>{0x401000, 0x403000}));
  EXPECT_EQ(errors, (std::vector<ErrorCode>{ErrorCode::BadCie, ErrorCode::BadVersion,
                                            ErrorCode::BadLength}));
  // The index scan skips the same records and still finds the good ones.
  EXPECT_TRUE(cfi.find_row(0x403008));
  EXPECT_EQ(cfi.find_row(0x402008).error().code, ErrorCode::NoEntry);
}

// The scanned index holds the FDEs that parse whole. One whose range reads but whose
// augmentation data runs past its record is left out, so a pc in that range has no entry (as
// for any pc no FDE covers), and the FDEs around it are found.
TEST(ImageCfi, ScannedIndexLeavesOutAnFdeWhoseAugmentationDataIsCut) {
  CfiBuilder eh(SectionKind::EhFrame, kEhAddr);
  const uint64_t cie = eh.cie(CieSpec{});  // zR: every FDE has augmentation data
  FdeSpec fs;
  fs.pc_begin = 0x401000;
  fs.pc_range = 0x10;
  eh.fde(cie, fs);
  fs.pc_begin = 0x402000;
  const uint64_t cut = eh.fde(cie, fs);
  fs.pc_begin = 0x403000;
  eh.fde(cie, fs);
  eh.terminator();
  // length, CIE pointer, pc_begin, pc_range: then the augmentation data's length.
  eh.patch(cut + 4 + 4 + 4 + 4, 1, 0x7f);
  ImageCfi cfi({}, eh.view(), {}, Format{}, Bases{}, Limits{});
  EXPECT_TRUE(cfi.find_row(0x401008));
  EXPECT_TRUE(cfi.find_row(0x403008));
  auto r = cfi.find_row(0x402008);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::NoEntry);
  // The record itself is refused as a whole.
  auto whole = parse_cie(SectionKind::EhFrame, eh.view(), cie, Format{}, Limits{});
  ASSERT_TRUE(whole);
  EXPECT_EQ(
      parse_fde(SectionKind::EhFrame, eh.view(), cut, *whole, Format{}, Limits{}).error().code,
      ErrorCode::Truncated);
}

// A .debug_frame given by a source (an image's separate debug file, looked up on demand) is
// asked for once, and only when .eh_frame misses: a pc .eh_frame covers never asks.
TEST(ImageCfi, DebugFrameSourceAskedOnFirstMissOnly) {
  Image img;
  CfiBuilder dbg(SectionKind::DebugFrame, 0);
  CieSpec cs;
  cs.version = 3;
  cs.augmentation = "";
  cs.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
  uint64_t cie = dbg.cie(cs);
  FdeSpec fs;
  fs.pc_begin = 0x402000;
  fs.pc_range = 0x20;
  fs.instructions = CfaOps().advance_loc(1).def_cfa_offset(16);
  dbg.fde(cie, fs);

  ImageCfi cfi(img.hdr_view(), img.eh.view(), SectionView{}, Format{}, Bases{}, Limits{});
  int asked = 0;
  cfi.set_debug_frame_source([&] {
    ++asked;
    return dbg.view();
  });
  SectionKind from = SectionKind::DebugFrame;
  ASSERT_TRUE(cfi.find_row(0x401000, &from));
  EXPECT_EQ(from, SectionKind::EhFrame);
  EXPECT_EQ(asked, 0) << "asked although .eh_frame covers the pc";
  auto r = cfi.find_row(0x402005, &from);
  ASSERT_TRUE(r) << to_string(r.error().code);
  EXPECT_EQ(from, SectionKind::DebugFrame);
  EXPECT_EQ(r->cfa.offset, 16);
  EXPECT_EQ(cfi.find_row(0x403000).error().code, ErrorCode::NoEntry);
  EXPECT_EQ(asked, 1);
}

TEST(ImageCfi, ForEachFdeOfDebugFrame) {
  CfiBuilder dbg(SectionKind::DebugFrame, 0);
  FdeSpec fs;
  fs.pc_begin = 0x500000;
  fs.pc_range = 8;
  // In .debug_frame an FDE may come before its CIE.
  CieSpec cs;
  cs.augmentation = "";
  // The builder does not know the CIE yet and writes a 'z' augmentation length (0) that the
  // real CIE does not announce: it reads as a DW_CFA_nop. Length 4 + pointer 4 + pc_begin 8 +
  // pc_range 8 + that byte = 25.
  fs.cie_pointer = 0;  // patched below
  const uint64_t f = dbg.fde(0, fs);
  const uint64_t c = dbg.cie(cs);
  ASSERT_EQ(f, 0u);
  ASSERT_EQ(c, 25u);
  dbg.patch(4, 4, c);  // point the FDE at the CIE that follows it
  int n = 0;
  ImageCfi cfi({}, {}, dbg.view(), Format{}, Bases{}, Limits{});
  cfi.for_each_fde(
      SectionKind::DebugFrame,
      [&](const Fde& fde, const Cie& cie) {
        ++n;
        EXPECT_EQ(fde.pc_begin, 0x500000u);
        EXPECT_EQ(cie.offset, 25u);
      },
      [&](const Error& e) { ADD_FAILURE() << to_string(e.code); });
  EXPECT_EQ(n, 1);
  SectionKind from = SectionKind::EhFrame;
  EXPECT_TRUE(cfi.find_row(0x500004, &from));
  EXPECT_EQ(from, SectionKind::DebugFrame);
}

TEST(ImageCfi, EmptySections) {
  ImageCfi cfi({}, {}, {}, Format{}, Bases{}, Limits{});
  EXPECT_EQ(cfi.find_row(0x1000).error().code, ErrorCode::NoEntry);
  int calls = 0;
  cfi.for_each_fde(
      SectionKind::EhFrame, [&](const Fde&, const Cie&) { ++calls; },
      [&](const Error&) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(cfi.format().address_size, 8);
}

}  // namespace
}  // namespace ehbt::dwarf
