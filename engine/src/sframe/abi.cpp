// SPDX-License-Identifier: Apache-2.0
// SFrame ABI ids and the architectures they name (see sframe.hpp); an architecture's own ids
// are in its ArchOps::sframe().
#include "arch/arch_ops.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::sframe {

Arch abi_arch(Abi abi) {
  switch (abi) {
    case Abi::Aarch64Big:
    case Abi::Aarch64Little:
      return Arch::AArch64;
    case Abi::Amd64Little:
      return Arch::X86_64;
    case Abi::S390xBig:
      return Arch::S390x;
  }
  return Arch::X86_64;
}

bool abi_big_endian(Abi abi) {
  return abi == Abi::Aarch64Big || abi == Abi::S390xBig;
}

// The id of the target's byte order, else the architecture's only one: the section's byte
// order is checked against its ABI when it is read.
std::optional<Abi> abi_for(Arch arch, bool big_endian) {
  const arch::SFrameRules& rules = arch::arch_ops(arch).sframe();
  uint8_t id = big_endian ? rules.abi_big : rules.abi_little;
  if (id == 0) id = big_endian ? rules.abi_little : rules.abi_big;
  if (id == 0) return std::nullopt;
  return static_cast<Abi>(id);
}

}  // namespace ehbt::sframe
