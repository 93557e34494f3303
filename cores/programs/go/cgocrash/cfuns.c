/* SPDX-License-Identifier: Apache-2.0 */
/* The C half of cgocrash (built -O2 -g by cgo). cfun3 is a frameless leaf (no push, no frame
 * pointer: a frame-pointer walk skips its caller) whose first instruction is the faulting store,
 * so the faulting pc Go's handler plants under runtime.sigpanic is cfun3's start (looked up one
 * byte back it would be in the function before). cfun2 passes it the NULL pointer read from a
 * volatile global (no constant for the compiler to fold into a trap); cfun2 and cfun1 keep work
 * after their calls so that neither call becomes a tail jump. */
#include "cfuns.h"

int* volatile fx_cgo_target; /* stays NULL: the write faults */

__attribute__((noinline)) void cfun3(int* p, int v) {
  *p = v;
}

__attribute__((noinline)) int cfun2(int v) {
  cfun3(fx_cgo_target, v * 3);
  return v + 7;
}

__attribute__((noinline)) int cfun1(int v) {
  int r = cfun2(v + 1);
  return r * 5;
}
