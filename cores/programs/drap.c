// SPDX-License-Identifier: Apache-2.0
/* fx_drap_realign keeps a 64-byte-aligned local array and a variable-length array: gcc on
 * x86-64 realigns the stack through a DRAP register, and its FDE then gives the CFA as a
 * DW_CFA_def_cfa_expression (make-cores.sh checks). The crash is in a callee, so the unwinder
 * must evaluate that expression to get out of fx_drap_realign. Other architectures realign
 * through their frame pointer; the case still runs there. */
#include <string.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_drap_callee(int* aligned, char* vla, int n) {
  fx_sink = aligned[0] + vla[n - 1];
  fx_null_write(n);
  FX_KEEP();
}

FX_NOINLINE void fx_drap_realign(int n) {
  _Alignas(64) int aligned[16];
  char vla[n];
  memset(aligned, 1, sizeof aligned);
  memset(vla, 2, (size_t)n);
  fx_drap_callee(aligned, vla, n);
  FX_KEEP();
}

FX_NOINLINE void fx_drap_caller(int n) {
  fx_drap_realign(n + 16);
  FX_KEEP();
}

int main(int argc, char** argv) {
  (void)argv;
  fx_drap_caller(argc);
  return 0;
}
