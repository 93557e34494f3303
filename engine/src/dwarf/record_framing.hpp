// SPDX-License-Identifier: Apache-2.0
// Internal: a record's framing without judging its CIE pointer, for section walkers that must
// step over a bad FDE to reach the next record.
#pragma once

#include <optional>

#include "dwarf/cfi.hpp"

namespace ehbt::dwarf {

// Like parse_record_header, but an FDE whose CIE pointer is unusable still comes back (with
// `cie_ok` false) so the walk can continue at `end`.
struct RecordFraming {
  RecordHeader header;
  bool cie_ok = true;
};
Expected<RecordFraming, Error> parse_record_framing(SectionKind kind, SectionView section,
                                                    uint64_t offset, Format fmt,
                                                    const Limits& limits);

// The [pc_begin, pc_end) of the FDE framed by `h` (an FDE of `cie`), as parse_fde reads them,
// without its augmentation data or instructions: what indexing a section needs of each FDE.
struct FdeRange {
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;
};
Expected<FdeRange, Error> parse_fde_range(SectionKind kind, SectionView section,
                                          const RecordHeader& h, const Cie& cie, Format fmt,
                                          const Bases& bases, const IndirectReader& indirect);

// The FDE at `offset` of .debug_frame read in place when it is of the common kind: a 32-bit
// record whose CIE pointer is `cie.offset`, of a CIE without augmentation or segment selector
// (what GCC, Clang and Go's linker write). Its end and range are what parse_record_framing and
// parse_fde_range give for it; anything else (a CIE, a 64-bit, short or malformed record,
// another CIE, a range that wraps) is nullopt, for the caller to read the general way. An index
// of a Go binary's .debug_frame reads 1,200 FDEs per run, 290 instructions each in general.
struct CommonFde {
  uint64_t end = 0;
  FdeRange range;
};
std::optional<CommonFde> common_debug_fde(SectionView section, uint64_t offset, const Cie& cie,
                                          Format fmt, const Limits& limits);

}  // namespace ehbt::dwarf
