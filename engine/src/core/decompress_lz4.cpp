// SPDX-License-Identifier: Apache-2.0
// lz4 frame format (older systemd-coredump): concatenated frames, 4 MiB blocks at most.
#include <lz4frame.h>

#include <memory>
#include <vector>

#include "core/compression.hpp"

namespace ehbt::core {

Expected<void, std::string> decompress_lz4(std::span<const std::byte> in, SparseSink& out,
                                           const Limits&) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return unexpected(std::string("lz4: cannot start the decoder"));
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> dctx(
      raw, LZ4F_freeDecompressionContext);

  std::vector<std::byte> buf(kDecodeChunk);
  std::size_t pos = 0;
  std::size_t hint = 1;  // 0 once a frame is complete
  // Each call consumes input or produces output; a call doing neither means the frame needs
  // bytes the input does not have.
  while (pos < in.size()) {
    std::size_t out_size = buf.size();
    std::size_t in_size = in.size() - pos;
    hint = LZ4F_decompress(dctx.get(), buf.data(), &out_size, in.data() + pos, &in_size, nullptr);
    if (LZ4F_isError(hint)) {
      return unexpected("corrupt lz4 stream at input byte " + std::to_string(pos) + ": " +
                        LZ4F_getErrorName(hint) + " (" + std::to_string(out.size()) +
                        " bytes recovered)");
    }
    pos += in_size;
    if (auto r = out.write({buf.data(), out_size}); !r) return r;
    if (in_size == 0 && out_size == 0) break;
  }
  // Output the decoder still buffers once every input byte is in.
  while (hint != 0) {
    std::size_t out_size = buf.size();
    std::size_t in_size = 0;
    hint = LZ4F_decompress(dctx.get(), buf.data(), &out_size, nullptr, &in_size, nullptr);
    if (LZ4F_isError(hint)) break;
    if (auto r = out.write({buf.data(), out_size}); !r) return r;
    if (out_size == 0) break;
  }
  if (hint != 0) {
    return unexpected("truncated lz4 stream (" + std::to_string(out.size()) + " bytes recovered)");
  }
  return {};
}

}  // namespace ehbt::core
