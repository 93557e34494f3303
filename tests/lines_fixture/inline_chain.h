// SPDX-License-Identifier: Apache-2.0
// The innermost level of the inline chain, in a header of its own: its call site and its own
// line are in different files (tests/unit/lines_dwarf_test.cpp reads the LINE: markers).
#pragma once

// Keeps the return address of its call: the pc a caller frame is looked up at (minus one).
void lines_capture(int slot);

static inline __attribute__((always_inline)) int level3(int x) {
  lines_capture(0); /* LINE:level3_call */
  return x * 3 + VARIANT;
}
