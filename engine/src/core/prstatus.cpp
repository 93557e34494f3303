// SPDX-License-Identifier: Apache-2.0
// Per-architecture decoding of elf_gregset_t into DWARF-numbered registers.
#include "core/prstatus.hpp"

#include "core/byte_order.hpp"

namespace ehbt::core {
namespace {

// x86-64 user_regs_struct word index of each DWARF register 0-15 (rax rdx rcx rbx rsi rdi rbp
// rsp r8-r15). The struct order is r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
// orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
constexpr unsigned kX86DwarfToWord[16] = {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0};
constexpr unsigned kX86Rip = 16;
constexpr unsigned kX86Words = 27;

// i386 user_regs_struct (/usr/i686-linux-gnu/include/sys/user.h), u32 each: ebx ecx edx esi
// edi ebp eax xds xes xfs xgs orig_eax eip xcs eflags esp xss. Word index of DWARF 0-7 (eax
// ecx edx ebx esp ebp esi edi) and of eflags (DWARF 9).
constexpr unsigned kI386DwarfToWord[8] = {6, 1, 2, 0, 15, 5, 3, 4};
constexpr unsigned kI386Eip = 12;
constexpr unsigned kI386Eflags = 14;
constexpr unsigned kI386Words = 17;

// aarch64 user_pt_regs: regs[31] (x0-x30), sp, pc, pstate.
constexpr unsigned kA64Sp = 31;
constexpr unsigned kA64Pc = 32;
constexpr unsigned kA64Words = 34;

// s390x s390_regs: psw {mask, addr}, gprs[16], acrs[16] (4 bytes each), orig_gpr2.
constexpr unsigned kS390PswAddr = 8;
constexpr unsigned kS390Gprs = 16;
constexpr unsigned kS390Size = 16 + 16 * 8 + 16 * 4 + 8;

}  // namespace

std::size_t gregset_size(Arch arch) {
  switch (arch) {
    case Arch::X86_64:
      return kX86Words * 8;
    case Arch::AArch64:
      return kA64Words * 8;
    case Arch::S390x:
      return kS390Size;
    case Arch::I386:
      return kI386Words * 4;
  }
  return 0;
}

std::optional<RegisterSet> decode_gregset(Arch arch, std::span<const std::byte> bytes,
                                          bool big_endian) {
  if (bytes.size() < gregset_size(arch)) return std::nullopt;
  ByteView v(bytes, big_endian);
  RegisterSet regs(arch);
  switch (arch) {
    case Arch::X86_64:
      for (uint16_t r = 0; r < 16; ++r) regs.set(r, v.u64(8 * kX86DwarfToWord[r]));
      regs.set_pc(v.u64(8 * kX86Rip));
      break;
    case Arch::AArch64:
      for (uint16_t r = 0; r <= 30; ++r) regs.set(r, v.u64(8 * r));
      regs.set(31, v.u64(8 * kA64Sp));
      regs.set_pc(v.u64(8 * kA64Pc));
      break;
    case Arch::S390x:
      for (uint16_t r = 0; r < 16; ++r) regs.set(r, v.u64(kS390Gprs + 8 * r));
      regs.set_pc(v.u64(kS390PswAddr));
      break;
    case Arch::I386:
      for (uint16_t r = 0; r < 8; ++r) regs.set(r, v.u32(4 * kI386DwarfToWord[r]));
      regs.set(9, v.u32(4 * kI386Eflags));
      regs.set_pc(v.u32(4 * kI386Eip));
      break;
  }
  if (!v.ok()) return std::nullopt;
  return regs;
}

std::optional<PrStatus> decode_prstatus(Arch arch, std::span<const std::byte> desc,
                                        bool big_endian) {
  const bool is32 = arch_info(arch).address_size == 4;
  const std::size_t reg_off = is32 ? kPrReg32 : kPrReg;
  if (desc.size() < reg_off + gregset_size(arch)) return std::nullopt;
  ByteView v(desc, big_endian);
  PrStatus st;
  st.info_signo = v.s32(kPrInfoSigno);
  st.info_code = v.s32(kPrInfoCode);
  st.cursig = v.s16(kPrCursig);
  st.pid = v.s32(is32 ? kPrPid32 : kPrPid);
  auto regs = decode_gregset(arch, desc.subspan(reg_off), big_endian);
  if (!regs || !v.ok()) return std::nullopt;
  st.regs = *regs;
  return st;
}

}  // namespace ehbt::core
