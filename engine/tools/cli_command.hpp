// SPDX-License-Identifier: Apache-2.0
// Subcommands register themselves: each lives in one cmd_<name>.cpp linked into the `ehbt`
// executable and declares a static CommandRegistrar, so adding a subcommand touches no other
// file.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ehbt::cli {

struct Command {
  std::string_view name;
  int order = 0;              // position in `ehbt --help`
  std::string_view synopsis;  // "ehbt cfi FILE [--pc ADDR[,ADDR]...] [--json]"
  std::string_view summary;   // one line for `ehbt --help`
  std::string_view help;      // the rest of `ehbt NAME --help`
  int (*run)(const Command& self, std::span<const std::string> args) = nullptr;
  // Printed after `help`: text several commands share, kept apart rather than joined to each
  // one's own text when the program starts (every run would pay for the copies).
  std::string_view help_shared;
};

void register_command(const Command& command);
// Registered commands sorted by `order`.
std::vector<Command> commands();
const Command* find_command(std::string_view name);

struct CommandRegistrar {
  explicit CommandRegistrar(const Command& command) { register_command(command); }
};

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitPartial = 1;
inline constexpr int kExitUnusable = 2;

// Prints "ehbt: <message>; usage: <synopsis>" (one line) on stderr; returns kExitUnusable.
int usage_error(const Command& command, const std::string& message);
// Prints "ehbt: <subject>: <why>" (one line) on stderr; returns kExitUnusable.
int input_error(const std::string& subject, const std::string& why);
// Prints `synopsis` and `help` on stdout; returns kExitOk.
int print_command_help(const Command& command);
// Writes the whole of `text` to stdout.
void write_stdout(const std::string& text);

}  // namespace ehbt::cli
