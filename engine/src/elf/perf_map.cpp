// SPDX-License-Identifier: Apache-2.0
// Perf map reader. The file is written by the target itself while it runs, so it is input
// like any other: bounded in bytes and lines, malformed lines skipped.
#include "ehbt/perf_map.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "util/regular_file.hpp"

namespace ehbt {
namespace {

// Hex digits, with an optional 0x some writers add; false on anything else or overflow.
bool parse_hex(std::string_view s, uint64_t& out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    unsigned d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return false;
    }
    v = v << 4 | d;
  }
  out = v;
  return true;
}

std::string_view next_token(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  const std::size_t begin = pos;
  while (pos < line.size() && line[pos] != ' ') ++pos;
  return line.substr(begin, pos - begin);
}

}  // namespace

PerfMap PerfMap::parse(std::string_view text, const Limits& limits) {
  std::vector<PerfMapEntry> lines;
  std::size_t pos = 0;
  while (pos < text.size() && lines.size() < limits.max_perf_map_entries) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t p = 0;
    PerfMapEntry e;
    if (!parse_hex(next_token(line, p), e.start) || !parse_hex(next_token(line, p), e.size)) {
      continue;
    }
    if (e.size == 0 || e.start + e.size < e.start) continue;
    while (p < line.size() && line[p] == ' ') ++p;
    e.name = std::string(line.substr(p));
    lines.push_back(std::move(e));
  }

  PerfMap map;
  std::vector<uint32_t> idx(lines.size());
  std::iota(idx.begin(), idx.end(), 0u);
  // By start, later lines after earlier ones at the same start; then keep only the last.
  std::stable_sort(idx.begin(), idx.end(),
                   [&](uint32_t a, uint32_t b) { return lines[a].start < lines[b].start; });
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (k + 1 < idx.size() && lines[idx[k + 1]].start == lines[idx[k]].start) continue;
    map.order_.push_back(idx[k]);
    map.entries_.push_back(std::move(lines[idx[k]]));
  }
  map.max_end_.resize(map.entries_.size());
  for (std::size_t i = 0; i < map.entries_.size(); ++i) {
    const uint64_t end = map.entries_[i].start + map.entries_[i].size;
    map.max_end_[i] = std::max(i == 0 ? 0 : map.max_end_[i - 1], end);
  }
  return map;
}

Expected<PerfMap, std::string> PerfMap::load(const std::string& path, const Limits& limits) {
  auto opened = util::open_regular_file(path);
  if (!opened) return unexpected("cannot read perf map " + path + ": " + opened.error().message());
  const int fd = *opened;
  std::string text;
  char buf[65536];
  while (text.size() < limits.max_perf_map_bytes) {
    const std::size_t want = static_cast<std::size_t>(
        std::min<uint64_t>(sizeof buf, limits.max_perf_map_bytes - text.size()));
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return unexpected("cannot read perf map " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return parse(text, limits);
}

const PerfMapEntry* PerfMap::find(uint64_t addr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const PerfMapEntry& e) { return a < e.start; });
  const PerfMapEntry* best = nullptr;
  uint32_t best_order = 0;
  // Walk back over entries starting at or before addr until none earlier can reach it.
  for (std::size_t i = static_cast<std::size_t>(it - entries_.begin()); i-- > 0;) {
    if (max_end_[i] <= addr) break;
    const PerfMapEntry& e = entries_[i];
    if (addr - e.start < e.size && (best == nullptr || order_[i] > best_order)) {
      best = &e;
      best_order = order_[i];
    }
  }
  return best;
}

}  // namespace ehbt
