// SPDX-License-Identifier: Apache-2.0
/* The return address of fx_noreturn_last's call to abort() lies just past the function's end:
 * the call is its last instruction (make-cores.sh checks the disassembly). An unwinder that
 * looks the caller's pc up without subtracting one finds the next function or nothing. */
#include <stdlib.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_noreturn_last(int value) {
  fx_sink = value;
  abort();
}

/* Placed right after fx_noreturn_last in the source, so usually right after it in .text. */
FX_NOINLINE int fx_after_noreturn(int value) {
  fx_sink = value + 1;
  return fx_sink * 2;
}

FX_NOINLINE void fx_noreturn_caller(int value) {
  fx_noreturn_last(value + 1);
}

int main(int argc, char** argv) {
  (void)argv;
  if (argc > 5) fx_after_noreturn(argc);
  fx_noreturn_caller(argc);
  return 0;
}
