// SPDX-License-Identifier: Apache-2.0
// Command-line parsing for the subcommands: `--name VALUE`, `--name=VALUE`, flags, repeated
// options and positionals; `--` ends the options. Errors are one line for a usage message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ehbt/expected.hpp"

namespace ehbt::cli {

struct OptionSpec {
  std::string_view name;  // with the dashes: "--sysroot", "-h"
  bool takes_value = false;
  bool repeatable = false;
};

class ParsedArgs {
 public:
  std::vector<std::string> positionals;

  bool has(std::string_view name) const { return options_.count(std::string(name)) != 0; }
  // The value of an option given once (or the last of a repeatable one).
  std::optional<std::string> value(std::string_view name) const;
  // Every value of a repeatable option, in order.
  std::vector<std::string> values(std::string_view name) const;

  void add(std::string_view name, std::string value) {
    options_[std::string(name)].push_back(std::move(value));
  }

 private:
  std::map<std::string, std::vector<std::string>> options_;
};

Expected<ParsedArgs, std::string> parse_args(std::span<const std::string> args,
                                             std::span<const OptionSpec> specs);

// Decimal digits only; fails on empty input, signs, junk or overflow.
std::optional<uint64_t> parse_decimal(std::string_view s);
// Hexadecimal with an optional 0x/0X prefix (like addr2line's addresses).
std::optional<uint64_t> parse_hex(std::string_view s);
// Comma-separated hex addresses ("0x1a,1b0"); fails when any element does.
std::optional<std::vector<uint64_t>> parse_hex_list(std::string_view s);

}  // namespace ehbt::cli
