// SPDX-License-Identifier: Apache-2.0
// The layout of a file of line answers (answer_cache.hpp), as pure functions over its bytes:
// what the cache writes and what it accepts on reading, apart from the file system.
//
//   file     := magic "EHBTLNA\x01", frame(header), frame(record)...
//   frame    := u32 length, u64 FNV-1a 64 of the payload, payload
//   header   := string engine build-id, identity source, 4 × u64 limits, u8 has_alt (0/1),
//               [identity alt]
//   identity := string path, u64 device, inode, size, mtime seconds, mtime nanoseconds
//   record   := answer_records.hpp
// Integers little-endian, strings as answer_records.hpp writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ehbt::lines {

// Where a file is: enough to tell that it was replaced or changed since.
struct FileIdentity {
  std::string path;
  uint64_t dev = 0, ino = 0, size = 0, mtime_sec = 0, mtime_nsec = 0;
  bool operator==(const FileIdentity&) const = default;
  // stat(2) of `path` (links followed); nullopt when it cannot be had or is no regular file.
  static std::optional<FileIdentity> of(const std::string& path);
};

// What every answer of a file depends on (answer_cache.hpp says why each).
struct AnswerFileHeader {
  std::string engine;  // util::own_build_id()
  FileIdentity source;
  uint64_t limits[4] = {};  // max_debug_bytes, max_line_dies, max_inline_depth, max_aranges
  std::optional<FileIdentity> alt;
  bool operator==(const AnswerFileHeader&) const = default;
};

// The magic and the framed header: how every file starts.
std::string answer_file_start(const AnswerFileHeader& header);

// `payload` framed: its length, its checksum, itself.
std::string framed_record(std::string_view payload);

// Bytes of a frame before its payload.
inline constexpr std::size_t kRecordFrameBytes = 12;

struct RecordSpan {
  std::size_t at = 0, size = 0;  // the whole frame, in the file's bytes
};

struct AnswerFileView {
  std::optional<AnswerFileHeader> header;  // none: not a file of answers (magic, checksum)
  std::vector<RecordSpan> records;         // framed within the bytes (checksums not yet checked)
  std::size_t good_end = 0;                // end of the last of them
  bool damaged = false;                    // bytes after good_end that are not a whole frame
};

// Splits a file's bytes into its header and record frames. Reads nothing outside `bytes`;
// what it makes is bounded by their size.
AnswerFileView parse_answer_file(std::string_view bytes);

// The payload of the record at `span` of `bytes`, when its checksum holds.
std::optional<std::string_view> record_payload(std::string_view bytes, RecordSpan span);

}  // namespace ehbt::lines
