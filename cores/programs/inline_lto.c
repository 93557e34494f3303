// SPDX-License-Identifier: Apache-2.0
/* The other file of cores/programs/inline.c: fx_lto_bridge is an ordinary external function
 * called once, from main in inline.c, so only -flto can inline it (and fx_lto_inner with it)
 * into main. The case checks GDB shows both as inlined frames of main. */
#include "fixture.h"

void fx_inline_outer(int v);

volatile int fx_lto_sink;

/* The store gives the call its own line-table row: without it gcc puts the call at the
 * address where main's, fx_lto_bridge's and this function's first rows all start, and the
 * debuggers then disagree on the caller's line (GDB takes the last is_stmt row there, LLDB
 * and libdw the last row). */
static inline __attribute__((always_inline)) void fx_lto_inner(int v) {
  fx_lto_sink = v;
  fx_inline_outer(v + 5);
  FX_KEEP();
}

void fx_lto_bridge(int v) {
  fx_lto_inner(v * 7);
  FX_KEEP();
}
