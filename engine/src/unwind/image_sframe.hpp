// SPDX-License-Identifier: Apache-2.0
// An image's SFrame tables as the step loop sees them: the native .sframe (section or
// PT_GNU_SFRAME, located by the ELF layer) and, for --sframe-from-eh-frame, tables converted
// from the image's .eh_frame in memory, one per SFrame version. Every table is built on first
// use; a table found corrupt (parse error, or a lookup error other than "not covered") is
// dropped and never parsed again, and the reason is kept for stop details.
//
// Converted tables go the whole way a file's table would: convert_cfi -> encode -> the real
// reader (Table::parse) over the owned bytes, so `--source sframe --sframe-from-eh-frame`
// exercises the reader on every module of a core.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dwarf/cfi.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::unwind {

// One parsed SFrame table and a direct-mapped cache of the rows looked up in it (a Table
// decodes a whole function per lookup; a warm walk must not). Rows are keyed by the exact
// link-time pc, so the cache never depends on how a row's [start, end) is set for
// PC-mask functions.
class SFrameRows {
 public:
  // `owned`: the section bytes when they belong to this object (a converted table).
  SFrameRows(sframe::Table table, std::vector<std::byte> owned);
  SFrameRows(const SFrameRows&) = delete;
  SFrameRows& operator=(const SFrameRows&) = delete;

  // The row covering link-time `pc`, by pointer into the cache: valid until the next find().
  Expected<const dwarf::Row*, sframe::Error> find(uint64_t pc);
  const sframe::Table& table() const { return table_; }

 private:
  static constexpr std::size_t kSlotBits = 7;
  static constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
  struct Cached {
    uint64_t pc = 0;
    dwarf::Row row;
  };

  std::vector<std::byte> owned_;  // before table_: the table points into it
  sframe::Table table_;
  // slot -> 1 + index into rows_ (0: empty). Rows are allocated as slots fill, so a module a
  // walk passes once costs one row, not the whole cache.
  std::array<uint16_t, kSlots> slot_index_{};
  std::vector<Cached> rows_;
};

// What a lookup found.
struct SFrameLookup {
  enum class Status : uint8_t {
    Found,        // `row` is set
    NotCovered,   // the table has no function for the pc
    NoTable,      // no table (none in the image, nothing converted, or dropped before)
    Dropped,      // the table was found corrupt by this lookup and is now dropped
    Unsupported,  // the function is valid but uses what the reader does not evaluate: the
                  // table stays, this pc has no row (`error` says where)
  };
  Status status = Status::NoTable;
  const dwarf::Row* row = nullptr;
  sframe::Error error;  // Unsupported
};

class ImageSFrame {
 public:
  // `image` and `cfi` must outlive this object (both live in the image's cache slot).
  ImageSFrame(const Image& image, dwarf::ImageCfi& cfi, const Limits& limits);
  ImageSFrame(const ImageSFrame&) = delete;
  ImageSFrame& operator=(const ImageSFrame&) = delete;

  // The row for link-time `pc` from the native table, or with `converted` from the table
  // converted to `version` (2 or 3).
  SFrameLookup find_row(uint64_t pc, bool converted, uint8_t version);

  // Why there is no table to search (stop details): "the module has no .sframe", "its
  // .sframe was dropped: bad_fre at 0x40", ... Empty while the table is usable.
  std::string why_no_table(bool converted, uint8_t version) const;
  // The error that dropped the table, if it was dropped.
  std::optional<sframe::Error> drop_error(bool converted, uint8_t version) const;
  // For a converted table: why the converter left out the function covering link-time `pc`
  // ("CFA is an expression (DRAP): needs V3 (row at 0x1234)"), if it did.
  std::optional<std::string> inexpressible_reason(uint64_t pc, uint8_t version);
  // The converter's report for `version` (building the table if needed); null when the
  // version is not 2 or 3. For tests and tools.
  const std::vector<sframe::Inexpressible>* inexpressible(uint8_t version);

 private:
  struct Slot {
    enum class State : uint8_t { Unbuilt, Ready, Absent, Dropped };
    State state = State::Unbuilt;
    std::unique_ptr<SFrameRows> rows;                  // Ready
    std::string absent_why;                            // Absent
    sframe::Error error;                               // Dropped
    std::vector<sframe::Inexpressible> inexpressible;  // converted: sorted by function
  };

  // Null for a version other than 2 or 3.
  Slot* slot(bool converted, uint8_t version);
  const Slot* slot(bool converted, uint8_t version) const;
  // Builds the slot's table on first use.
  Slot& ready(Slot& s, bool converted, uint8_t version);
  void build_native(Slot& s);
  void build_converted(Slot& s, uint8_t version);

  const Image& image_;
  dwarf::ImageCfi& cfi_;
  Limits limits_;
  Slot native_;
  std::array<Slot, 2> converted_;  // V2, V3
};

}  // namespace ehbt::unwind
