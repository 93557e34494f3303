// SPDX-License-Identifier: Apache-2.0
// An image's line index, kept with the image (Image::lines_cache(), so an ImageStore shares it
// across targets: triage's workers open libc's debug file once), answers memoised per pc. A pc
// is answered from the persistent answers of an earlier process (answer_cache.hpp) when they
// hold it; the DWARF is opened on the first pc they do not hold, and what it answers is added
// to them. An image without DWARF is remembered as such: nothing is opened twice.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"
#include "lines/answer_cache.hpp"
#include "lines/dwarf_file.hpp"
#include "lines/sparse_dwarf.hpp"
#include "lines/unit_index.hpp"

namespace ehbt::lines {

class ModuleLines final : public ImageCache {
 public:
  // `image` outlives this index: the index is kept in the image's own cache.
  explicit ModuleLines(const Image& image) : image_(image) {}
  // Why the DWARF could not be opened, or the first lookup that found it malformed; "" when
  // nothing went wrong. Reports say it once per module.
  std::string problem() const;
  std::optional<SourceInfo> lookup(uint64_t link_pc, const Limits& limits);
  // The pcs about to be looked up (a report's frames in this module), before the first
  // lookup: their units are read through a sparse handle (sparse_dwarf.hpp) rather than
  // the full one, whose first search for a unit reads every unit before it. Nothing happens
  // once the full handle has searched (its tree of units is then built: triage's workers
  // share the image across cores) or a sparse handle exists.
  // Below `min_ranges` ranges of .debug_aranges before the last unit needed the full handle
  // is kept: libdw's walk to units near the start of the section costs less than opening
  // the sparse handle (tens of microseconds; 256 ranges are about 170 of libc's units).
  static constexpr std::size_t kSparseMinRanges = 256;
  void prepare(std::span<const uint64_t> link_pcs, const Limits& limits,
               std::size_t min_ranges = kSparseMinRanges);
  // Lookups answered through the sparse handle, and from persistent answers (for tests).
  std::size_t sparse_answers() const;
  std::size_t persisted_answers() const;
  // Whether the DWARF was opened (for tests: not when persistent answers held every pc).
  bool dwarf_opened() const;

 private:
  // The persistent answers, read on first use.
  AnswerCache* answers(const Limits& limits);
  // The answer memoised for `pc`, else the one kept by an earlier process (then memoised
  // too); null when neither has it. Valid until the next remember().
  const std::optional<SourceInfo>* known(uint64_t pc, const Limits& limits);
  // Memoises the answer of `pc` (the memo starts over when full); a pointer to it.
  const std::optional<SourceInfo>* remember(uint64_t pc, std::optional<SourceInfo> info);
  // The DWARF, opened on first use; false when there is none.
  bool open_dwarf(const Limits& limits);

  const Image& image_;
  mutable std::mutex mu_;  // libdw's lazily read tables are not safe to share between threads
  bool answers_read_ = false;
  std::unique_ptr<AnswerCache> answers_;
  bool opened_ = false;
  std::unique_ptr<DwarfFile> file_;
  std::unique_ptr<UnitIndex> units_;
  // Declared after file_: it refers to file_'s alt handle and goes first.
  std::unique_ptr<SparseDwarf> sparse_;
  bool full_searched_ = false;
  std::size_t sparse_answers_ = 0;
  std::string problem_;
  std::unordered_map<uint64_t, std::optional<SourceInfo>> memo_;
};

// The image's index, made now if this is the first call for it (nothing is read before its
// first prepare() or lookup()).
ModuleLines* module_lines(const Image& image);

}  // namespace ehbt::lines
