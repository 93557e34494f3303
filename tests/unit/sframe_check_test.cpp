// SPDX-License-Identifier: Apache-2.0
// The checker on a hand-made .eh_frame and a hand-made .sframe that disagree in known
// places: each disagreement is found at its pc with both sides named; agreeing rows,
// rules for other registers and the outermost frame's CFA are not disagreements; functions
// only one side has are counted.
#include <gtest/gtest.h>

#include "dwarf/cfi.hpp"
#include "sframe/sframe.hpp"
#include "support/cfi_builder.hpp"
#include "support/sframe_bytes.hpp"

namespace ehbt::sframe {
namespace {

using test::CfaOps;
using test::SframeHeader;
using test::SframeSink;

constexpr uint64_t kSection = 0x1000;

struct Pair {
  test::CfiBuilder eh{dwarf::SectionKind::EhFrame, 0x10000};
  std::vector<std::byte> sframe;
};

Pair make() {
  Pair p;
  test::CieSpec cie;
  cie.instructions = CfaOps().def_cfa(7, 8).offset(16, 1);
  const uint64_t c = p.eh.cie(cie);
  test::FdeSpec f;
  // 0x2000: push rbp (@1: CFA rsp+16, rbp at CFA-16), @4: rbx saved, @6: RA moved to CFA-16
  // (no real code does this; it is here to disagree), 0x20 bytes.
  f.pc_begin = 0x2000;
  f.pc_range = 0x20;
  f.instructions = CfaOps()
                       .advance_loc(1)
                       .def_cfa_offset(16)
                       .offset(6, 2)
                       .advance_loc(3)
                       .offset(3, 3)
                       .advance_loc(2)
                       .offset(16, 2);
  p.eh.fde(c, f);
  // 0x3000: _start, RA undefined, CFA rsp+8.
  f.pc_begin = 0x3000;
  f.pc_range = 0x10;
  f.instructions = CfaOps().undefined(16);
  p.eh.fde(c, f);
  // 0x4000: only in .eh_frame.
  f.pc_begin = 0x4000;
  f.pc_range = 0x10;
  f.instructions = CfaOps();
  p.eh.fde(c, f);
  p.eh.terminator();

  SframeSink fdes, fres;
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x2000, 0, kSection), 0x20, 0, 3, 0);
  fres.bytes({0, 0x03, 8});
  fres.bytes({1, 0x05, 24, -16});  // CFA wrong (24, not 16)
  fres.bytes({2, 0x05, 16, -24});  // CFA right again, FP wrong
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x3000, 1, kSection), 0x10, 11, 1, 0);
  fres.bytes({0, 0x00});  // outermost: no CFA word at all
  test::put_v2_fde(fdes, test::v2_pcrel_start(0x5000, 2, kSection), 0x10, 13, 1,
                   0);  // only in .sframe
  fres.bytes({0, 0x03, 8});
  SframeHeader h;
  h.num_fdes = 3;
  h.num_fres = 5;
  p.sframe = test::assemble(h, fdes, fres);
  return p;
}

TEST(SframeCheck, FindsEachDisagreement) {
  Pair p = make();
  dwarf::ImageCfi cfi({}, p.eh.view(), {}, p.eh.format(), {}, Limits{});
  auto table = Table::parse(p.sframe, kSection, Limits{});
  ASSERT_TRUE(table.has_value());
  CheckReport r = check_against_cfi(*table, cfi, Limits{});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.functions, 3u);
  EXPECT_EQ(r.sframe_only, 1u);    // 0x5000
  EXPECT_EQ(r.eh_frame_only, 1u);  // 0x4000
  // Row starts in 0x2000: 0x2000, 0x2001, 0x2002 (.sframe), 0x2004, 0x2006 (.eh_frame);
  // 0x3000: one.
  EXPECT_EQ(r.rows, 6u);
  std::vector<std::pair<uint64_t, std::string>> got;
  for (const Disagreement& d : r.disagreements) {
    EXPECT_EQ(d.function, 0x2000u);
    got.emplace_back(d.pc, d.what);
  }
  const std::vector<std::pair<uint64_t, std::string>> want = {
      {0x2001, "CFA: sframe sp+24, eh_frame sp+16"}, {0x2002, "FP: sframe c-24, eh_frame c-16"},
      {0x2004, "FP: sframe c-24, eh_frame c-16"},    {0x2006, "FP: sframe c-24, eh_frame c-16"},
      {0x2006, "RA: sframe c-8, eh_frame c-16"},
  };
  EXPECT_EQ(got, want);
}

TEST(SframeCheck, AgreeingSectionsHaveNoDisagreement) {
  Pair p = make();
  dwarf::ImageCfi cfi({}, p.eh.view(), {}, p.eh.format(), {}, Limits{});
  Conversion conv = convert_cfi(cfi, Arch::X86_64, 2, Limits{});
  // The disagreeing RA row of 0x2000 is not expressible in V2 (RA off its fixed slot).
  ASSERT_EQ(conv.inexpressible.size(), 1u);
  EXPECT_EQ(conv.inexpressible[0].pc, 0x2006u);
  auto bytes = encode(conv, kSection);
  ASSERT_TRUE(bytes.has_value());
  auto table = Table::parse(*bytes, kSection, Limits{});
  ASSERT_TRUE(table.has_value());
  CheckReport r = check_against_cfi(*table, cfi, Limits{});
  EXPECT_TRUE(r.disagreements.empty());
  EXPECT_EQ(r.functions, 2u);
  EXPECT_EQ(r.eh_frame_only, 1u);
  EXPECT_EQ(r.sframe_only, 0u);
}

TEST(SframeCheck, CorruptFunctionIsAnError) {
  Pair p = make();
  // The first FRE's info byte gets the invalid word size 3.
  const std::size_t first_fre = 28 + 3 * 20;
  p.sframe[first_fre + 1] = std::byte{0x63};
  dwarf::ImageCfi cfi({}, p.eh.view(), {}, p.eh.format(), {}, Limits{});
  auto table = Table::parse(p.sframe, kSection, Limits{});
  ASSERT_TRUE(table.has_value());
  CheckReport r = check_against_cfi(*table, cfi, Limits{});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].code, ErrorCode::BadFre);
  EXPECT_EQ(r.errors[0].where, first_fre);
  EXPECT_EQ(r.functions, 2u);
}

}  // namespace
}  // namespace ehbt::sframe
