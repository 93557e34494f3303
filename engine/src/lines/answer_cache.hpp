// SPDX-License-Identifier: Apache-2.0
// Persistent line answers: what one file's DWARF said for each pc asked, kept in `lines/` of
// ehbt's cache directory (cache_dir.hpp), so that a later process asked about a pc seen before
// answers without opening that DWARF at all. Crashes of one machine land on the same few
// libc pcs (the start code, raise and abort, the waits of idle threads), and opening libc's
// debug file for them is most of what source lines cost a small core (about 0.5 ms of
// `ehbt core`). GDB's index cache and debuginfod's client cache are the same kind of thing.
//
// A pure speed-up, like the debug cache: an answer is taken only from a file whose name and
// header carry everything it depends on, and anything else there is ignored.
//   - the build-id of this engine (util/own_build_id.hpp): another build may answer otherwise;
//   - the DWARF file (the image itself when it has .debug_info, else its debug file): its
//     build-id, path, device, inode, size and modification time;
//   - the limits lookups obey (max_debug_bytes, max_line_dies, max_inline_depth, max_aranges);
//   - the dwz file the answers were read with, when the DWARF names one (its path and the
//     same identity, checked again when the file is read).
// Only answers found without a problem, by the file the key names and with its dwz file
// when it names one, are written: a problem is found, and said, again by every process.
//
// One file per DWARF file, "<build-id>.<key>.lines": a header, then records (answer_file.hpp),
// each framed by its length and a checksum and appended with one write(2) (O_APPEND:
// concurrent writers each add whole records), only while the file starts with this
// process's header. A record that does not check out ends what is
// read: the next answer written replaces the file with the records before it. A file holds
// at most Limits::max_line_answers_bytes (then nothing more is added), and the directory at
// most kAnswerFilesPerCap times that (least recently used files removed first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"
#include "lines/answer_file.hpp"
#include "lines/dwarf_file.hpp"

namespace ehbt::lines {

inline constexpr uint64_t kAnswerFilesPerCap = 64;

class AnswerCache {
 public:
  // The cache of the DWARF `image`'s lines come from, its file read now; null when there is
  // none to be had (no cache directory, max_line_answers_bytes or max_debug_cache_bytes 0,
  // an image not read from a file or without build-id, no DWARF, an engine without build-id).
  static std::unique_ptr<AnswerCache> open(const Image& image, const Limits& limits);

  // What was kept for `pc`: nullopt when nothing was; else the answer (itself nullopt when no
  // debug info covers `pc`).
  std::optional<std::optional<SourceInfo>> find(uint64_t pc);

  // Says which DWARF the next answers come from, once it is opened: answers are written only
  // when it is the file of the key and its dwz file, if it names one, was found.
  void bind(const DwarfFile& file);

  // Keeps the answer of `pc` (found by the bound file without a problem).
  void add(uint64_t pc, const std::optional<SourceInfo>& info);

  // Answers found here (for tests).
  std::size_t hits() const { return hits_; }

 private:
  void load(int dir);
  // Puts a file of header_ and `records` in place (place_cache_file).
  bool replace(int dir, const std::string& records);

  std::string dir_root_;   // ehbt_cache_dir()
  std::string name_;       // "<build-id>.<key>.lines"
  AnswerFileHeader want_;  // what the file must say (`alt` decided by bind())
  std::string header_;     // answer_file_start(want_), made by bind()
  uint64_t cap_ = 0;       // max_line_answers_bytes
  uint32_t max_inlined_ = 0;
  std::string bytes_;  // the file as read
  AnswerFileView view_;
  bool valid_ = false;  // bytes_ holds a header matching want_ (its alt checked by stat)
  std::optional<FileIdentity> loaded_alt_;
  bool damaged_ = false;  // a record did not check out: the next add() rewrites the file
  bool bound_ = false;    // bind() accepted the DWARF opened: add() writes
  bool full_ = false;     // the file reached cap_
  std::unordered_map<uint64_t, RecordSpan> index_;  // into bytes_
  std::size_t hits_ = 0;
};

}  // namespace ehbt::lines
