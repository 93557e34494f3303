// SPDX-License-Identifier: Apache-2.0
// Where the fields of Go's runtime structures that lead from a thread's g0 back to the
// goroutine it runs for lie (runtime2.go: g.stack, g.m, g.sched; m.g0, m.curg; gobuf.sp, pc,
// bp). They move between Go versions (m.curg follows m's signal state and TLS slots), so they
// come from the binary itself: its DWARF, or its recorded Go version in a table of versions
// checked against their sources (lines/go_runtime_layout.hpp finds them).
#pragma once

#include <cstdint>
#include <string>

namespace ehbt::elf {

struct GoRuntimeLayout {
  uint64_t g_stack = 0;  // runtime.g.stack (stack{lo, hi}: two words)
  uint64_t g_m = 0;      // runtime.g.m (*m)
  uint64_t g_sched = 0;  // runtime.g.sched (gobuf)
  uint64_t m_g0 = 0;     // runtime.m.g0 (*g)
  uint64_t m_curg = 0;   // runtime.m.curg (*g)
  uint64_t gobuf_sp = 0;
  uint64_t gobuf_pc = 0;
  uint64_t gobuf_bp = 0;
  std::string source;  // "DWARF", or "go1.19.8 table": said in stop details
};

}  // namespace ehbt::elf
