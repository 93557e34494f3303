// SPDX-License-Identifier: Apache-2.0
/* A makecontext/swapcontext coroutine whose stack is a static array in .bss crashes inside the
 * coroutine: fx_co_body -> fx_co_crash writes through a null pointer. makecontext plants
 * __start_context as the coroutine function's return address: the first instruction of a
 * function, which no call precedes, and which glibc marks outermost (its CFI leaves the
 * return address undefined). The walk must end there, not run on into .bss. */
#include <ucontext.h>

#include "fixture.h"

volatile int fx_sink;
static ucontext_t fx_main_ctx, fx_co_ctx;
static char fx_co_stack[64 * 1024] __attribute__((aligned(16)));

FX_NOINLINE void fx_co_crash(int depth) {
  fx_sink = depth;
  fx_null_write(depth);
  FX_KEEP();
}

FX_NOINLINE void fx_co_body(void) {
  fx_co_crash(1);
  FX_KEEP();
}

int main(void) {
  getcontext(&fx_co_ctx);
  fx_co_ctx.uc_stack.ss_sp = fx_co_stack;
  fx_co_ctx.uc_stack.ss_size = sizeof fx_co_stack;
  fx_co_ctx.uc_link = &fx_main_ctx;
  makecontext(&fx_co_ctx, fx_co_body, 0);
  swapcontext(&fx_main_ctx, &fx_co_ctx);
  return fx_sink;
}
