// SPDX-License-Identifier: Apache-2.0
/* Shared helpers for the fixture programs: every function that must appear as its own frame is
 * noinline, and calls are followed by a compiler barrier so -O2 cannot turn them into tail
 * calls (a sibling call would remove the caller's frame from the real stack). */
#ifndef EHBT_FIXTURE_H
#define EHBT_FIXTURE_H

#ifdef __cplusplus
#define FX_EXTERN_C extern "C"
#else
#define FX_EXTERN_C
#endif

#define FX_NOINLINE __attribute__((noinline, noclone))
/* Keeps the caller's frame alive after a call and stops the optimizer from merging code. */
#define FX_KEEP() __asm__ volatile("" ::: "memory")

/* Writes through a null pointer the optimizer cannot see through: SIGSEGV at a known place. */
static inline void fx_null_write(int value) {
  int* target = 0;
  __asm__("" : "+r"(target)); /* hide the null from the optimizer, which would drop the store */
  *(volatile int*)target = value;
}

#endif
