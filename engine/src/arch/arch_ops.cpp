// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the per-architecture operations and the dispatch by Arch.
#include "arch/arch_ops.hpp"

#include <array>
#include <cstring>

namespace ehbt::arch {

uint64_t ArchOps::word_at(const std::byte* block, unsigned index) const {
  const unsigned size = info_->address_size;
  const std::byte* p = block + static_cast<std::size_t>(index) * size;
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) {
    unsigned idx = info_->big_endian ? i : size - 1 - i;
    v = (v << 8) | std::to_integer<uint64_t>(p[idx]);
  }
  return v;
}

Expected<ArchOps::FrameRecord, RecoverFailure> ArchOps::read_frame_record(const RegisterSet& regs,
                                                                          Memory& mem,
                                                                          uint16_t fp_reg) const {
  if (!regs.has(fp_reg)) return unexpected(not_applicable("frame pointer unknown"));
  const uint64_t fp = regs.raw(fp_reg);
  const uint64_t word = info_->address_size;
  if (fp == 0) return unexpected(not_applicable("frame pointer is 0"));
  if (fp % word != 0) return unexpected(not_applicable("frame pointer is misaligned"));
  if (regs.has(info_->sp_reg) && fp < regs.raw(info_->sp_reg)) {
    return unexpected(not_applicable("frame pointer below the stack pointer"));
  }
  if (fp > UINT64_MAX - 2 * word) return unexpected(not_applicable("frame pointer at the top"));
  std::array<std::byte, 16> rec;
  const std::span<std::byte> two_words(rec.data(), 2 * word);
  if (!mem.read_exact(fp, two_words)) return unexpected(fault(fp, two_words.size()));
  return FrameRecord{fp, word_at(rec.data(), 0), word_at(rec.data(), 1)};
}

bool ArchOps::code_at(Memory& mem, uint64_t pc, std::span<const uint8_t> code) {
  std::array<std::byte, 16> buf;
  if (code.empty() || code.size() > buf.size()) return false;
  const std::span<std::byte> got(buf.data(), code.size());
  return mem.read_exact(pc, got) && std::memcmp(got.data(), code.data(), code.size()) == 0;
}

RegisterSet ArchOps::keep_callee_saved(const RegisterSet& regs) const {
  RegisterSet out(info_->arch);
  copy_callee_saved(regs, out);
  return out;
}

const ArchOps& arch_ops(Arch arch) {
  switch (arch) {
    case Arch::AArch64:
      return aarch64_ops();
    case Arch::S390x:
      return s390x_ops();
    case Arch::I386:
      return i386_ops();
    case Arch::X86_64:
      break;
  }
  return x86_64_ops();
}

}  // namespace ehbt::arch
