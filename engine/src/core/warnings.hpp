// SPDX-License-Identifier: Apache-2.0
// Collecting a target's warnings: each said once, whichever step of opening it found it.
#pragma once

#include <string>
#include <vector>

#include "ehbt/core.hpp"

namespace ehbt::core {

// Appends `w` unless the same warning (kind, path and message) is already there.
void add_warning(std::vector<Warning>& list, Warning w);

// The last path component ("libc.so.6" for "/usr/lib/x86_64-linux-gnu/libc.so.6").
std::string base_name(const std::string& path);

}  // namespace ehbt::core
