// Shared helpers of the per-architecture operations and the dispatch by Arch.
#include "arch/arch_ops.hpp"

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
    case Arch::X86_64:
      break;
  }
  return x86_64_ops();
}

}  // namespace ehbt::arch
