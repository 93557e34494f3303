// SPDX-License-Identifier: Apache-2.0
/* The C half of the live unwinding chain (see unwind_live_chain.hpp). */
#include <alloca.h>
#include <string.h>

typedef void (*ehbt_leaf_fn)(void*);
int ehbt_live_cxx_inner(int depth, ehbt_leaf_fn leaf, void* arg);

/* gcc realigns through a DRAP register; clang keeps rbp as the frame base instead. */
#if defined(__GNUC__) && !defined(__clang__)
const int ehbt_live_chain_uses_drap = 1;
#else
const int ehbt_live_chain_uses_drap = 0;
#endif

/* A 64-byte aligned local plus alloca: gcc realigns the stack with a DRAP register
   (lea 0x8(%rsp),%r10; and $-64,%rsp) and describes the CFA with DW_CFA_def_cfa_expression. */
__attribute__((noinline)) int ehbt_live_c_drap(int n, ehbt_leaf_fn leaf, void* arg) {
  char aligned_buf[64] __attribute__((aligned(64)));
  char* dyn = alloca((unsigned)n + 16);
  memset(aligned_buf, n, sizeof aligned_buf);
  dyn[0] = (char)n;
  __asm__ volatile("" : : "r"(aligned_buf), "r"(dyn) : "memory");
  leaf(arg);
  __asm__ volatile("" : : : "memory");
  return aligned_buf[n & 63] + dyn[0];
}

__attribute__((noinline)) int ehbt_live_c_middle(int depth, ehbt_leaf_fn leaf, void* arg) {
  int r = ehbt_live_cxx_inner(depth + 1, leaf, arg);
  __asm__ volatile("" : : : "memory");
  return r * 3 + depth;
}
