// SPDX-License-Identifier: Apache-2.0
/* An always_inline helper in a header: its frame's file is this header, not the .c file that
 * includes it (cores/programs/inline.c). */
#ifndef EHBT_INLINE_STEPS_H
#define EHBT_INLINE_STEPS_H

#include "fixture.h"

void fx_inline_crash(int v);

static inline __attribute__((always_inline)) void fx_inline_step(int v) {
  fx_inline_crash(v * 3);
  FX_KEEP();
}

#endif
