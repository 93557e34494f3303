// SPDX-License-Identifier: Apache-2.0
// The few DWARF expressions that SFrame can still say, recognised byte for byte: a register
// plus an offset (optionally dereferenced, gcc's DRAP CFA), and glibc's x86-64 PLT CFA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ehbt::sframe {

struct RegPlusOffset {
  uint16_t reg = 0;
  int64_t offset = 0;
};

// DW_OP_breg<r> off / DW_OP_bregx r off, and nothing else.
std::optional<RegPlusOffset> match_breg(std::span<const std::byte> expr);
// DW_OP_breg<r> off; DW_OP_deref (CFA = the value stored at r + off).
std::optional<RegPlusOffset> match_breg_deref(std::span<const std::byte> expr);

// The x86-64 PLT CFA: rsp + sp_offset, plus 8 once (rip & 15) >= threshold (the push of the
// entry's index has run):
//   DW_OP_breg7 sp_offset; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit<threshold>;
//   DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
struct PltCfa {
  int64_t sp_offset = 0;
  uint8_t threshold = 0;
};
std::optional<PltCfa> match_plt_cfa(std::span<const std::byte> expr);
// Bytes of one PLT entry, the block a PCMASK function repeats.
inline constexpr uint8_t kPltEntrySize = 16;

}  // namespace ehbt::sframe
