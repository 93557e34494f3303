// SPDX-License-Identifier: Apache-2.0
// DWARF register names per architecture. Register numbers follow the DWARF register mappings
// of the x86-64 psABI, the AArch64 DWARF ABI (aadwarf64), the s390x ELF ABI and the i386
// psABI; the names are the assembler's, which GDB and LLDB use too.
#include <array>

#include "ehbt/report.hpp"

namespace ehbt::report {

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

GeneralRegisters general_registers(Arch arch) {
  switch (arch) {
    case Arch::X86_64:
      return {16, "rip", "rsp"};  // rax..r15
    case Arch::AArch64:
      return {32, "pc", "sp"};  // x0..x30, sp
    case Arch::S390x:
      return {16, "pswa", "r15"};  // r0..r15
    case Arch::I386:
      return {8, "eip", "esp"};  // eax..edi
  }
  return {0, "pc", "sp"};
}

}  // namespace ehbt::report
