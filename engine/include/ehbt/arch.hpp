// SPDX-License-Identifier: Apache-2.0
// The architectures ehbt unwinds and the facts about them that are data, not code.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ehbt {

enum class Arch : uint8_t { X86_64, AArch64, S390x, I386 };

// DWARF register numbers that the unwinder needs by role.
struct ArchInfo {
  Arch arch;
  std::string_view name;  // "x86_64", "aarch64", "s390x", "i386"
  uint16_t elf_machine;   // EM_X86_64, EM_AARCH64, EM_S390, EM_386
  bool big_endian;
  uint8_t address_size;   // bytes (i386: 4)
  uint16_t sp_reg;        // DWARF number of the stack pointer
  uint16_t fp_reg;        // DWARF number of the frame pointer
  uint16_t ra_reg;        // default return-address column
  uint16_t num_regs;      // DWARF numbers below this are tracked in a RegisterSet
  int64_t cfa_sp_offset;  // caller SP = CFA - this (s390x: 160, others 0)
  uint32_t stack_align;   // CFA alignment an honest frame keeps
};

const ArchInfo& arch_info(Arch arch);
std::optional<Arch> arch_from_elf_machine(uint16_t machine);
std::optional<Arch> arch_from_name(std::string_view name);

}  // namespace ehbt
