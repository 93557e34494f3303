// SPDX-License-Identifier: Apache-2.0
// Telling compressed cores by their magic, and handing them to the right decoder.
#include "core/compression.hpp"

#include <array>
#include <cstring>

namespace ehbt::core {
namespace {

template <std::size_t N>
bool starts_with(std::span<const std::byte> head, const std::array<uint8_t, N>& magic) {
  return head.size() >= N && std::memcmp(head.data(), magic.data(), N) == 0;
}

constexpr std::array<uint8_t, 4> kZstd{0x28, 0xb5, 0x2f, 0xfd};
constexpr std::array<uint8_t, 6> kXz{0xfd, '7', 'z', 'X', 'Z', 0x00};
constexpr std::array<uint8_t, 4> kLz4Frame{0x04, 0x22, 0x4d, 0x18};
// gzip's magic plus its only defined method (deflate), so random bytes rarely match.
constexpr std::array<uint8_t, 3> kGzip{0x1f, 0x8b, 0x08};

}  // namespace

Compression detect_compression(std::span<const std::byte> head) {
  if (starts_with(head, kZstd)) return Compression::Zstd;
  if (starts_with(head, kXz)) return Compression::Xz;
  if (starts_with(head, kLz4Frame)) return Compression::Lz4;
  if (starts_with(head, kGzip)) return Compression::Gzip;
  return Compression::None;
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::Zstd:
      return "zstd";
    case Compression::Xz:
      return "xz";
    case Compression::Lz4:
      return "lz4";
    case Compression::Gzip:
      return "gzip";
    case Compression::None:
      break;
  }
  return "uncompressed";
}

Expected<void, std::string> decompress(Compression format, std::span<const std::byte> in,
                                       SparseSink& out, const Limits& limits) {
  switch (format) {
    case Compression::Zstd:
      return decompress_zstd(in, out, limits);
    case Compression::Xz:
      return decompress_xz(in, out, limits);
    case Compression::Lz4:
      return decompress_lz4(in, out, limits);
    case Compression::Gzip:
      return decompress_gzip(in, out, limits);
    case Compression::None:
      break;
  }
  return unexpected(std::string("not a compressed stream"));
}

}  // namespace ehbt::core
