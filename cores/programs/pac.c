// SPDX-License-Identifier: Apache-2.0
/* AArch64 with pointer authentication (-mbranch-protection=standard, run under
 * qemu-aarch64 -cpu max): every fixture function signs its return address (paciasp) before
 * saving it, so the saved values carry a PAC in their top bits, and the CFI says so with
 * DW_CFA_AARCH64_negate_ra_state. The unwinder must strip the code before using them. */
#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_pac_crash(int n) {
  fx_sink = n;
  fx_null_write(n);
  FX_KEEP();
}

FX_NOINLINE void fx_pac_middle(int n) {
  fx_pac_crash(n + 1);
  FX_KEEP();
}

FX_NOINLINE void fx_pac_outer(int n) {
  fx_pac_middle(n + 1);
  FX_KEEP();
}

int main(void) {
  fx_pac_outer(1);
  return 0;
}
