// SPDX-License-Identifier: Apache-2.0
// Internal: a record's framing without judging its CIE pointer, for section walkers that must
// step over a bad FDE to reach the next record.
#pragma once

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

}  // namespace ehbt::dwarf
