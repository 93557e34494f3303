// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an ELF file (Image::from_bytes, section headers first)
// and as target memory holding an ELF image (Image::from_memory, the program-header path the
// kernel uses). Each image that loads is then asked for symbols and link-time reads at
// addresses from its own segments, entry point and the input. Nothing may crash, hang, leak
// or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"

namespace {

constexpr uint64_t kLoadAddr = 0x7f0000000000;

void exercise(const ehbt::Image& image, const uint8_t* data, size_t size) {
  std::vector<uint64_t> addrs = {image.entry(), image.min_vaddr(), 0, ~uint64_t{0}};
  for (const ehbt::Segment& seg : image.segments()) {
    if (addrs.size() >= 16) break;
    addrs.push_back(seg.vaddr);
    addrs.push_back(seg.vaddr + seg.memsz / 2);
    addrs.push_back(seg.vaddr + seg.memsz - 1);
  }
  if (size >= 8) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | data[size - 8 + i];
    addrs.push_back(v);
  }
  std::byte buf[64];
  for (uint64_t a : addrs) {
    (void)image.symbolize(a);
    (void)image.read(a, buf);
    (void)image.is_executable(a);
  }
  // Section spans must lie in memory the image owns: touch every byte.
  for (ehbt::SectionRef s : {image.eh_frame_hdr(), image.eh_frame(), image.debug_frame(),
                             image.sframe(), image.dynamic()}) {
    uint8_t sum = 0;
    for (std::byte b : s.bytes) sum = static_cast<uint8_t>(sum + std::to_integer<uint8_t>(b));
    (void)sum;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  // Small caps keep each input fast; the code paths are the same.
  Limits limits;
  limits.max_symbols = 4096;
  limits.max_image_bytes = 4u << 20;

  auto from_file = Image::from_bytes(std::vector<std::byte>(bytes, bytes + size), "fuzz", limits);
  if (from_file) exercise(**from_file, data, size);

  BufferMemory mem;
  mem.add(kLoadAddr, std::span<const std::byte>(bytes, size));
  auto from_mem = Image::from_memory(mem, kLoadAddr, "fuzz-mem", limits);
  if (from_mem) exercise(**from_mem, data, size);
  return 0;
}
