// SPDX-License-Identifier: Apache-2.0
// Debian's multiarch names: the library directory /usr/lib/<multiarch> of each architecture,
// where a shared object named only by its soname (Crashpad's module names) is looked for.
#pragma once

#include <string_view>

#include "ehbt/arch.hpp"

namespace ehbt::arch {

// "x86_64-linux-gnu", "aarch64-linux-gnu", "s390x-linux-gnu", "i386-linux-gnu".
std::string_view multiarch_name(Arch arch);

}  // namespace ehbt::arch
