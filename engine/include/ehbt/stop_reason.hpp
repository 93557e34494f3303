// SPDX-License-Identifier: Apache-2.0
// Why a walk ended. Its own header so that the table parsers (which map their errors to a
// reason) need not include the unwinder's; ehbt/unwinder.hpp includes it.
#pragma once

#include <cstdint>
#include <string_view>

namespace ehbt {

enum class StopReason : uint8_t {
  Outermost,      // the return address rule is Undefined: the bottom of the stack
  MaxFrames,      // Limits::max_frames reached
  NoModule,       // the pc lies in no known module
  NoUnwindInfo,   // no table covers the pc and no fallback applied
  MemoryFault,    // a needed target read failed
  BadUnwindInfo,  // the table is malformed
  Unsupported,    // valid but deliberately not evaluated
  NoProgress,     // the step did not move (CFA did not increase, or a (pc, cfa) repeated)
  BadPc,          // the caller pc is zero, non-canonical or outside executable code
};
std::string_view to_string(StopReason reason);

}  // namespace ehbt
