// SPDX-License-Identifier: Apache-2.0
// Plain or compressed: the decision is the file's first bytes.
#include "core/core_source.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "core/compression.hpp"
#include "core/sparse_sink.hpp"

namespace ehbt::core {

Expected<MappedFile, std::string> open_core_source(const std::string& path, const Limits& limits) {
  auto file = MappedFile::open(path);
  if (!file) return file;
  const Compression format = detect_compression(file->bytes());
  if (format == Compression::None) return file;

  // Read once, front to back.
  madvise(const_cast<std::byte*>(file->bytes().data()), file->bytes().size(), MADV_SEQUENTIAL);
  SparseSinkCaps caps;
  caps.max_bytes = limits.max_decompressed_bytes;
  caps.max_disk_bytes = limits.max_decompressed_disk_bytes;
  auto sink = SparseSink::create("", caps);
  if (!sink) return unexpected(path + ": " + sink.error());
  if (auto r = decompress(format, file->bytes(), *sink, limits); !r) {
    return unexpected(path + ": " + r.error());
  }
  if (auto r = sink->finish(); !r) return unexpected(path + ": " + r.error());
  const std::string name = path + " (" + compression_name(format) + ")";
  return MappedFile::adopt(sink->release(), name);
}

}  // namespace ehbt::core
