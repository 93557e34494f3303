// SPDX-License-Identifier: Apache-2.0
// elf_gregset_t into DWARF-numbered registers, by the layout each architecture declares
// (ArchOps::gregset).
#include "core/prstatus.hpp"

#include "arch/arch_ops.hpp"
#include "core/byte_order.hpp"

namespace ehbt::core {
std::size_t gregset_size(Arch arch) {
  return arch::arch_ops(arch).gregset().size;
}

std::optional<RegisterSet> decode_gregset(Arch arch, std::span<const std::byte> bytes,
                                          bool big_endian) {
  const arch::GregsetLayout& layout = arch::arch_ops(arch).gregset();
  if (bytes.size() < layout.size) return std::nullopt;
  ByteView v(bytes, big_endian);
  RegisterSet regs(arch);
  for (const arch::GregSlot& slot : layout.regs)
    regs.set(slot.reg, v.u(slot.offset, layout.word_size));
  regs.set_pc(v.u(layout.pc_offset, layout.word_size));
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
