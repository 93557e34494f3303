// SPDX-License-Identifier: Apache-2.0
// SFrame ABI ids and the architectures they name (see sframe.hpp).
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

std::optional<Abi> abi_for(Arch arch, bool big_endian) {
  switch (arch) {
    case Arch::X86_64:
      return Abi::Amd64Little;
    case Arch::AArch64:
      return big_endian ? Abi::Aarch64Big : Abi::Aarch64Little;
    case Arch::S390x:
      return Abi::S390xBig;
    case Arch::I386:
      return std::nullopt;
  }
  return Abi::Amd64Little;
}

}  // namespace ehbt::sframe
