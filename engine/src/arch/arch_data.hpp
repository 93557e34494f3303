// SPDX-License-Identifier: Apache-2.0
// Each architecture's ArchInfo, defined in its own file (x86_64.cpp, aarch64.cpp, s390x.cpp,
// i386.cpp) with the rest of what is known about it; arch_info.cpp hands them out by Arch.
#pragma once

#include "ehbt/arch.hpp"

namespace ehbt::arch {

extern const ArchInfo kX86_64Info;
extern const ArchInfo kAArch64Info;
extern const ArchInfo kS390xInfo;
extern const ArchInfo kI386Info;

}  // namespace ehbt::arch
