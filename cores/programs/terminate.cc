// SPDX-License-Identifier: Apache-2.0
// An exception escapes main: __cxa_throw finds no handler and calls std::terminate, which
// aborts. Nothing is unwound, so the throwing frames are still on the stack under the
// libstdc++ frames (terminate handler, __cxa_throw).
#include <stdexcept>

#include "fixture.h"

volatile int fx_sink;

FX_EXTERN_C FX_NOINLINE void fx_throw_it(int n) {
  fx_sink = n;
  throw std::runtime_error("fixture: escaping exception");
}

FX_EXTERN_C FX_NOINLINE void fx_throw_caller(int n) {
  fx_throw_it(n + 1);
  FX_KEEP();
}

int main() {
  fx_throw_caller(1);
  return 0;
}
