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

ModuleLines::ModuleLines(OpenedDwarf opened)
    : file_(std::move(opened.file)), problem_(std::move(opened.problem)) {
  if (file_) units_ = std::make_unique<UnitIndex>(file_->dwarf());
}

std::string ModuleLines::problem() const {
  std::lock_guard<std::mutex> lock(mu_);
  return problem_;
}

std::size_t ModuleLines::sparse_answers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sparse_answers_;
}

void ModuleLines::prepare(std::span<const uint64_t> link_pcs, const Limits& limits,
                          std::size_t min_ranges) {
  if (!file_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (full_searched_ || sparse_) return;
  std::vector<uint64_t> units;
  for (uint64_t pc : link_pcs) {
    if (memo_.count(pc) != 0) continue;
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
  if (!file_) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = memo_.find(link_pc); it != memo_.end()) return it->second;
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
  if (memo_.size() >= kMemoEntries) memo_.clear();
  memo_.emplace(link_pc, got.info);
  return std::move(got.info);
}

ModuleLines* module_lines(const Image& image, const Limits& limits) {
  ImageCache* held = image.lines_cache([&]() -> std::unique_ptr<ImageCache> {
    return std::make_unique<ModuleLines>(open_image_dwarf(image, limits));
  });
  // Only this area makes the lines cache: the type is known.
  return static_cast<ModuleLines*>(held);
}

}  // namespace ehbt::lines
