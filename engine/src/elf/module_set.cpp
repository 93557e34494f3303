// SPDX-License-Identifier: Apache-2.0
// Modules sorted by start address. Overlapping modules are all kept; a lookup returns the
// module that contains the address and starts last (the innermost mapping).
#include <algorithm>

#include "ehbt/image.hpp"

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

}  // namespace ehbt
