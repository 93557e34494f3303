// SPDX-License-Identifier: Apache-2.0
// A program whose calls of lines_capture() sit at known source lines, three levels of inlining
// deep (level3 in level2 in level1) and in level1 itself. It prints, per slot, the captured
// return address and where its ELF header is loaded: the test turns them into link-time pcs
// and compares the lookup with the LINE: markers. Built -O2 -g in several DWARF forms
// (tests/CMakeLists.txt). VARIANT makes two otherwise equal builds for dwz's common file.
#include <stdint.h>
#include <stdio.h>

#include "inline_chain.h"

extern const char __ehdr_start;
void* volatile captured[2];

__attribute__((noinline)) void lines_capture(int slot) {
  captured[slot] = __builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) int level2(int x) {
  int r = level3(x + 1); /* LINE:level2_call */
  return r ^ 5;
}

__attribute__((noinline)) int level1(int x) {
  int r = level2(x * 2); /* LINE:level1_call */
  lines_capture(1);      /* LINE:level1_own */
  return r + 1;
}

int main(int argc, char** argv) {
  (void)argv;
  int r = level1(argc);
  printf("%lx %lx %lx %d\n", (unsigned long)(uintptr_t)captured[0],
         (unsigned long)(uintptr_t)captured[1], (unsigned long)(uintptr_t)&__ehdr_start, r);
  return 0;
}
