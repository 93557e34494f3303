// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an ELF file with DWARF (Image::from_bytes), asked for
// source lines and inline chains (engine/src/lines: libdw's unit, line table and DIE readers,
// the bounded scope search) at addresses from its own segments, entry point and the input.
// The seeds are the -O2 -g programs of tests/lines_fixture (DWARF 4 and 5). Nothing may
// crash, hang, leak or read out of bounds: malformed DWARF is "no location" and a problem.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "lines/source_lookup.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  // Small caps keep each input fast; the code paths are the same.
  Limits limits;
  limits.max_symbols = 4096;
  limits.max_debug_bytes = 4u << 20;
  limits.max_line_dies = 4096;
  limits.max_inline_depth = 16;

  auto image = Image::from_bytes(std::vector<std::byte>(bytes, bytes + size), "fuzz", limits);
  if (!image) return 0;
  Module module;
  module.image = std::shared_ptr<const Image>(std::move(image.value()));
  module.path = "fuzz";

  std::vector<uint64_t> addrs = {module.image->entry(), module.image->entry() + 1, 0};
  for (const Segment& seg : module.image->segments()) {
    if (!(seg.flags & 1u)) continue;  // PF_X: where pcs are
    // A walk over the code, so that functions, inlined calls and line rows are all reached.
    const uint64_t step = seg.memsz / 32 + 1;
    for (uint64_t a = seg.vaddr; a < seg.vaddr + seg.memsz && addrs.size() < 96; a += step) {
      addrs.push_back(a);
    }
  }
  if (size >= 8) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | data[size - 8 + i];
    addrs.push_back(v);
  }
  std::string problem;
  for (uint64_t a : addrs) {
    auto info = lines::lookup_source(module, a, limits, &problem);
    if (!info) continue;
    // Every string must be readable memory.
    std::size_t sum = 0;
    if (info->location) sum += info->location->file.size();
    for (const InlinedCall& call : info->inlined) sum += call.function.size();
    (void)sum;
  }
  return 0;
}
