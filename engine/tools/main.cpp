// SPDX-License-Identifier: Apache-2.0
// ehbt command-line entry point: global options, then dispatch to a registered subcommand
// (see cli_command.hpp). Nothing escapes main: an exception from the standard library (such
// as bad_alloc) becomes a one-line error and exit status 2.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli_command.hpp"

#ifndef EHBT_VERSION
#define EHBT_VERSION "unknown"
#endif

namespace {

using ehbt::cli::Command;

std::string general_usage() {
  std::string s = "usage: ehbt COMMAND ...";
  s += " (commands:";
  for (const Command& c : ehbt::cli::commands()) s += " " + std::string(c.name);
  return s + "; ehbt --help)";
}

std::string general_help() {
  std::string s = "ehbt " EHBT_VERSION
                  " - stack unwinding from .eh_frame/.debug_frame for cores and live processes\n\n";
  s += "usage:\n";
  for (const Command& c : ehbt::cli::commands()) s += "  " + std::string(c.synopsis) + "\n";
  s += "  ehbt --help | --version\n  ehbt COMMAND --help\n\ncommands:\n";
  for (const Command& c : ehbt::cli::commands()) {
    std::string name(c.name);
    name.resize(8, ' ');
    s += "  " + name + std::string(c.summary) + "\n";
  }
  s += "\nexit status: 0 complete, 1 partial (a walk stopped early, rows unsupported or\n"
       "malformed), 2 unusable input or usage error (one line on stderr).\n"
       "`ehbt COMMAND --help` documents each command's output.\n";
  return s;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.empty()) {
    std::fprintf(stderr, "ehbt: missing command; %s\n", general_usage().c_str());
    return ehbt::cli::kExitUnusable;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    ehbt::cli::write_stdout(general_help());
    return ehbt::cli::kExitOk;
  }
  if (first == "--version") {
    ehbt::cli::write_stdout("ehbt " EHBT_VERSION "\n");
    return ehbt::cli::kExitOk;
  }
  const Command* command = ehbt::cli::find_command(first);
  if (!command) {
    std::fprintf(stderr, "ehbt: unknown command '%s'; %s\n", first.c_str(),
                 general_usage().c_str());
    return ehbt::cli::kExitUnusable;
  }
  return command->run(*command, std::span(args).subspan(1));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ehbt: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ehbt: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ehbt: internal error\n");
  }
  return ehbt::cli::kExitUnusable;
}
