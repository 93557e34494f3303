// SPDX-License-Identifier: Apache-2.0
// Where a module a minidump names by soname alone lies (see library_path.cpp).
#pragma once

#include <string>

#include "ehbt/core.hpp"

namespace ehbt::minidump {

// The path of the library `name` names ("libc.so.6" -> "/lib/x86_64-linux-gnu/libc.so.6"),
// as the target would name it (sysroots are applied later, by the resolver); `name` itself
// when it is a path already, not a file name, or found nowhere; "[vdso]" for the vDSO's
// soname (linux-vdso.so.1, linux-gate.so.1), which names no file.
std::string library_path(const std::string& name, Arch arch, const TargetOptions& options);

}  // namespace ehbt::minidump
