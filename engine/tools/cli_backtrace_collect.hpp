// SPDX-License-Identifier: Apache-2.0
// Unwinds the selected threads of a target and describes every frame (module, offsets,
// symbol) as a BacktraceReport.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli_backtrace_report.hpp"
#include "ehbt/core.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::cli {

struct CollectOptions {
  bool all_threads = false;
  std::optional<int64_t> tid;  // only this thread
  UnwindOptions unwind;
  Limits limits;
};

// One frame as the report shows it. Symbols are looked up at frame.lookup_pc() (pc - 1 for
// return addresses) but offsets are computed from the pc itself, as GDB shows `fn+0x10c`.
// Without `with_symbol` the symbol is left for the caller to look up in a batch.
FrameLine describe_frame(const Frame& frame, uint32_t index, const ModuleSet& modules,
                         bool with_symbol = true);

// Fills everything but `core`/`pid`. Fails (one line) only when --thread names no thread.
Expected<BacktraceReport, std::string> collect_backtraces(Target& target,
                                                          const CollectOptions& options);

}  // namespace ehbt::cli
