// SPDX-License-Identifier: Apache-2.0
// Breakpad's Linux streams, copies of /proc/PID files: auxv (binary words), maps, cmdline
// (NUL-separated) and status (text). Text is read up to Limits::max_minidump_text_bytes.
#include <string_view>

#include "core/byte_order.hpp"
#include "core/proc_files.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {
namespace {

std::string_view text(std::span<const std::byte> stream, const Limits* limits) {
  std::size_t n = stream.size();
  if (limits != nullptr) n = std::min<std::size_t>(n, limits->max_minidump_text_bytes);
  return {reinterpret_cast<const char*>(stream.data()), n};
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

// "start-end perms offset dev inode   path" per line: /proc/PID/maps's own text.
std::vector<core::FileMapping> read_maps(std::span<const std::byte> stream, const Limits& limits) {
  return core::parse_proc_maps(text(stream, &limits), limits.max_file_mappings);
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
