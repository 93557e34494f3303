// SPDX-License-Identifier: Apache-2.0
// Decompresses .gnu_debugdata (xz) into an owned ELF image.
#include "elf/minidebuginfo.hpp"

#include <lzma.h>

#include <vector>

namespace ehbt::elf {

std::shared_ptr<Image> open_minidebuginfo(std::span<const std::byte> section,
                                          const Limits& limits) {
  if (section.empty()) return nullptr;
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, limits.max_decompressor_memory, LZMA_CONCATENATED) != LZMA_OK) {
    return nullptr;
  }
  std::vector<std::byte> out;
  strm.next_in = reinterpret_cast<const uint8_t*>(section.data());
  strm.avail_in = section.size();
  lzma_ret ret = LZMA_OK;
  // Grow the output a chunk at a time up to the cap: the stream states no reliable size.
  constexpr std::size_t kChunk = 64u << 10;
  while (ret == LZMA_OK) {
    if (out.size() >= limits.max_image_bytes) break;
    const std::size_t have = out.size();
    out.resize(std::min<std::size_t>(have + kChunk, limits.max_image_bytes));
    strm.next_out = reinterpret_cast<uint8_t*>(out.data() + have);
    strm.avail_out = out.size() - have;
    ret = lzma_code(&strm, LZMA_FINISH);
    out.resize(out.size() - strm.avail_out);
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) return nullptr;
  auto img = Image::from_bytes(std::move(out), ".gnu_debugdata", limits);
  if (!img) return nullptr;
  return std::move(img.value());
}

}  // namespace ehbt::elf
