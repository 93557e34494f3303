// SPDX-License-Identifier: Apache-2.0
/* Linked statically against musl (no CFI) and stripped: a noreturn helper prints a message
 * (fputs, then fprintf) and calls abort(). The print calls leave their return addresses
 * (inside fputs, fwrite, __stdio_write...) on the stack below the helper's frame; they are not
 * callers of anything on the stack when abort runs. The real stack: musl's raise/abort, then
 * fx_fatal, fx_check, fx_outer, main, libc_start_main_stage2, _start.
 * make_nocfi_cores.py also builds it with gcc against glibc, static and stripped
 * (glibc_noreturn_print): the stale return addresses are then into fwrite and
 * _IO_new_file_xsputn, the real stack __pthread_kill_implementation, raise, abort, fx_fatal,
 * fx_check, fx_outer, main, __libc_start_call_main, __libc_start_main_impl, _start. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

volatile int fx_sink;

FX_NOINLINE __attribute__((noreturn)) void fx_fatal(const char* what, int code) {
  fputs("fatal: ", stderr);
  fprintf(stderr, "%s (%d)\n", what, code);
  abort();
}

FX_NOINLINE int fx_check(int value) {
  if (value > 0) fx_fatal("bad value", value);
  FX_KEEP();
  return value;
}

FX_NOINLINE void fx_outer(int value) {
  fx_sink = fx_check(value);
  FX_KEEP();
}

int main(int argc, char** argv) {
  (void)argv;
  fx_outer(argc + 1);
  FX_KEEP();
  return 0;
}
