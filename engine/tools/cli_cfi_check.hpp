// SPDX-License-Identifier: Apache-2.0
// `ehbt cfi`: every row of every FDE of an image evaluated and classified, and single-row
// lookups by pc. The rendering lives in cli_cfi_render.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwarf/cfi.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::cli {

struct CfiIssue {
  dwarf::SectionKind section = dwarf::SectionKind::EhFrame;
  std::optional<uint64_t> fde_offset;  // absent for an error on a record as a whole
  // The first address of the row at fault (for "row": of the row the walk was building).
  std::optional<uint64_t> pc;
  // "record": the CIE/FDE itself; "row": the walk over its instructions stopped; "cfa" or a
  // register's name: that rule's expression.
  std::string what;
  dwarf::Error error;
  bool unsupported = false;  // false: malformed
};

struct CfiCheck {
  uint64_t fdes = 0;
  uint64_t rows = 0;
  uint64_t unsupported = 0;
  uint64_t malformed = 0;
  bool eh_frame_bad = false;
  bool debug_frame_bad = false;
  // Which unwind sections the file has (a section of size 0 counts as absent): a file with
  // neither DWARF section has nothing to check, which the report says rather than a bare 0.
  bool has_eh_frame = false;
  bool has_debug_frame = false;
  bool has_sframe = false;
  std::vector<CfiIssue> details;  // at most kMaxDetails; the counts go on counting
  bool details_truncated = false;
};
inline constexpr std::size_t kMaxDetails = 1000;

// True when the file has neither .eh_frame nor .debug_frame: nothing to unwind its code with
// (`ehbt cfi` exits 1). Sections that hold no FDE (a data-only library's linker-made
// .eh_frame) are only noted: nothing in them is wrong.
bool no_unwind_tables(const CfiCheck& c);
// True when the sections there are hold no FDE.
bool no_fdes(const CfiCheck& c);

// How a dry run of an expression, or a row evaluation, counts.
enum class Verdict { Ok, Unsupported, Malformed };
// Unsupported -> Unsupported. Division by zero and memory faults depend on the values a real
// target supplies, so a dry run cannot hold them against the bytes: Ok. Anything else means
// the bytes are wrong or exceed a cap: Malformed.
Verdict classify(dwarf::ErrorCode code);

// Walks .eh_frame then .debug_frame: every FDE (for_each_fde), every row (for_each_row), and
// every DWARF expression in a row's CFA or register rules evaluated once against made-up
// registers and memory so the expression VM says whether it would run it. A row counts once:
// as malformed if any part is, else as unsupported if any part is.
CfiCheck check_cfi(const Image& image, const Limits& limits);

struct RowLookup {
  uint64_t pc = 0;
  std::optional<dwarf::Error> error;  // set: no row (the other fields are meaningless)
  dwarf::SectionKind section = dwarf::SectionKind::EhFrame;
  dwarf::Fde fde;
  dwarf::Cie cie;
  dwarf::Row row;
};

// The row that covers each pc (.eh_frame first, then .debug_frame), as evaluate_row gives it.
std::vector<RowLookup> lookup_rows(dwarf::ImageCfi& cfi, std::span<const uint64_t> pcs,
                                   const Limits& limits);

}  // namespace ehbt::cli
