// SPDX-License-Identifier: Apache-2.0
// Per-architecture constants. The DWARF numbers come from each psABI's register mapping.
#include <elf.h>

#include "ehbt/arch.hpp"

namespace ehbt {
namespace {

// x86-64 psABI: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, RA 16.
constexpr ArchInfo kX86_64{Arch::X86_64, "x86_64", EM_X86_64, false, 8, 7, 6, 16, 33, 0, 16};
// AAPCS64: x0-x30 0-30 (x29 frame pointer, x30 link register), sp 31, d8-d15 72-79.
constexpr ArchInfo kAArch64{Arch::AArch64, "aarch64", EM_AARCH64, false, 8, 31, 29, 30, 96, 0, 16};
// s390x ELF ABI: r0-r15 0-15 (r15 stack pointer, r11 frame pointer, r14 return address),
// f0-f15 16-31; the CFA is the caller's r15 + 160 (the register save area).
constexpr ArchInfo kS390x{Arch::S390x, "s390x", EM_S390, true, 8, 15, 11, 14, 66, 160, 8};
// i386 SysV psABI (and GCC/GDB): eax 0, ecx 1, edx 2, ebx 3, esp 4, ebp 5, esi 6, edi 7,
// eip 8 (the return-address column), eflags 9. Linux keeps the stack 16-byte aligned at calls
// since gcc 4.5, but code built for the old 4-byte ABI still runs: frames keep 4.
constexpr ArchInfo kI386{Arch::I386, "i386", EM_386, false, 4, 4, 5, 8, 10, 0, 4};

}  // namespace

const ArchInfo& arch_info(Arch arch) {
  switch (arch) {
    case Arch::AArch64:
      return kAArch64;
    case Arch::S390x:
      return kS390x;
    case Arch::I386:
      return kI386;
    case Arch::X86_64:
      break;
  }
  return kX86_64;
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
