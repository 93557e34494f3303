// SPDX-License-Identifier: Apache-2.0
// ArchInfo by Arch, ELF machine or name. The facts themselves are in each architecture's file;
// the DWARF numbers come from each psABI's register mapping.
#include "arch/arch_data.hpp"

namespace ehbt {

const ArchInfo& arch_info(Arch arch) {
  switch (arch) {
    case Arch::AArch64:
      return arch::kAArch64Info;
    case Arch::S390x:
      return arch::kS390xInfo;
    case Arch::I386:
      return arch::kI386Info;
    case Arch::X86_64:
      break;
  }
  return arch::kX86_64Info;
}

std::optional<Arch> arch_from_elf_machine(uint16_t machine) {
  for (Arch a : {Arch::X86_64, Arch::AArch64, Arch::S390x, Arch::I386}) {
    if (arch_info(a).elf_machine == machine) return a;
  }
  return std::nullopt;
}

std::optional<Arch> arch_from_name(std::string_view name) {
  for (Arch a : {Arch::X86_64, Arch::AArch64, Arch::S390x, Arch::I386}) {
    if (arch_info(a).name == name) return a;
  }
  if (name == "amd64" || name == "x86-64") return Arch::X86_64;
  if (name == "arm64") return Arch::AArch64;
  if (name == "i686" || name == "x86") return Arch::I386;
  return std::nullopt;
}

}  // namespace ehbt
