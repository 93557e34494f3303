// SPDX-License-Identifier: Apache-2.0
/* Source lines and inlined frames (#28): the crash is three inlined calls deep inside
 * fx_inline_crash (fx_inline_middle -> fx_inline_deepest -> fx_null_write from fixture.h),
 * fx_inline_outer calls it from fx_inline_step, an always_inline helper in a header, and main
 * calls fx_inline_outer through fx_lto_bridge -> fx_lto_inner from inline_lto.c, which only
 * link-time optimisation inlines across the file boundary. GDB then shows nine frames (three
 * physical ones above libc) where the machine stack has three; every line below that GDB
 * names is fixed by this source, so keep the layout when editing. */
#include "fixture.h"
#include "inline_steps.h"

volatile int fx_sink;

static inline __attribute__((always_inline)) void fx_inline_deepest(int v) {
  fx_sink = v;
  fx_null_write(v);
}

static inline __attribute__((always_inline)) void fx_inline_middle(int v) {
  fx_inline_deepest(v * 2);
  FX_KEEP();
}

FX_NOINLINE void fx_inline_crash(int v) {
  fx_inline_middle(v + 1);
  FX_KEEP();
}

FX_NOINLINE void fx_inline_outer(int v) {
  fx_inline_step(v + 1);
  FX_KEEP();
}

void fx_lto_bridge(int v);

int main(void) {
  fx_lto_bridge(1);
  FX_KEEP();
  return 0;
}
