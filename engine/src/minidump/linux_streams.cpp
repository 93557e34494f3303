// SPDX-License-Identifier: Apache-2.0
// Breakpad's Linux streams, copies of /proc/PID files: auxv (binary words), maps, cmdline
// (NUL-separated) and status (text). Text is read up to Limits::max_minidump_text_bytes.
#include <string_view>

#include "core/byte_order.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {
namespace {

std::string_view text(std::span<const std::byte> stream, const Limits* limits) {
  std::size_t n = stream.size();
  if (limits != nullptr) n = std::min<std::size_t>(n, limits->max_minidump_text_bytes);
  return {reinterpret_cast<const char*>(stream.data()), n};
}

// A hex number at the front of `s`, which it consumes; nothing without a digit.
std::optional<uint64_t> take_hex(std::string_view& s) {
  uint64_t v = 0;
  std::size_t i = 0;
  for (; i < s.size() && i < 16; ++i) {
    const char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    v = (v << 4) | d;
  }
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return v;
}

void skip_field(std::string_view& s) {
  while (!s.empty() && s.front() != ' ') s.remove_prefix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> read_auxv(std::span<const std::byte> stream,
                                                     unsigned word, const Limits& limits) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  core::ByteView v(stream, false);
  const uint64_t n = stream.size() / (2 * word);
  for (uint64_t i = 0; i < n && i < limits.max_file_mappings; ++i) {
    const uint64_t tag = v.u(i * 2 * word, word);
    if (tag == core::kAtNull) break;
    out.emplace_back(tag, v.u(i * 2 * word + word, word));
  }
  return out;
}

// "start-end perms offset dev inode   path" per line, as /proc/PID/maps.
std::vector<core::FileMapping> read_maps(std::span<const std::byte> stream, const Limits& limits) {
  std::vector<core::FileMapping> out;
  std::string_view all = text(stream, &limits);
  while (!all.empty() && out.size() < limits.max_file_mappings) {
    const std::size_t nl = all.find('\n');
    std::string_view line = all.substr(0, nl);
    all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
    core::FileMapping m;
    auto start = take_hex(line);
    if (!start || line.empty() || line.front() != '-') continue;
    line.remove_prefix(1);
    auto end = take_hex(line);
    if (!end || *end <= *start || line.empty() || line.front() != ' ') continue;
    line.remove_prefix(1);
    m.executable = line.size() > 2 && line[2] == 'x';
    skip_field(line);  // perms
    auto offset = take_hex(line);
    if (!offset) continue;
    skip_field(line);  // the rest of the offset
    skip_field(line);  // dev
    skip_field(line);  // inode
    m.start = *start;
    m.end = *end;
    m.offset = *offset;
    m.path = std::string(line);
    out.push_back(std::move(m));
  }
  return out;
}

std::string read_cmdline(std::span<const std::byte> stream) {
  std::string out(text(stream, nullptr).substr(0, 4096));
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

std::string read_status_name(std::span<const std::byte> stream) {
  std::string_view all = text(stream, nullptr).substr(0, 65536);
  constexpr std::string_view kName = "Name:";
  if (!all.starts_with(kName)) return "";
  all.remove_prefix(kName.size());
  while (!all.empty() && (all.front() == '\t' || all.front() == ' ')) all.remove_prefix(1);
  return std::string(all.substr(0, std::min<std::size_t>(all.find('\n'), 64)));
}

}  // namespace ehbt::minidump
