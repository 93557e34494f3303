// SPDX-License-Identifier: Apache-2.0
/* Normal code (with .eh_frame) calling code without unwind tables (nounwind_fp.c). */
#include "fixture.h"

volatile int fx_sink;

void fx_nounwind_outer(int n);

FX_NOINLINE void fx_unwind_caller(int n) {
  fx_nounwind_outer(n + 1);
  FX_KEEP();
}

int main(void) {
  fx_unwind_caller(1);
  return 0;
}
