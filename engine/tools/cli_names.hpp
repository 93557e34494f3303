// SPDX-License-Identifier: Apache-2.0
// The names the CLI prints: stop reasons and frame sources (the ehbt-backtrace/1 vocabulary),
// signal codes, and DWARF register names per architecture.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ehbt/arch.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::cli {

// Exactly the strings docs/formats.md lists for `stop_reason` and `source`.
std::string_view stop_reason_name(StopReason reason);
std::string_view frame_source_name(FrameSource source);

// "SEGV_MAPERR", "SI_TKILL", ...; "" when the code means nothing known for this signal.
std::string_view signal_code_name(int signo, int code);

// The DWARF register `reg` of `arch` by its assembler name ("rsp", "x29", "sp", "r15").
// Numbers without a name print as "reg<N>".
std::string register_name(Arch arch, uint16_t reg);

}  // namespace ehbt::cli
