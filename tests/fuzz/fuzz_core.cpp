// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an ELF core file, opened and walked as `ehbt core` does
// (target_harness.hpp: through a memfd, every thread unwound with a small frame cap).
#include <cstddef>
#include <cstdint>

#include "target_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ehbt::fuzz::open_and_walk(ehbt::fuzz::input_as_file("ehbt-fuzz-core", data, size),
                            ehbt::fuzz::small_target_options());
  return 0;
}
