// SPDX-License-Identifier: Apache-2.0
// Source locations of a report's frames (see source_lines.hpp).
#include "report/source_lines.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lines/source_lookup.hpp"
#include "report/frame_run.hpp"

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
  // A recursion puts one pc of one module in hundreds of consecutive frames: such a run
  // (frame_run.hpp) is looked up by its first frame, and the others take its answer after
  // the lookups, without being sorted or looked up at all.
  const std::vector<FrameRun> runs =
      collapse_runs(pending, [](const PendingLine& a, const PendingLine& b) {
        return a.module == b.module && a.link_pc == b.link_pc;
      });
  std::stable_sort(pending.begin(), pending.end(), [](const PendingLine& a, const PendingLine& b) {
    return std::less<const Module*>()(a.module, b.module);
  });
  std::string problem, said;
  std::vector<uint64_t> pcs;
  // What the first frame at a pc got: the frame that holds it, and the problem said.
  struct Answer {
    const FrameLine* line;
    bool found;
    std::string said;
  };
  std::unordered_map<uint64_t, Answer> answered;
  for (std::size_t i = 0; i < pending.size();) {
    const Module& module = *pending[i].module;
    problem.clear();
    std::size_t end = i;
    pcs.clear();
    for (; end < pending.size() && pending[end].module == &module; ++end) {
      pcs.push_back(pending[end].link_pc);
    }
    lines::prepare_sources(module, pcs, limits);
    // A recursion repeats one pc in hundreds of frames: each pc is looked up once, and a
    // frame at a pc seen before gets a copy of the first one's answer (and its problem).
    answered.clear();
    std::size_t j = i;
    for (; j < end; ++j) {
      const PendingLine& p = pending[j];
      FrameLine& line = report.threads[p.thread].frames[p.frame];
      auto [seen, first] = answered.try_emplace(p.link_pc, Answer{&line, false, {}});
      if (!first) {
        const Answer& a = seen->second;
        if (!a.said.empty()) problem = a.said;
        if (a.found) {
          line.location = a.line->location;
          line.inlined = a.line->inlined;
        }
        continue;
      }
      // A Go module answers from .gopclntab and, for its C code, DWARF: the DWARF's problem
      // is kept when a later frame's answer came from .gopclntab.
      std::optional<SourceInfo> info = lines::lookup_source(module, p.link_pc, limits, &said);
      if (!said.empty()) problem = seen->second.said = said;
      if (!info) continue;
      seen->second.found = true;
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
  for (const FrameRun& run : runs) {
    std::vector<FrameLine>& frames = report.threads[run.thread].frames;
    for (std::size_t f = run.first + 1; f <= run.last; ++f) {
      frames[f].location = frames[run.first].location;
      frames[f].inlined = frames[run.first].inlined;
    }
  }
}

}  // namespace ehbt::report
