// SPDX-License-Identifier: Apache-2.0
/* The plain case: main -> fx_level1 -> fx_level2 -> fx_level3, which writes through a null
 * pointer. Built as a normal PIE, as static, static-pie, stripped, and (with FX_VARIANT) as a
 * rebuilt variant whose build-id differs. */
#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_level3(int depth) {
  fx_sink = depth;
  fx_null_write(depth);
  FX_KEEP();
}

#ifdef FX_VARIANT
/* A different source line and a different name: if a tool used this file for the original
 * core, the name would show. */
FX_NOINLINE void fx_level2_variant(int depth) {
  fx_sink = depth * 3;
  fx_level3(depth + 1);
  FX_KEEP();
}
#define fx_level2 fx_level2_variant
#else
FX_NOINLINE void fx_level2(int depth) {
  fx_level3(depth + 1);
  FX_KEEP();
}
#endif

FX_NOINLINE void fx_level1(int depth) {
  fx_level2(depth + 1);
  FX_KEEP();
}

int main(void) {
  fx_level1(1);
  return 0;
}
