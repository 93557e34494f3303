// SPDX-License-Identifier: Apache-2.0
// An image's line index (see module_lines.hpp).
#include "lines/module_lines.hpp"

#include <algorithm>

#include "lines/dwarf_lookup.hpp"

namespace ehbt::lines {
namespace {

// Answers kept per image: the frames of one build's cores land on the same few thousand pcs
// (every idle thread in the same wait), but a long-lived process must not grow without end.
constexpr std::size_t kMemoEntries = 1u << 16;

}  // namespace

std::string ModuleLines::problem() const {
  std::lock_guard<std::mutex> lock(mu_);
  return problem_;
}

std::size_t ModuleLines::sparse_answers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sparse_answers_;
}

std::size_t ModuleLines::persisted_answers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answers_ ? answers_->hits() : 0;
}

bool ModuleLines::dwarf_opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

AnswerCache* ModuleLines::answers(const Limits& limits) {
  if (!answers_read_) {
    answers_read_ = true;
    answers_ = AnswerCache::open(image_, limits);
  }
  return answers_.get();
}

const std::optional<SourceInfo>* ModuleLines::remember(uint64_t pc,
                                                       std::optional<SourceInfo> info) {
  if (memo_.size() >= kMemoEntries) memo_.clear();
  return &memo_.insert_or_assign(pc, std::move(info)).first->second;
}

const std::optional<SourceInfo>* ModuleLines::known(uint64_t pc, const Limits& limits) {
  if (auto it = memo_.find(pc); it != memo_.end()) return &it->second;
  AnswerCache* kept = answers(limits);
  if (kept == nullptr) return nullptr;
  std::optional<std::optional<SourceInfo>> got = kept->find(pc);
  return got ? remember(pc, std::move(*got)) : nullptr;
}

bool ModuleLines::open_dwarf(const Limits& limits) {
  if (!opened_) {
    opened_ = true;
    OpenedDwarf opened = open_image_dwarf(image_, limits);
    file_ = std::move(opened.file);
    problem_ = std::move(opened.problem);
    if (file_) {
      units_ = std::make_unique<UnitIndex>(file_->dwarf());
      if (answers_) answers_->bind(*file_);
    }
  }
  return file_ != nullptr;
}

void ModuleLines::prepare(std::span<const uint64_t> link_pcs, const Limits& limits,
                          std::size_t min_ranges) {
  std::lock_guard<std::mutex> lock(mu_);
  // The pcs kept by an earlier process are answered now: the DWARF is opened only for the
  // others, and not at all when there are none.
  std::vector<uint64_t> asked;
  for (uint64_t pc : link_pcs) {
    if (known(pc, limits) == nullptr) asked.push_back(pc);
  }
  if (asked.empty() || !open_dwarf(limits)) return;
  if (full_searched_ || sparse_) return;
  std::vector<uint64_t> units;
  for (uint64_t pc : asked) {
    if (auto unit = units_->table_offset(pc, limits)) units.push_back(*unit);
  }
  if (units.empty()) return;
  // The sparse handle costs a handle of its own (tens of microseconds); libdw's walk to
  // units near the start of the section costs less.
  const uint64_t last = *std::max_element(units.begin(), units.end());
  if (units_->ranges_before(last, min_ranges) < min_ranges) return;
  sparse_ = SparseDwarf::open(*file_, std::move(units), limits.max_line_dies);
}

std::optional<SourceInfo> ModuleLines::lookup(uint64_t link_pc, const Limits& limits) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const std::optional<SourceInfo>* hit = known(link_pc, limits)) return *hit;
  if (!open_dwarf(limits)) return std::nullopt;
  DwarfLookup got;
  bool answered = false;
  if (sparse_) {
    const std::optional<uint64_t> unit = units_->table_offset(link_pc, limits);
    if (unit && sparse_->holds(*unit)) {
      got = lookup_dwarf(*units_, link_pc, limits, sparse_->dwarf());
      // A problem is found again, and said, by the full handle: its words, as before.
      answered = got.problem.empty();
      if (answered) ++sparse_answers_;
    }
  }
  if (!answered) {
    full_searched_ = true;
    got = lookup_dwarf(*units_, link_pc, limits);
  }
  if (!got.problem.empty() && problem_.empty()) problem_ = file_->path() + ": " + got.problem;
  // Kept for later processes only when nothing went wrong in this file: a problem is said by
  // every run that meets it.
  if (answers_ != nullptr && problem_.empty()) answers_->add(link_pc, got.info);
  return *remember(link_pc, std::move(got.info));
}

ModuleLines* module_lines(const Image& image) {
  ImageCache* held = image.lines_cache(
      [&]() -> std::unique_ptr<ImageCache> { return std::make_unique<ModuleLines>(image); });
  // Only this area makes the lines cache: the type is known.
  return static_cast<ModuleLines*>(held);
}

}  // namespace ehbt::lines
