// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a minidump. The reader first (every stream it knows,
// from the bytes alone), then, for input that starts with the MDMP signature, the whole
// target as `ehbt core` opens it and every thread unwound (target_harness.hpp, as fuzz_core).
#include <cstddef>
#include <cstdint>
#include <span>

#include "minidump/minidump_file.hpp"
#include "target_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  TargetOptions options = fuzz::small_target_options();
  options.limits.max_minidump_memory_ranges = 1024;

  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)minidump::parse_minidump(bytes, options.limits);
  if (!minidump::is_minidump(bytes)) return 0;
  fuzz::open_and_walk(fuzz::input_as_file("ehbt-fuzz-minidump", data, size), options);
  return 0;
}
