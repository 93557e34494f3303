// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: an .eh_frame_hdr + .eh_frame pair at fixed link-time addresses, as a
// loader would find them through PT_GNU_EH_FRAME. The first two bytes choose where the input
// splits into the two sections; the third picks byte order / address size; the next two put
// .eh_frame that many 16-byte units after the header's end (seeds cut from real files keep
// their relative pointers valid that way). The table's
// binary search (find_row) is probed at pcs taken from the input and from the FDEs the walk
// finds, then the whole section is walked. Nothing may crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "dwarf/cfi.hpp"

namespace {

constexpr uint64_t kHdrAddr = 0x400000;

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  using namespace ehbt::dwarf;
  if (size < 5) return 0;
  const size_t split_hint = static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8);
  const uint8_t flags = data[2];
  const uint64_t gap =
      16 * (static_cast<uint64_t>(data[3]) | (static_cast<uint64_t>(data[4]) << 8));
  data += 5;
  size -= 5;
  const size_t split = split_hint % (size + 1);
  const uint64_t eh_frame_addr = kHdrAddr + split + gap;

  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  const SectionView hdr{kHdrAddr, std::span<const std::byte>(bytes, split)};
  const SectionView eh_frame{eh_frame_addr,
                             std::span<const std::byte>(bytes + split, size - split)};

  Format fmt;
  fmt.big_endian = (flags & 1) != 0;
  fmt.address_size = (flags & 2) != 0 ? 4 : 8;
  // Small caps keep each input fast; the code paths are the same.
  Limits limits;
  limits.max_cfi_instructions = 2000;
  limits.max_index_entries = 4096;
  limits.max_record_bytes = 1 << 16;
  IndirectReader indirect = [](uint64_t addr) -> std::optional<uint64_t> {
    if ((addr & 7) == 0) return addr + 0x40;  // some pointer cells readable, some not
    return std::nullopt;
  };
  ImageCfi cfi(hdr, eh_frame, SectionView{}, fmt, Bases{0x401000, 0x600000}, limits, indirect);

  // Probes from the input itself (its last bytes) and around the fixed addresses.
  uint64_t probes[8] = {0, kHdrAddr, eh_frame_addr + 0x1000, ~uint64_t{0}, 0, 0, 0, 0};
  if (size >= 16) {
    probes[4] = load_le64(data + size - 8);
    probes[5] = load_le64(data + size - 16);
  }
  for (uint64_t pc : probes) {
    SectionKind from = SectionKind::EhFrame;
    (void)cfi.find_row(pc, &from, false);
  }
  // The table on its own, the way the loader's lookup uses it.
  auto parsed = EhFrameHdr::parse(hdr, fmt, limits, indirect);
  if (parsed) {
    const uint64_t n = parsed->count() < 8 ? parsed->count() : 8;
    for (uint64_t i = 0; i < n; ++i) {
      auto e = parsed->entry(i);
      if (e) {
        (void)parsed->lookup_entry(e->initial_loc);
        (void)cfi.find_row(e->initial_loc, nullptr, false);
      }
    }
  }
  unsigned found = 0;
  uint64_t fde_pcs[4] = {0, 0, 0, 0};
  cfi.for_each_fde(
      SectionKind::EhFrame,
      [&](const Fde& fde, const Cie&) {
        if (found < 4) fde_pcs[found++] = fde.pc_begin + (fde.pc_end - fde.pc_begin) / 2;
      },
      [](const Error&) {});
  for (unsigned i = 0; i < found; ++i) {
    auto row = cfi.find_row_ref(fde_pcs[i], nullptr, false);
    if (row) {
      for (uint8_t r = 0; r < (*row)->num_rules; ++r) {
        for (std::byte b : (*row)->rules[r].rule.expr) (void)b;
      }
    }
  }
  return 0;
}
