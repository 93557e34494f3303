// SPDX-License-Identifier: Apache-2.0
// A call chain of noinline C and C++ functions for the live (in-process) unwinding tests,
// built with -O2 -fomit-frame-pointer -fasynchronous-unwind-tables (tests/CMakeLists.txt):
//   live_chain -> ehbt_live_c_middle (C) -> ehbt_live_cxx_inner -> level<2> -> level<1>
//   -> level<0> -> ehbt_live_c_drap (C, realigns its stack through DRAP) -> leaf(arg)
#pragma once

extern "C" {
typedef void (*ehbt_leaf_fn)(void*);
int ehbt_live_c_middle(int depth, ehbt_leaf_fn leaf, void* arg);
int ehbt_live_c_drap(int n, ehbt_leaf_fn leaf, void* arg);
int ehbt_live_cxx_inner(int depth, ehbt_leaf_fn leaf, void* arg);
// 1 when the C half was built by gcc, whose ehbt_live_c_drap realigns through DRAP.
extern const int ehbt_live_chain_uses_drap;
}

namespace ehbt::test {
int live_chain(ehbt_leaf_fn leaf, void* arg);
}
