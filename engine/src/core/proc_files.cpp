// SPDX-License-Identifier: Apache-2.0
// /proc readers. These files are produced by the kernel but may change while being read
// (threads come and go, mappings change), so every parser tolerates odd lines.
#include "core/proc_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ehbt::core {
namespace {

constexpr std::size_t kMaxAuxvBytes = 64 * 1024;

bool parse_hex(std::string_view s, uint64_t& v) {
  if (s.empty() || s.size() > 16) return false;
  v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return true;
}

// Splits off the next space-delimited field of `line` at `pos`.
std::string_view next_field(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  std::size_t start = pos;
  while (pos < line.size() && line[pos] != ' ') ++pos;
  return line.substr(start, pos - start);
}

}  // namespace

std::vector<FileMapping> parse_proc_maps(std::string_view text, std::size_t max_lines) {
  std::vector<FileMapping> out;
  std::size_t pos = 0;
  for (std::size_t n = 0; pos < text.size() && n < max_lines; ++n) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    std::size_t p = 0;
    std::string_view range = next_field(line, p);
    std::string_view perms = next_field(line, p);
    std::string_view offset = next_field(line, p);
    next_field(line, p);  // dev
    next_field(line, p);  // inode
    while (p < line.size() && line[p] == ' ') ++p;
    std::size_t dash = range.find('-');
    FileMapping m;
    if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), m.start) ||
        !parse_hex(range.substr(dash + 1), m.end) || !parse_hex(offset, m.offset) ||
        m.end <= m.start) {
      continue;
    }
    m.path = std::string(line.substr(p));
    m.executable = perms.size() > 2 && perms[2] == 'x';
    out.push_back(std::move(m));
  }
  return out;
}

std::string read_proc_file(const std::string& path, std::size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  while (out.size() < max_bytes) {
    ssize_t n = read(fd, buf, std::min(sizeof buf, max_bytes - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> read_proc_auxv(int pid) {
  std::string raw = read_proc_file("/proc/" + std::to_string(pid) + "/auxv", kMaxAuxvBytes);
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
  for (std::size_t off = 0; off + 16 <= raw.size(); off += 16) {
    uint64_t tag, val;
    std::memcpy(&tag, raw.data() + off, 8);
    std::memcpy(&val, raw.data() + off + 8, 8);
    if (tag == kAtNull) break;
    auxv.emplace_back(tag, val);
  }
  return auxv;
}

std::vector<int> list_threads(int pid) {
  std::vector<int> tids;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0 && v <= INT32_MAX) {
      tids.push_back(static_cast<int>(v));
    }
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  auto main = std::find(tids.begin(), tids.end(), pid);
  if (main != tids.end()) std::rotate(tids.begin(), main, main + 1);
  return tids;
}

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace ehbt::core
