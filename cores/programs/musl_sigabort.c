// SPDX-License-Identifier: Apache-2.0
/* Linked statically against musl (musl-gcc -static), whose objects carry no CFI at all: a
 * SIGUSR1 handler, entered while musl's raise() runs, calls abort(). The walk must cross
 * musl's abort and raise (no table: frame pointers or a stack scan), the kernel's signal
 * frame (__restore_rt, recognised by its bytes), musl's raise again, and back to _start. */
#include <signal.h>
#include <stdlib.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE void fx_musl_die(int sig) {
  fx_sink = sig;
  abort();
}

FX_NOINLINE void fx_musl_handler(int sig) {
  fx_musl_die(sig + 100);
  FX_KEEP();
}

FX_NOINLINE void fx_musl_sender(void) {
  fx_sink = 1;
  raise(SIGUSR1);
  FX_KEEP();
}

int main(void) {
  signal(SIGUSR1, fx_musl_handler);
  fx_musl_sender();
  FX_KEEP();
  return 0;
}
