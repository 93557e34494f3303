// SPDX-License-Identifier: Apache-2.0
/* fx_smash_victim's saved return address is overwritten with garbage (by fx_overwrite, which
 * searches the stack above its own frame for that value), then fx_smash_crash crashes. The
 * walk must produce fx_smash_crash and fx_smash_victim, then stop early: the next return
 * address is FX_GARBAGE. */
#include <stdint.h>

#include "fixture.h"

#define FX_GARBAGE ((uintptr_t)0x4141414141414141ull)

volatile int fx_sink;

FX_NOINLINE int fx_overwrite(uintptr_t ra) {
  volatile uintptr_t here[4] = {0, 0, 0, 0};
  volatile uintptr_t* p = here;
  int hits = 0;
  for (int i = 0; i < 256; ++i) {
    if (p[i] == ra) {
      p[i] = FX_GARBAGE;
      ++hits;
    }
  }
  return hits;
}

FX_NOINLINE void fx_smash_crash(int n) {
  fx_sink = n;
  fx_null_write(n);
  FX_KEEP();
}

FX_NOINLINE void fx_smash_victim(int n) {
  uintptr_t ra = (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
  int hits = fx_overwrite(ra);
  fx_smash_crash(n + hits);
  FX_KEEP();
}

FX_NOINLINE void fx_smash_outer(int n) {
  fx_smash_victim(n + 1);
  FX_KEEP();
}

int main(void) {
  fx_smash_outer(1);
  return 0;
}
