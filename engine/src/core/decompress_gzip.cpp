// SPDX-License-Identifier: Apache-2.0
// gzip: one or more members (concatenated .gz files are one valid .gz file).
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "core/compression.hpp"

namespace ehbt::core {

Expected<void, std::string> decompress_gzip(std::span<const std::byte> in, SparseSink& out,
                                            const Limits&) {
  z_stream zs{};
  // 16 + MAX_WBITS: gzip wrapper only, 32 KiB window (zlib's whole memory need).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return unexpected(std::string("gzip: cannot start the decoder"));
  }
  struct End {
    z_stream* s;
    ~End() { inflateEnd(s); }
  } end{&zs};

  std::vector<std::byte> buf(kDecodeChunk);
  std::size_t pos = 0;
  bool member_done = false;
  bool output_full = false;  // the decoder may hold more output though all input is in
  while (pos < in.size() || (output_full && !member_done)) {
    if (member_done) {
      inflateReset(&zs);
      member_done = false;
    }
    // avail_in is 32 bits: feed a large file in slices.
    const std::size_t slice = std::min<std::size_t>(in.size() - pos, UINT_MAX);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + pos));
    zs.avail_in = static_cast<uInt>(slice);
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    const int ret = inflate(&zs, Z_NO_FLUSH);
    pos += slice - zs.avail_in;
    const std::size_t produced = buf.size() - zs.avail_out;
    output_full = zs.avail_out == 0;
    if (auto r = out.write({buf.data(), produced}); !r) return r;
    if (ret == Z_STREAM_END) {
      member_done = true;
      continue;
    }
    if (ret == Z_BUF_ERROR && produced == 0) break;  // needs input that is not there
    if (ret != Z_OK) {
      return unexpected("corrupt gzip stream at input byte " + std::to_string(pos) + ": " +
                        (zs.msg != nullptr ? zs.msg : "inflate error") + " (" +
                        std::to_string(out.size()) + " bytes recovered)");
    }
  }
  if (!member_done) {
    return unexpected("truncated gzip stream (" + std::to_string(out.size()) + " bytes recovered)");
  }
  return {};
}

}  // namespace ehbt::core
