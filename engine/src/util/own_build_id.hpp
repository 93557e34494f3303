// SPDX-License-Identifier: Apache-2.0
// The build-id of the object this code is linked into (the static `ehbt`, or the shared
// library the Python module, and so the debugger plugins and ehbt-triage, load). Caches of
// what the engine computed from an input (lines/answer_cache.hpp) are keyed by it: another
// build of the engine may compute something else, and its answers are not taken for ours.
#pragma once

#include <string>

namespace ehbt::util {

// Lowercase hex; "" when the object carries no GNU build-id note (linked without
// --build-id): then nothing keyed by it is kept.
const std::string& own_build_id();

}  // namespace ehbt::util
