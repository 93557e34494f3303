// SPDX-License-Identifier: Apache-2.0
// Memory of another live process: process_vm_readv, falling back to /proc/PID/mem.
#pragma once

#include "ehbt/memory.hpp"

namespace ehbt::core {

class ProcessMemory final : public Memory {
 public:
  explicit ProcessMemory(int pid) : pid_(pid) {}
  ~ProcessMemory() override;
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  std::size_t read(uint64_t addr, std::span<std::byte> out) override;

 private:
  std::size_t read_chunk(uint64_t addr, std::span<std::byte> out);

  int pid_;
  int mem_fd_ = -1;  // /proc/PID/mem, opened on first need
  bool vm_readv_ok_ = true;
};

}  // namespace ehbt::core
