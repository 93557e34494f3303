// SPDX-License-Identifier: Apache-2.0
// The subcommand registry and the messages every subcommand prints the same way.
#include "cli_command.hpp"

#include <algorithm>
#include <cstdio>

namespace ehbt::cli {
namespace {

// A function-local static: registrars in other translation units may run before any
// namespace-scope object here is constructed.
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

// Keeps an error message on one line whatever the engine put in it.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

void register_command(const Command& command) {
  registry().push_back(command);
}

std::vector<Command> commands() {
  std::vector<Command> sorted = registry();
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Command& a, const Command& b) { return a.order < b.order; });
  return sorted;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : registry()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

int usage_error(const Command& command, const std::string& message) {
  std::fprintf(stderr, "ehbt %s: %s; usage: %.*s\n", std::string(command.name).c_str(),
               one_line(message).c_str(), static_cast<int>(command.synopsis.size()),
               command.synopsis.data());
  return kExitUnusable;
}

int input_error(const std::string& subject, const std::string& why) {
  // Engine messages may already start with the path; say it once.
  if (why.starts_with(subject + ": ")) {
    std::fprintf(stderr, "ehbt: %s\n", one_line(why).c_str());
    return kExitUnusable;
  }
  std::fprintf(stderr, "ehbt: %s: %s\n", one_line(subject).c_str(), one_line(why).c_str());
  return kExitUnusable;
}

int print_command_help(const Command& command) {
  std::string text = "usage: " + std::string(command.synopsis) + "\n\n" +
                     std::string(command.summary) + "\n\n" + std::string(command.help) +
                     std::string(command.help_shared);
  if (!text.ends_with('\n')) text += '\n';
  write_stdout(text);
  return kExitOk;
}

void write_stdout(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace ehbt::cli
