// SPDX-License-Identifier: Apache-2.0
// xz (older systemd-coredump): concatenated streams, decoder memory under the cap.
#include <lzma.h>

#include <vector>

#include "core/compression.hpp"

namespace ehbt::core {

Expected<void, std::string> decompress_xz(std::span<const std::byte> in, SparseSink& out,
                                          const Limits& limits) {
  lzma_stream strm = LZMA_STREAM_INIT;
  lzma_ret ret = lzma_stream_decoder(&strm, limits.max_decompressor_memory, LZMA_CONCATENATED);
  if (ret != LZMA_OK) return unexpected(std::string("xz: cannot start the decoder"));
  struct End {
    lzma_stream* s;
    ~End() { lzma_end(s); }
  } end{&strm};

  std::vector<std::byte> buf(kDecodeChunk);
  strm.next_in = reinterpret_cast<const uint8_t*>(in.data());
  strm.avail_in = in.size();
  // LZMA_FINISH from the start: all input is there, so the decoder may say "truncated".
  for (;;) {
    strm.next_out = reinterpret_cast<uint8_t*>(buf.data());
    strm.avail_out = buf.size();
    ret = lzma_code(&strm, LZMA_FINISH);
    const std::size_t produced = buf.size() - strm.avail_out;
    if (auto r = out.write({buf.data(), produced}); !r) return r;
    if (ret == LZMA_STREAM_END) return {};
    if (ret == LZMA_OK) continue;
    const std::string recovered = " (" + std::to_string(out.size()) + " bytes recovered)";
    switch (ret) {
      case LZMA_BUF_ERROR:
        return unexpected("truncated xz stream" + recovered);
      case LZMA_MEMLIMIT_ERROR:
        return unexpected("xz stream needs more than " +
                          std::to_string(limits.max_decompressor_memory) +
                          " bytes of decoder memory (Limits::max_decompressor_memory)" + recovered);
      case LZMA_DATA_ERROR:
      case LZMA_FORMAT_ERROR:
      case LZMA_OPTIONS_ERROR:
        return unexpected("corrupt xz stream at input byte " + std::to_string(strm.total_in) +
                          recovered);
      default:
        return unexpected("xz decoder error " + std::to_string(ret) + recovered);
    }
  }
}

}  // namespace ehbt::core
