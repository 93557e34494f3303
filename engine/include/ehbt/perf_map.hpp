// SPDX-License-Identifier: Apache-2.0
// Names for JIT code: a perf map, the text file JITs write for `perf` (/tmp/perf-PID.map;
// node --perf-basic-prof, the JVM's perf agents, LuaJIT, ...). One line per code object:
// `START SIZE NAME`, START and SIZE in hex without 0x, NAME the rest of the line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt {

struct PerfMapEntry {
  uint64_t start = 0;  // target address
  uint64_t size = 0;
  std::string name;
};

class PerfMap {
 public:
  // Reads at most Limits::max_perf_map_bytes of the file; an unreadable file is one line.
  static Expected<PerfMap, std::string> load(const std::string& path, const Limits& limits = {});
  // Parses map text; malformed lines are skipped, at most Limits::max_perf_map_entries kept.
  static PerfMap parse(std::string_view text, const Limits& limits = {});

  // The entry covering `addr`. Where entries overlap (a JIT reuses memory and appends a new
  // line), the one written last wins.
  const PerfMapEntry* find(uint64_t addr) const;
  std::size_t size() const { return entries_.size(); }

 private:
  std::vector<PerfMapEntry> entries_;  // sorted by start; at one start only the last line
  std::vector<uint64_t> max_end_;      // max_end_[i]: largest end among entries_[0..i]
  std::vector<uint32_t> order_;        // line order of entries_[i], for overlaps
};

}  // namespace ehbt
