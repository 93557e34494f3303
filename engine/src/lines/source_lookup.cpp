// SPDX-License-Identifier: Apache-2.0
// The lines dispatcher (see source_lookup.hpp): which debug info answers for a module.
#include "lines/source_lookup.hpp"

#include "lines/module_lines.hpp"

namespace ehbt::lines {

std::optional<SourceInfo> lookup_source(const Module& module, uint64_t link_pc,
                                        const Limits& limits, std::string* problem) {
  if (problem != nullptr) problem->clear();
  if (!module.image) return std::nullopt;
  // DWARF: the module's own, else its separate debug file's (with a dwz file).
  ModuleLines* dwarf = module_lines(*module.image, limits);
  if (dwarf == nullptr) return std::nullopt;
  std::optional<SourceInfo> info = dwarf->lookup(link_pc, limits);
  if (problem != nullptr) *problem = dwarf->problem();
  return info;
}

}  // namespace ehbt::lines
