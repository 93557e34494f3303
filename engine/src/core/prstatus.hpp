// SPDX-License-Identifier: Apache-2.0
// NT_PRSTATUS: the per-thread record of an ELF core (struct elf_prstatus), and its register
// block (elf_gregset_t), which is also what PTRACE_GETREGSET NT_PRSTATUS returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ehbt/arch.hpp"
#include "ehbt/registers.hpp"

namespace ehbt::core {

// Offsets in struct elf_prstatus, identical on the three 64-bit ABIs (checked against
// <sys/procfs.h> of each and against real cores): elf_siginfo {signo, code, errno} at 0,
// pr_cursig at 12, pr_pid at 32, pr_reg at 112. The 4-byte longs and timevals of i386 move
// pr_pid to 24 and pr_reg to 72 (/usr/i686-linux-gnu/include/sys/procfs.h: sizeof 144).
inline constexpr std::size_t kPrInfoSigno = 0;
inline constexpr std::size_t kPrInfoCode = 4;
inline constexpr std::size_t kPrCursig = 12;
inline constexpr std::size_t kPrPid = 32;
inline constexpr std::size_t kPrReg = 112;
inline constexpr std::size_t kPrPid32 = 24;
inline constexpr std::size_t kPrReg32 = 72;

// Size of elf_gregset_t: x86-64 27 words, aarch64 34 words, s390x 216 bytes, i386 17 u32.
std::size_t gregset_size(Arch arch);

// Registers from an elf_gregset_t, by DWARF number; nothing when `bytes` is too short.
std::optional<RegisterSet> decode_gregset(Arch arch, std::span<const std::byte> bytes,
                                          bool big_endian);

struct PrStatus {
  int64_t pid = 0;
  int cursig = 0;
  int info_signo = 0;
  int info_code = 0;
  RegisterSet regs;
};

// A whole NT_PRSTATUS descriptor; nothing when it is too short for the architecture.
std::optional<PrStatus> decode_prstatus(Arch arch, std::span<const std::byte> desc,
                                        bool big_endian);

}  // namespace ehbt::core
