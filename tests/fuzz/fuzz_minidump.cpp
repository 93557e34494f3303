// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a minidump. The reader first (every stream it knows,
// from the bytes alone), then, for input that starts with the MDMP signature, the whole
// target as `ehbt core` opens it (through a memfd, as fuzz_core does) and every thread
// unwound with a small frame cap. Module files named by the input are looked up as named: a
// fuzzed path that exists on this machine is just another image to parse.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"
#include "minidump/minidump_file.hpp"

namespace {

int input_fd() {
  static int fd = memfd_create("ehbt-fuzz-minidump", MFD_CLOEXEC);
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
  TargetOptions options;
  options.sysroots = {"/nonexistent-ehbt-fuzz-sysroot"};
  options.limits.max_frames = 32;
  options.limits.max_modules = 64;
  options.limits.max_symbols = 1u << 16;
  options.limits.max_image_bytes = 4u << 20;
  options.limits.max_index_entries = 1u << 16;
  options.limits.max_minidump_memory_ranges = 1024;

  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)minidump::parse_minidump(bytes, options.limits);
  if (!minidump::is_minidump(bytes)) return 0;

  const int fd = input_fd();
  if (fd < 0 || !write_all(fd, data, size)) return 0;
  auto target = open_core("/proc/self/fd/" + std::to_string(fd), options);
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
