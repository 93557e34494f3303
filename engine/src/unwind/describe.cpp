// SPDX-License-Identifier: Apache-2.0
#include "unwind/describe.hpp"

#include <array>
#include <string_view>

namespace ehbt::unwind {

std::string describe_pc(uint64_t pc, const Module* module) {
  std::string out = hex(pc);
  if (module == nullptr) return out;
  std::string_view name = module->path;
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name.empty()) name = "?";
  out += " (";
  out += name;
  out += "+";
  out += hex(module->to_link(pc));
  out += ")";
  return out;
}

std::string reg_name(Arch arch, uint16_t reg) {
  static constexpr std::array<const char*, 17> kX86 = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                                       "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                       "r12", "r13", "r14", "r15", "rip"};
  static constexpr std::array<const char*, 10> kI386 = {"eax", "ecx", "edx", "ebx", "esp",
                                                        "ebp", "esi", "edi", "eip", "eflags"};
  switch (arch) {
    case Arch::X86_64:
      if (reg < kX86.size()) return kX86[reg];
      break;
    case Arch::AArch64:
      if (reg < 31) return "x" + std::to_string(reg);
      if (reg == 31) return "sp";
      if (reg >= 64 && reg < 96) return "v" + std::to_string(reg - 64);
      break;
    case Arch::S390x:
      if (reg < 16) return "r" + std::to_string(reg);
      break;
    case Arch::I386:
      if (reg < kI386.size()) return kI386[reg];
      break;
  }
  return "reg " + std::to_string(reg);
}

std::string read_failed(uint64_t addr, unsigned size) {
  return "read of " + std::to_string(size) + " bytes at " + hex(addr) + " failed";
}

}  // namespace ehbt::unwind
