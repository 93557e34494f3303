// SPDX-License-Identifier: Apache-2.0
// Signals as the reports say them: si_code names (<signal.h>, Linux) and the one-line
// description "SIGSEGV, SEGV_MAPERR at 0x0".
#include <signal.h>

#include <array>

#include "ehbt/report.hpp"
#include "util/hex.hpp"

namespace ehbt::report {

std::string_view signal_code_name(int signo, int code) {
  // Codes every signal can carry (sent by a process rather than raised by the kernel).
  switch (code) {
    case SI_USER:
      return "SI_USER";
    case SI_KERNEL:
      return "SI_KERNEL";
    case SI_QUEUE:
      return "SI_QUEUE";
    case SI_TIMER:
      return "SI_TIMER";
    case SI_MESGQ:
      return "SI_MESGQ";
    case SI_ASYNCIO:
      return "SI_ASYNCIO";
    case SI_SIGIO:
      return "SI_SIGIO";
    case SI_TKILL:
      return "SI_TKILL";
    default:
      break;
  }
  switch (signo) {
    case SIGSEGV: {
      static constexpr std::array<std::string_view, 10> kNames{"",
                                                               "SEGV_MAPERR",
                                                               "SEGV_ACCERR",
                                                               "SEGV_BNDERR",
                                                               "SEGV_PKUERR",
                                                               "SEGV_ACCADI",
                                                               "SEGV_ADIDERR",
                                                               "SEGV_ADIPERR",
                                                               "SEGV_MTEAERR",
                                                               "SEGV_MTESERR"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    case SIGBUS: {
      static constexpr std::array<std::string_view, 6> kNames{
          "", "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    case SIGILL: {
      static constexpr std::array<std::string_view, 10> kNames{
          "",           "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
          "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    case SIGFPE: {
      static constexpr std::array<std::string_view, 9> kNames{
          "",           "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
          "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    case SIGTRAP: {
      static constexpr std::array<std::string_view, 5> kNames{"", "TRAP_BRKPT", "TRAP_TRACE",
                                                              "TRAP_BRANCH", "TRAP_HWBKPT"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    case SIGCHLD: {
      static constexpr std::array<std::string_view, 7> kNames{"",
                                                              "CLD_EXITED",
                                                              "CLD_KILLED",
                                                              "CLD_DUMPED",
                                                              "CLD_TRAPPED",
                                                              "CLD_STOPPED",
                                                              "CLD_CONTINUED"};
      if (code > 0 && code < static_cast<int>(kNames.size())) return kNames[code];
      break;
    }
    default:
      break;
  }
  return "";
}

std::optional<SignalLine> signal_line(int number, std::optional<int> code,
                                      std::optional<uint64_t> address,
                                      std::optional<SignalSender> sender) {
  if (number == 0) return std::nullopt;
  if (address && !signal_carries_address(number, code, *address)) address.reset();
  if (sender && !signal_carries_sender(code)) sender.reset();
  return SignalLine{number, signal_name(number), code, address, sender};
}

SignalLine signal_line(const SignalInfo& sig) {
  return SignalLine{sig.number, signal_name(sig.number), sig.code, sig.address, sig.sender};
}

std::string describe_signal(const SignalLine& sig) {
  std::string s = sig.name.empty() ? "SIG" + std::to_string(sig.number) : sig.name;
  if (sig.code) {
    std::string_view code = signal_code_name(sig.number, *sig.code);
    s += ", ";
    s += code.empty() ? "code " + std::to_string(*sig.code) : std::string(code);
  }
  if (sig.address) s += " at " + util::hex(*sig.address);
  if (sig.sender) {
    s += " sent by pid " + std::to_string(sig.sender->pid) + " (uid " +
         std::to_string(sig.sender->uid) + ")";
  }
  return s;
}

}  // namespace ehbt::report
