// SPDX-License-Identifier: Apache-2.0
// Where a target's JIT code is: executable memory no file backs, from a core's program
// headers or a live process's maps; and the perf map that names it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/elf_core_file.hpp"
#include "ehbt/core.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::core {

using CodeRegions = std::vector<std::pair<uint64_t, uint64_t>>;

// PT_LOADs with PF_X that no NT_FILE entry overlaps (a core with a file list only: without
// one, file-backed and anonymous mappings look the same).
CodeRegions anonymous_code_from_core(const std::vector<CoreSegment>& segments,
                                     const std::vector<FileMapping>& files, const Limits& limits);

// /proc/PID/maps lines with `x` permission and no path (or an `[anon:NAME]` one).
CodeRegions anonymous_code_from_maps(const std::string& maps_text, const Limits& limits);

// Adds the regions no module covers to `modules`, and the perf map at `path` if non-empty.
// An unreadable map is a warning when `required` (the user named it), silent otherwise (the
// default /tmp/perf-PID.map of a live process need not exist).
void add_jit_code(ModuleSet& modules, const CodeRegions& regions, const std::string& perf_map,
                  bool required, const Limits& limits, std::vector<Warning>& warnings);

// A live process's JIT code: the anonymous executable mappings of its maps text, named by
// `perf_map` when one is given (unreadable: a warning), else by /tmp/perf-PID.map when it
// exists (perf's convention, not a sysroot path). What attach_process gives its target and
// add_process_jit_code a debugger plugin's module set: one rule for both.
void add_live_jit_code(ModuleSet& modules, int pid, const std::string& maps_text,
                       const std::string& perf_map, const Limits& limits,
                       std::vector<Warning>& warnings);

}  // namespace ehbt::core
