// SPDX-License-Identifier: Apache-2.0
// zstd (systemd-coredump's default): one or more frames, decoded with a bounded window.
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "core/compression.hpp"

namespace ehbt::core {

Expected<void, std::string> decompress_zstd(std::span<const std::byte> in, SparseSink& out,
                                            const Limits& limits) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return unexpected(std::string("zstd: out of memory"));
  // The window is the decoder's memory: refuse frames that would need more than the cap.
  const uint64_t mem = std::max<uint64_t>(limits.max_decompressor_memory, 1u << 20);
  // 31 is zstd's largest window on 64-bit hosts (ZSTD_WINDOWLOG_MAX_64, a static-only name).
  const int window_log = std::min(static_cast<int>(std::bit_width(mem)) - 1, 31);
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, window_log);

  std::vector<std::byte> buf(kDecodeChunk);
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t pending = 0;  // nonzero while a frame is incomplete
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    pending = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(pending)) {
      return unexpected("corrupt zstd stream at input byte " + std::to_string(input.pos) + ": " +
                        ZSTD_getErrorName(pending) + " (" + std::to_string(out.size()) +
                        " bytes recovered)");
    }
    if (auto r = out.write({buf.data(), output.pos}); !r) return r;
  }
  // Flush what the decoder still holds once the input is consumed.
  while (pending != 0) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    pending = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(pending)) {
      return unexpected("corrupt zstd stream: " + std::string(ZSTD_getErrorName(pending)) + " (" +
                        std::to_string(out.size()) + " bytes recovered)");
    }
    if (auto r = out.write({buf.data(), output.pos}); !r) return r;
    if (output.pos == 0) break;  // no progress without more input: the stream is cut short
  }
  if (pending != 0) {
    return unexpected("truncated zstd stream (" + std::to_string(out.size()) + " bytes recovered)");
  }
  return {};
}

}  // namespace ehbt::core
