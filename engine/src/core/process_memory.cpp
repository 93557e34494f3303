// SPDX-License-Identifier: Apache-2.0
// Reads another process's memory. process_vm_readv does not split one iovec at a fault on
// every kernel, so a read that comes back short is retried page by page to return exactly
// the readable prefix.
#include "core/process_memory.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace ehbt::core {
namespace {
constexpr uint64_t kChunk = 4096;  // never crosses a page when aligned to it
}

ProcessMemory::~ProcessMemory() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

std::size_t ProcessMemory::read_chunk(uint64_t addr, std::span<std::byte> out) {
  if (vm_readv_ok_) {
    iovec local{out.data(), out.size()};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), out.size()};
    ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EFAULT || errno == EIO) return 0;
    if (errno != ENOSYS && errno != EPERM) return 0;
    vm_readv_ok_ = false;  // not available here: use /proc/PID/mem from now on
  }
  if (mem_fd_ < 0) {
    std::string path = "/proc/" + std::to_string(pid_) + "/mem";
    mem_fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return 0;
  }
  if (addr > static_cast<uint64_t>(INT64_MAX)) return 0;  // beyond off_t
  ssize_t n = pread(mem_fd_, out.data(), out.size(), static_cast<off_t>(addr));
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

std::size_t ProcessMemory::read(uint64_t addr, std::span<std::byte> out) {
  if (out.empty()) return 0;
  std::size_t got = read_chunk(addr, out);
  if (got == out.size()) return got;
  // Short: find the readable prefix page by page.
  std::size_t done = 0;
  while (done < out.size()) {
    uint64_t a = addr + done;
    if (a < addr) break;
    std::size_t n =
        static_cast<std::size_t>(std::min<uint64_t>(out.size() - done, kChunk - (a % kChunk)));
    std::size_t r = read_chunk(a, out.subspan(done, n));
    done += r;
    if (r < n) break;
  }
  return done;
}

}  // namespace ehbt::core
