// SPDX-License-Identifier: Apache-2.0
// Option parsing and number parsing for the CLI.
#include "cli_args.hpp"

#include <limits>

namespace ehbt::cli {

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
  auto it = options_.find(std::string(name));
  if (it == options_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::values(std::string_view name) const {
  auto it = options_.find(std::string(name));
  if (it == options_.end()) return {};
  return it->second;
}

Expected<ParsedArgs, std::string> parse_args(std::span<const std::string> args,
                                             std::span<const OptionSpec> specs) {
  ParsedArgs out;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      out.positionals.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (!spec) return unexpected("unknown option '" + std::string(name) + "'");
    if (!spec->repeatable && out.has(spec->name)) {
      return unexpected("option '" + std::string(name) + "' given twice");
    }
    if (!spec->takes_value) {
      if (inline_value) return unexpected("option '" + std::string(name) + "' takes no value");
      out.add(spec->name, "");
      continue;
    }
    if (inline_value) {
      out.add(spec->name, std::string(*inline_value));
    } else if (i + 1 < args.size()) {
      out.add(spec->name, args[++i]);
    } else {
      return unexpected("option '" + std::string(name) + "' needs a value");
    }
  }
  return out;
}

namespace {

std::optional<uint64_t> parse_digits(std::string_view s, unsigned base) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    if (v > (std::numeric_limits<uint64_t>::max() - d) / base) return std::nullopt;
    v = v * base + d;
  }
  return v;
}

}  // namespace

std::optional<uint64_t> parse_decimal(std::string_view s) {
  return parse_digits(s, 10);
}

std::optional<uint64_t> parse_hex(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  return parse_digits(s, 16);
}

std::optional<std::vector<uint64_t>> parse_hex_list(std::string_view s) {
  std::vector<uint64_t> out;
  while (true) {
    auto comma = s.find(',');
    auto v = parse_hex(s.substr(0, comma));
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace ehbt::cli
