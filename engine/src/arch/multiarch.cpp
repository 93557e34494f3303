// SPDX-License-Identifier: Apache-2.0
#include "arch/multiarch.hpp"

namespace ehbt::arch {

std::string_view multiarch_name(Arch arch) {
  switch (arch) {
    case Arch::X86_64:
      return "x86_64-linux-gnu";
    case Arch::AArch64:
      return "aarch64-linux-gnu";
    case Arch::S390x:
      return "s390x-linux-gnu";
    case Arch::I386:
      return "i386-linux-gnu";
  }
  return "";
}

}  // namespace ehbt::arch
