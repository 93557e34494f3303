// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an .eh_frame section (and, from the first byte's bits,
// as .debug_frame, big-endian, or 4-byte addresses). Every FDE the walk yields is evaluated
// row by row, and a few lookups go through the scanned index and the row cache. Nothing may
// crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "dwarf/cfi.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  using namespace ehbt::dwarf;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);

  Format fmt;
  fmt.big_endian = (flags & 1) != 0;
  fmt.address_size = (flags & 2) != 0 ? 4 : 8;
  const SectionKind kind = (flags & 4) != 0 ? SectionKind::DebugFrame : SectionKind::EhFrame;
  // Small caps keep each input fast; the code paths are the same.
  Limits limits;
  limits.max_cfi_instructions = 2000;
  limits.max_index_entries = 4096;
  limits.max_record_bytes = 1 << 16;

  const SectionView section{0x10000, bytes};
  const SectionView empty{};
  IndirectReader indirect = [](uint64_t addr) -> std::optional<uint64_t> {
    if ((addr & 7) == 0) return addr ^ 0x5a5a;  // some cells readable, some not
    return std::nullopt;
  };
  ImageCfi cfi(empty, kind == SectionKind::EhFrame ? section : empty,
               kind == SectionKind::DebugFrame ? section : empty, fmt, Bases{0x1000, 0x2000},
               limits, indirect);

  uint64_t probe_pcs[4] = {0, 0, 0, 0};
  unsigned n = 0;
  cfi.for_each_fde(
      kind,
      [&](const Fde& fde, const Cie& cie) {
        if (n < 4) probe_pcs[n++] = fde.pc_begin + (fde.pc_end - fde.pc_begin) / 2;
        (void)for_each_row(cie, fde, fmt, limits, [](const Row& row) {
          // Touch every rule so sanitizers see any bad span.
          for (uint8_t i = 0; i < row.num_rules; ++i) {
            for (std::byte b : row.rules[i].rule.expr) (void)b;
          }
          for (std::byte b : row.cfa.expr) (void)b;
        });
      },
      [](const Error&) {});
  for (unsigned i = 0; i < n; ++i) {
    (void)cfi.find_row(probe_pcs[i]);
    (void)cfi.find_row(probe_pcs[i]);  // cached
  }
  return 0;
}
