// SPDX-License-Identifier: Apache-2.0
/* Runaway recursion until the stack overflows (SIGSEGV). Each level keeps a 256-byte buffer
 * so the stack (make-cores.sh runs it with a small stack limit) fills after a few thousand
 * frames. */
#include <string.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE int fx_recurse(int depth) {
  volatile char pad[256];
  if (fx_sink == -1) return 0; /* never true; keeps -Winfinite-recursion quiet */
  memset((char*)pad, depth & 0x7f, sizeof pad);
  int r = fx_recurse(depth + 1);
  FX_KEEP();
  return r + pad[depth & 0xff];
}

int main(void) {
  fx_sink = fx_recurse(0);
  return 0;
}
