// SPDX-License-Identifier: Apache-2.0
// Modules sorted by start address. Overlapping modules are all kept; a lookup returns the
// module that contains the address and starts last (the innermost mapping).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>

#include "ehbt/image.hpp"
#include "ehbt/perf_map.hpp"

namespace ehbt {

void ModuleSet::add(Module m) {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), m.start,
                             [](uint64_t start, const Module& x) { return start < x.start; });
  const std::size_t pos = static_cast<std::size_t>(it - modules_.begin());
  modules_.insert(it, std::move(m));
  // max_end_[i] = the largest end among modules_[0..i]; rebuilt from the insertion point.
  max_end_.resize(modules_.size());
  for (std::size_t i = pos; i < modules_.size(); ++i) {
    uint64_t prev = i == 0 ? 0 : max_end_[i - 1];
    max_end_[i] = std::max(prev, modules_[i].end);
  }
  // Sorted by start, the new module overlaps another only if a module before it ends past
  // its start or one after it starts before its end. An empty module holds no address.
  const Module& added = modules_[pos];
  if (added.start < added.end) {
    if (pos > 0 && max_end_[pos - 1] > added.start) disjoint_ = false;
    for (std::size_t j = pos + 1; j < modules_.size() && modules_[j].start < added.end; ++j) {
      if (modules_[j].start < modules_[j].end) disjoint_ = false;
    }
  }
}

const Module* ModuleSet::find(uint64_t target_addr) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), target_addr,
                             [](uint64_t a, const Module& x) { return a < x.start; });
  // Walk back over modules that start at or before the address; once no earlier module ends
  // past it, none can contain it.
  for (std::size_t i = static_cast<std::size_t>(it - modules_.begin()); i-- > 0;) {
    if (max_end_[i] <= target_addr) break;
    if (modules_[i].contains(target_addr)) return &modules_[i];
  }
  return nullptr;
}

const Module* ModuleSet::find(uint64_t target_addr, const Module* hint) const {
  const bool ours = hint != nullptr && !modules_.empty() &&
                    std::less_equal<const Module*>()(modules_.data(), hint) &&
                    std::less<const Module*>()(hint, modules_.data() + modules_.size());
  if (disjoint_ && ours && hint->contains(target_addr)) return hint;
  return find(target_addr);
}

void ModuleSet::add_anonymous_code(uint64_t start, uint64_t end) {
  if (end <= start) return;
  auto it = std::lower_bound(code_.begin(), code_.end(), std::make_pair(start, uint64_t{0}));
  if (it != code_.end() && it->first < end) return;
  if (it != code_.begin() && std::prev(it)->second > start) return;
  code_.insert(it, {start, end});
}

bool ModuleSet::is_jit_code(uint64_t addr) const {
  if (find(addr) != nullptr) return false;
  auto it = std::upper_bound(code_.begin(), code_.end(), std::make_pair(addr, UINT64_MAX));
  if (it != code_.begin() && addr < std::prev(it)->second) return true;
  return perf_map_ != nullptr && perf_map_->find(addr) != nullptr;
}

const PerfMapEntry* ModuleSet::perf_map_entry(uint64_t addr) const {
  if (perf_map_ == nullptr || find(addr) != nullptr) return nullptr;
  return perf_map_->find(addr);
}

}  // namespace ehbt
