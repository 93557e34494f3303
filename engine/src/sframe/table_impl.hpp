// SPDX-License-Identifier: Apache-2.0
// The parsed state of an .sframe section, shared by the header parser, the function decoder
// and the lookup (table.cpp, decode_function.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "sframe/sframe.hpp"

namespace ehbt::sframe {

// One FDE's fixed part: what a binary search needs, plus (V2) what the FDE itself holds.
struct FdeIndex {
  uint64_t offset = 0;    // section offset of the FDE (of its index entry in V3)
  uint64_t start = 0;     // link-time function start
  uint32_t size = 0;      // function size
  uint32_t fre_off = 0;   // from the start of the FRE sub-section
  uint32_t num_fres = 0;  // V2 only (V3 keeps it with the attributes)
  uint8_t info = 0;       // V2 only
  uint8_t rep_size = 0;   // V2 only
};

struct Table::Impl {
  std::span<const std::byte> bytes;
  uint64_t section_addr = 0;
  Limits limits;
  Header header;
  bool big_endian = false;
  Arch arch = Arch::X86_64;
  uint64_t fde_begin = 0;  // section offset of the FDE sub-section
  uint32_t fde_size = 0;   // bytes per FDE (V2) or index entry (V3)
  uint64_t fre_begin = 0;  // section offset of the FRE sub-section
  uint64_t fre_end = 0;    // just past it

  // FDE `i` (< num_fdes; the header check made the whole array fit).
  FdeIndex index(uint32_t i) const;
  // How many FREs FDE `i` says it has (V3: from its attributes; 0 when they are not in the
  // FRE sub-section).
  uint32_t claimed_fres(uint32_t i) const;
  // FDE `i` with all its FREs, checked completely.
  Expected<Function, Error> decode(uint32_t i) const;
};

}  // namespace ehbt::sframe
