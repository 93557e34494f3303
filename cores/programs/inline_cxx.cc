// SPDX-License-Identifier: Apache-2.0
/* Source lines and inlined frames in C++ (#28): a member function of a class template and a
 * function template called with a lambda, all inlined into fx_cxx_crash, which a function
 * template instance calls. GDB shows the inlined frames with their demangled names. */
#include "fixture.h"

namespace fx {

template <typename T>
struct Box {
  T value;
  __attribute__((always_inline)) inline void poke() const {
    fx_null_write(static_cast<int>(value));
  }
};

template <typename F>
__attribute__((always_inline)) inline void apply(F f, int v) {
  f(v + 1);
  FX_KEEP();
}

}  // namespace fx

FX_NOINLINE void fx_cxx_crash(int v) {
  fx::apply(
      [](int x) __attribute__((always_inline)) { fx::Box<long>{x}.poke(); }, v);
  FX_KEEP();
}

template <typename T>
FX_NOINLINE void fx_cxx_outer(T v) {
  fx_cxx_crash(static_cast<int>(v) + 2);
  FX_KEEP();
}

int main() {
  fx_cxx_outer<short>(1);
  FX_KEEP();
  return 0;
}
