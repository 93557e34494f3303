// SPDX-License-Identifier: Apache-2.0
// Standard Linux signal names by number (the generic numbering shared by x86-64, aarch64
// and s390x). A table rather than strsignal(): the result must not depend on the host libc
// or locale, and cores may come from another machine.
#include <array>
#include <string>
#include <string_view>

#include "ehbt/core.hpp"

namespace ehbt {
namespace {

constexpr std::array<std::string_view, 32> kNames = {
    "",          "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
    "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
    "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
    "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS",
};

}  // namespace

std::string signal_name(int number) {
  if (number > 0 && static_cast<std::size_t>(number) < kNames.size()) {
    return std::string(kNames[static_cast<std::size_t>(number)]);
  }
  return "SIG" + std::to_string(number);
}

bool signal_has_fault_address(int number) {
  // SIGILL 4, SIGTRAP 5, SIGBUS 7, SIGFPE 8, SIGSEGV 11: the same numbers on every arch ehbt
  // reads (the generic numbering).
  return number == 4 || number == 5 || number == 7 || number == 8 || number == 11;
}

}  // namespace ehbt
