// SPDX-License-Identifier: Apache-2.0
#include "core/jit_code.hpp"

#include "core/warnings.hpp"

#include <memory>
#include <string_view>

#include "ehbt/perf_map.hpp"

namespace ehbt::core {
namespace {

constexpr uint32_t kPfX = 1;

bool overlaps_file(uint64_t start, uint64_t end, const std::vector<FileMapping>& files) {
  for (const FileMapping& f : files) {
    if (f.start < end && start < f.end) return true;
  }
  return false;
}

}  // namespace

CodeRegions anonymous_code_from_core(const std::vector<CoreSegment>& segments,
                                     const std::vector<FileMapping>& files, const Limits& limits) {
  CodeRegions out;
  if (files.empty()) return out;
  for (const CoreSegment& s : segments) {
    if (out.size() >= limits.max_code_regions) break;
    if ((s.flags & kPfX) == 0 || s.memsz == 0 || s.vaddr + s.memsz < s.vaddr) continue;
    if (overlaps_file(s.vaddr, s.vaddr + s.memsz, files)) continue;
    out.emplace_back(s.vaddr, s.vaddr + s.memsz);
  }
  return out;
}

CodeRegions anonymous_code_from_maps(const std::string& maps_text, const Limits& limits) {
  CodeRegions out;
  std::size_t pos = 0;
  while (pos < maps_text.size() && out.size() < limits.max_code_regions) {
    std::size_t eol = maps_text.find('\n', pos);
    if (eol == std::string::npos) eol = maps_text.size();
    std::string_view line(maps_text.data() + pos, eol - pos);
    pos = eol + 1;
    // start-end perms offset dev inode [path]
    std::size_t field = 0, p = 0;
    std::string_view fields[6];
    while (field < 6 && p < line.size()) {
      while (p < line.size() && line[p] == ' ') ++p;
      std::size_t b = p;
      while (p < line.size() && (field == 5 || line[p] != ' ')) ++p;
      fields[field++] = line.substr(b, p - b);
    }
    if (field < 5 || fields[1].size() < 3 || fields[1][2] != 'x') continue;
    std::string_view path = field == 6 ? fields[5] : std::string_view();
    if (!path.empty() && path.substr(0, 6) != "[anon:") continue;
    std::string_view range = fields[0];
    const std::size_t dash = range.find('-');
    if (dash == std::string_view::npos) continue;
    uint64_t start = 0, end = 0;
    auto hex = [](std::string_view s, uint64_t& v) {
      if (s.empty() || s.size() > 16) return false;
      v = 0;
      for (char c : s) {
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | static_cast<uint64_t>(d);
      }
      return true;
    };
    if (!hex(range.substr(0, dash), start) || !hex(range.substr(dash + 1), end) || end <= start) {
      continue;
    }
    out.emplace_back(start, end);
  }
  return out;
}

void add_jit_code(ModuleSet& modules, const CodeRegions& regions, const std::string& perf_map,
                  bool required, const Limits& limits, std::vector<Warning>& warnings) {
  for (const auto& [start, end] : regions) {
    if (modules.find(start) == nullptr && modules.find(end - 1) == nullptr) {
      modules.add_anonymous_code(start, end);
    }
  }
  if (perf_map.empty()) return;
  auto map = PerfMap::load(perf_map, limits);
  if (!map) {
    if (required) {
      add_warning(warnings,
                  Warning{kWarningUnreadableFile, map.error() + " (JIT frames stay unnamed)",
                          perf_map, "--perf-map"});
    }
    return;
  }
  modules.set_perf_map(std::make_shared<const PerfMap>(std::move(*map)));
}

void add_live_jit_code(ModuleSet& modules, int pid, const std::string& maps_text,
                       const std::string& perf_map, const Limits& limits,
                       std::vector<Warning>& warnings) {
  const bool named = !perf_map.empty();
  add_jit_code(modules, anonymous_code_from_maps(maps_text, limits),
               named ? perf_map : "/tmp/perf-" + std::to_string(pid) + ".map", named, limits,
               warnings);
}

}  // namespace ehbt::core
