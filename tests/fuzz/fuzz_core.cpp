// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an ELF core file. open_core maps a path, so the input
// goes into an in-memory file (memfd) named through /proc/self/fd; no file is left behind.
// Every thread of a core that opens is unwound with a small frame cap. No sysroot and no
// executable are given: module files named by the core are looked up as the core says, and a
// fuzzed path that exists on this machine is just another image to parse.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"

namespace {

// One memfd reused for every input (truncated and rewritten): creating one per input would
// churn file descriptors for nothing.
int input_fd() {
  static int fd = memfd_create("ehbt-fuzz-core", MFD_CLOEXEC);
  return fd;
}

bool write_all(int fd, const uint8_t* data, size_t size) {
  if (ftruncate(fd, 0) != 0) return false;
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  const int fd = input_fd();
  if (fd < 0 || !write_all(fd, data, size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  TargetOptions options;
  options.sysroots = {"/nonexistent-ehbt-fuzz-sysroot"};
  options.limits.max_frames = 32;
  options.limits.max_modules = 64;
  options.limits.max_symbols = 1u << 16;
  options.limits.max_image_bytes = 4u << 20;
  options.limits.max_index_entries = 1u << 16;
  auto target = open_core(path, options);
  if (!target) return 0;
  Target& t = **target;
  Unwinder unwinder(options.limits);
  size_t n = 0;
  for (const ThreadState& th : t.threads()) {
    if (++n > 16) break;
    Backtrace bt = unwinder.unwind(th.regs, t.memory(), t.modules());
    for (const Frame& f : bt.frames) (void)t.modules().find(f.pc);
  }
  return 0;
}
