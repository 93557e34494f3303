// SPDX-License-Identifier: Apache-2.0
// Name tables. Register numbers follow the DWARF register mappings of the x86-64 psABI, the
// AArch64 DWARF ABI (aadwarf64), the s390x ELF ABI and the i386 psABI; signal codes follow
// <signal.h>.
#include "cli_names.hpp"

#include <signal.h>

#include <array>

namespace ehbt::cli {

// The engine owns these names (docs/formats.md lists them); the CLI only forwards.
std::string_view stop_reason_name(StopReason reason) {
  return to_string(reason);
}

std::string_view frame_source_name(FrameSource source) {
  return to_string(source);
}

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

namespace {

std::string x86_64_register(uint16_t reg) {
  static constexpr std::array<std::string_view, 17> kGpr{"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                                         "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                         "r12", "r13", "r14", "r15", "rip"};
  if (reg < kGpr.size()) return std::string(kGpr[reg]);
  if (reg >= 17 && reg <= 32) return "xmm" + std::to_string(reg - 17);
  if (reg >= 33 && reg <= 40) return "st" + std::to_string(reg - 33);
  if (reg >= 41 && reg <= 48) return "mm" + std::to_string(reg - 41);
  switch (reg) {
    case 49:
      return "rflags";
    case 50:
      return "es";
    case 51:
      return "cs";
    case 52:
      return "ss";
    case 53:
      return "ds";
    case 54:
      return "fs";
    case 55:
      return "gs";
    case 58:
      return "fs.base";
    case 59:
      return "gs.base";
    default:
      return "reg" + std::to_string(reg);
  }
}

// i386 psABI numbering (GCC and GDB agree): 0-7 gprs, 8 eip, 9 eflags, 11-18 st0-st7,
// 21-28 xmm0-xmm7, 29-36 mm0-mm7, 40-45 es cs ss ds fs gs.
std::string i386_register(uint16_t reg) {
  static constexpr std::array<std::string_view, 10> kGpr{"eax", "ecx", "edx", "ebx", "esp",
                                                         "ebp", "esi", "edi", "eip", "eflags"};
  static constexpr std::array<std::string_view, 6> kSeg{"es", "cs", "ss", "ds", "fs", "gs"};
  if (reg < kGpr.size()) return std::string(kGpr[reg]);
  if (reg >= 11 && reg <= 18) return "st" + std::to_string(reg - 11);
  if (reg >= 21 && reg <= 28) return "xmm" + std::to_string(reg - 21);
  if (reg >= 29 && reg <= 36) return "mm" + std::to_string(reg - 29);
  if (reg >= 40 && reg <= 45) return std::string(kSeg[reg - 40]);
  return "reg" + std::to_string(reg);
}

std::string aarch64_register(uint16_t reg) {
  if (reg <= 30) return "x" + std::to_string(reg);
  if (reg >= 64 && reg <= 95) return "v" + std::to_string(reg - 64);
  switch (reg) {
    case 31:
      return "sp";
    case 32:
      return "pc";
    case 33:
      return "elr_mode";
    case 34:
      return "ra_sign_state";
    case 46:
      return "vg";
    default:
      return "reg" + std::to_string(reg);
  }
}

std::string s390x_register(uint16_t reg) {
  // DWARF 16-31 are the floating-point registers in the ABI's interleaved order.
  static constexpr std::array<int, 16> kFpr{0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
  if (reg <= 15) return "r" + std::to_string(reg);
  if (reg <= 31) return "f" + std::to_string(kFpr[reg - 16]);
  if (reg <= 47) return "cr" + std::to_string(reg - 32);
  if (reg <= 63) return "a" + std::to_string(reg - 48);
  if (reg == 64) return "pswm";
  if (reg == 65) return "pswa";
  return "reg" + std::to_string(reg);
}

}  // namespace

std::string register_name(Arch arch, uint16_t reg) {
  switch (arch) {
    case Arch::X86_64:
      return x86_64_register(reg);
    case Arch::AArch64:
      return aarch64_register(reg);
    case Arch::S390x:
      return s390x_register(reg);
    case Arch::I386:
      return i386_register(reg);
  }
  return "reg" + std::to_string(reg);
}

}  // namespace ehbt::cli
