// SPDX-License-Identifier: Apache-2.0
// The C++ half of the live unwinding chain (see unwind_live_chain.hpp).
#include "support/unwind_live_chain.hpp"

namespace ehbt::test {
namespace {

template <int N>
__attribute__((noinline)) int level(int depth, ehbt_leaf_fn leaf, void* arg) {
  int r;
  if constexpr (N == 0) {
    r = ehbt_live_c_drap(depth + 5, leaf, arg);
  } else {
    r = level<N - 1>(depth + 1, leaf, arg);
  }
  asm volatile("" : : : "memory");  // keeps the call from becoming a tail call
  return r + N;
}

}  // namespace

__attribute__((noinline)) int live_chain(ehbt_leaf_fn leaf, void* arg) {
  int r = ehbt_live_c_middle(1, leaf, arg);
  asm volatile("" : : : "memory");
  return r - 1;
}

}  // namespace ehbt::test

extern "C" __attribute__((noinline)) int ehbt_live_cxx_inner(int depth, ehbt_leaf_fn leaf,
                                                             void* arg) {
  int r = ehbt::test::level<2>(depth, leaf, arg);
  asm volatile("" : : : "memory");
  return r + 7;
}
