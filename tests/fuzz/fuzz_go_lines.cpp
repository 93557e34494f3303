// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Go source lines (elf/go_lines.hpp) over a .gopclntab and the go:func.*
// bytes its inline trees live in. The first two bytes (little-endian) say where the input
// splits into the table (parsed with .text at 0x1000) and the inline tree data (read at
// 0x9000, moduledata.gofunc). Lookups run at every function's entry, last byte and a pc picked
// by the input, for up to 64 functions spread over the table. Nothing may crash, hang, loop
// or read out of bounds; an answer must hold an inline chain no deeper than the cap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "elf/go_lines.hpp"

namespace {

constexpr uint64_t kText = 0x1000;
constexpr uint64_t kGofunc = 0x9000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  using namespace ehbt::elf;
  if (size < 2) return 0;
  const size_t split =
      (static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8)) % (size - 1);
  const auto* bytes = reinterpret_cast<const std::byte*>(data + 2);
  const std::span<const std::byte> table_bytes(bytes, split);
  const std::span<const std::byte> tree(bytes + split, size - 2 - split);
  auto table = GoPclntab::parse(table_bytes, kText);
  if (!table) return 0;
  const GoInlineTrees trees{kGofunc, [tree](uint64_t addr, std::span<std::byte> out) {
                              if (addr < kGofunc || addr - kGofunc >= tree.size()) return size_t{0};
                              const size_t at = addr - kGofunc;
                              const size_t n = std::min(out.size(), tree.size() - at);
                              std::memcpy(out.data(), tree.data() + at, n);
                              return n;
                            }};
  Limits limits;
  limits.max_go_pcvalue_steps = 4096;
  limits.max_go_inline_depth = 16;
  const uint64_t funcs = std::min<uint64_t>(table->size(), 1u << 20);
  const uint64_t stride = std::max<uint64_t>(1, funcs / 64);
  const uint64_t pick = size >= 4 ? (data[size - 1] | (uint64_t{data[size - 2]} << 8)) : 0;
  for (uint64_t i = 0; i < funcs; i += stride) {
    auto f = table->func(i);
    if (!f) continue;
    const uint64_t len = f->end - f->entry;
    const uint64_t pcs[] = {f->entry, f->end - 1, f->entry + (len == 0 ? 0 : pick % len)};
    for (uint64_t pc : pcs) {
      for (const auto& t : {std::optional<GoInlineTrees>(trees), std::optional<GoInlineTrees>()}) {
        auto info = go_source_info(*table, t, pc, limits);
        if (info && info->inlined.size() > limits.max_go_inline_depth) std::abort();
      }
    }
  }
  return 0;
}
