// SPDX-License-Identifier: Apache-2.0
// What the whole-target fuzzers share (fuzz_core, fuzz_minidump): the input written to an
// in-memory file (memfd, named through /proc/self/fd: open_core maps a path, and no file is
// left behind), opened as `ehbt core` opens it, and every thread unwound with small caps. No
// sysroot and no executable are given: module files named by the input are looked up as
// named, and a fuzzed path that exists on this machine is just another image to parse.
// Header-only: each fuzz_*.cpp is built alone (tests/fuzz/CMakeLists.txt, the replay tests).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::fuzz {

// Caps small enough that one input stays fast and small, large enough to reach every stage.
inline TargetOptions small_target_options() {
  TargetOptions options;
  options.sysroots = {"/nonexistent-ehbt-fuzz-sysroot"};
  options.limits.max_frames = 32;
  options.limits.max_modules = 64;
  options.limits.max_symbols = 1u << 16;
  options.limits.max_image_bytes = 4u << 20;
  options.limits.max_index_entries = 1u << 16;
  // A compressed core's decoder window: far below libFuzzer's -malloc_limit_mb (targets.sh),
  // so a frame asking for more is refused by the engine's cap, which is what is under test,
  // rather than reported as the fuzzer's out-of-memory (a zstd frame declaring a 256 MiB
  // window, within the default cap of 512 MiB, made a 302 MB allocation).
  options.limits.max_decompressor_memory = 16u << 20;
  return options;
}

// The input as a file: one memfd per fuzzer, reused for every input (truncated and rewritten:
// creating one per input would churn file descriptors for nothing). Empty on failure.
inline std::string input_as_file(const char* name, const uint8_t* data, size_t size) {
  static const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0) return {};
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) return {};
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

// Opens the file as a target and unwinds at most 16 of its threads, looking up each frame's
// module as the report would.
inline void open_and_walk(const std::string& path, const TargetOptions& options) {
  if (path.empty()) return;
  auto target = open_core(path, options);
  if (!target) return;
  Target& t = **target;
  Unwinder unwinder(options.limits);
  size_t n = 0;
  for (const ThreadState& th : t.threads()) {
    if (++n > 16) break;
    Backtrace bt = unwinder.unwind(th.regs, t.memory(), t.modules());
    for (const Frame& f : bt.frames) (void)t.modules().find(f.pc);
  }
}

}  // namespace ehbt::fuzz
