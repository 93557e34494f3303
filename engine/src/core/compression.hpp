// SPDX-License-Identifier: Apache-2.0
// Compressed core sources: crash spools keep cores compressed (systemd-coredump writes zstd,
// older ones xz or lz4; hand-collected ones are often gzip). The format is told by the
// stream's magic bytes, never by the file name, since spools and users rename freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/sparse_sink.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::core {

enum class Compression { None, Zstd, Xz, Lz4, Gzip };

// The format whose magic starts `head`; None for anything else (a plain ELF core included).
Compression detect_compression(std::span<const std::byte> head);
const char* compression_name(Compression c);  // "zstd", "xz", "lz4", "gzip"

// Decodes the whole of `in` (one or more concatenated streams of `format`) into `out`.
// Errors say what went wrong and how many bytes were recovered before it.
Expected<void, std::string> decompress(Compression format, std::span<const std::byte> in,
                                       SparseSink& out, const Limits& limits);

// One decoder per format, each in its own file.
Expected<void, std::string> decompress_zstd(std::span<const std::byte> in, SparseSink& out,
                                            const Limits& limits);
Expected<void, std::string> decompress_xz(std::span<const std::byte> in, SparseSink& out,
                                          const Limits& limits);
Expected<void, std::string> decompress_lz4(std::span<const std::byte> in, SparseSink& out,
                                           const Limits& limits);
Expected<void, std::string> decompress_gzip(std::span<const std::byte> in, SparseSink& out,
                                            const Limits& limits);

// Decoders hand out this much at a time; the sink batches it into whole blocks.
inline constexpr std::size_t kDecodeChunk = 1u << 20;

}  // namespace ehbt::core
