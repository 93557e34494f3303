// SPDX-License-Identifier: Apache-2.0
/* Compiled with -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-omit-frame-pointer:
 * these functions have no FDE at all, only a frame pointer chain. An unwinder needs its
 * frame-pointer fallback to get from fx_nounwind_crash back to the normal code that called
 * fx_nounwind_outer. */
#include "fixture.h"

extern volatile int fx_sink;

FX_NOINLINE void fx_nounwind_touch(volatile int* pad, int n) {
  pad[n & 3] = n;
}

/* Not a leaf (it calls fx_nounwind_touch first): gcc sets up no frame pointer in a leaf that
 * needs no frame, even with -fno-omit-frame-pointer (aarch64 always omits it in leaves), and
 * then no frame-pointer walk could find fx_nounwind_outer. This case is about the chain. */
FX_NOINLINE void fx_nounwind_crash(int n) {
  volatile int pad[4];
  fx_nounwind_touch(pad, n);
  fx_sink = pad[n & 3];
  fx_null_write(n);
  FX_KEEP();
}

FX_NOINLINE void fx_nounwind_outer(int n) {
  fx_nounwind_crash(n + 1);
  FX_KEEP();
}
