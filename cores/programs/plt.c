// SPDX-License-Identifier: Apache-2.0
/* make-cores.sh runs this under GDB, stops on the first instruction of getppid's lazy-binding
 * .plt slot on its first call (from fx_plt_caller), and writes the core with gcore. The
 * unwinder must use the .plt FDE (x86-64: a DW_CFA_def_cfa_expression keyed on the pc). */
#include <unistd.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_plt_caller(int n) {
  fx_sink = n + (int)getppid();
  FX_KEEP();
}

FX_NOINLINE void fx_plt_outer(int n) {
  fx_plt_caller(n + 1);
  FX_KEEP();
}

int main(void) {
  fx_plt_outer(1);
  return 0;
}
