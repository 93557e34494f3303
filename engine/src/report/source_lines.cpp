// SPDX-License-Identifier: Apache-2.0
// Source locations of a report's frames (see source_lines.hpp).
#include "report/source_lines.hpp"

#include <algorithm>

#include "lines/source_lookup.hpp"

namespace ehbt::report {
namespace {

bool already_said(const BacktraceReport& report, const std::string& path) {
  return std::any_of(report.warnings.begin(), report.warnings.end(), [&](const Warning& w) {
    return w.kind == kWarningBadDebugInfo && w.path == path;
  });
}

}  // namespace

void locate_frames(std::vector<PendingLine>& pending, BacktraceReport& report,
                   const Limits& limits) {
  std::stable_sort(pending.begin(), pending.end(),
                   [](const PendingLine& a, const PendingLine& b) { return a.module < b.module; });
  std::string problem, said;
  std::vector<uint64_t> pcs;
  for (std::size_t i = 0; i < pending.size();) {
    const Module& module = *pending[i].module;
    problem.clear();
    std::size_t end = i;
    pcs.clear();
    for (; end < pending.size() && pending[end].module == &module; ++end) {
      pcs.push_back(pending[end].link_pc);
    }
    lines::prepare_sources(module, pcs, limits);
    std::size_t j = i;
    for (; j < end; ++j) {
      const PendingLine& p = pending[j];
      // A Go module answers from .gopclntab and, for its C code, DWARF: the DWARF's problem
      // is kept when a later frame's answer came from .gopclntab.
      std::optional<SourceInfo> info = lines::lookup_source(module, p.link_pc, limits, &said);
      if (!said.empty()) problem = said;
      if (!info) continue;
      FrameLine& line = report.threads[p.thread].frames[p.frame];
      line.location = std::move(info->location);
      line.inlined = std::move(info->inlined);
    }
    if (!problem.empty() && !already_said(report, module.path)) {
      add_warning(report,
                  Warning{kWarningBadDebugInfo,
                          "no source lines for " + module.path + ": " + problem, module.path, ""});
    }
    i = j;
  }
}

}  // namespace ehbt::report
