// SPDX-License-Identifier: Apache-2.0
// The lines dispatcher (see source_lookup.hpp): at which pc a frame is looked up, and which
// debug info answers for it.
#include "lines/source_lookup.hpp"

#include <utility>

#include "elf/go_image.hpp"
#include "elf/go_lines.hpp"
#include "lines/module_lines.hpp"

namespace ehbt::lines {

std::optional<uint64_t> WalkLookups::next(const Frame& frame, const Module* module) {
  const bool exact = std::exchange(after_sigpanic_, false);
  if (module == nullptr || !module->image) return std::nullopt;
  const elf::GoPclntab* go = elf::go_pclntab(*module->image);
  const uint64_t link_pc = module->to_link(exact && go != nullptr ? frame.pc : frame.lookup_pc());
  if (go != nullptr) {
    if (auto f = go->find(link_pc, limits_.max_search_probes)) {
      after_sigpanic_ = go->name(*f) == "runtime.sigpanic";
      // Go's own trampoline (runtime.sigreturn) has the position go tool addr2line gives.
      return link_pc;
    }
  }
  if (frame.signal_trampoline) return std::nullopt;
  return link_pc;
}

void prepare_sources(const Module& module, std::span<const uint64_t> link_pcs,
                     const Limits& limits) {
  // Go's pcs are answered from .gopclntab; its DWARF (cgo's C code) is left as it was.
  if (!module.image || elf::go_pclntab(*module.image) != nullptr) return;
  if (ModuleLines* dwarf = module_lines(*module.image)) dwarf->prepare(link_pcs, limits);
}

std::optional<SourceInfo> lookup_source(const Module& module, uint64_t link_pc,
                                        const Limits& limits, std::string* problem) {
  if (problem != nullptr) problem->clear();
  if (!module.image) return std::nullopt;
  // Go code: .gopclntab, what Go's own traceback prints, even where DWARF exists (the Go
  // compiler's says the same or less). C code linked into a Go binary (cgo) has only DWARF.
  if (const elf::GoPclntab* go = elf::go_pclntab(*module.image)) {
    if (go->find(link_pc, limits.max_search_probes)) {
      return elf::go_source_info(*module.image, link_pc, limits);
    }
  }
  // DWARF: the module's own, else its separate debug file's (with a dwz file).
  ModuleLines* dwarf = module_lines(*module.image);
  if (dwarf == nullptr) return std::nullopt;
  std::optional<SourceInfo> info = dwarf->lookup(link_pc, limits);
  if (problem != nullptr) *problem = dwarf->problem();
  return info;
}

}  // namespace ehbt::lines
