// SPDX-License-Identifier: Apache-2.0
// The bytes of code the proofs decode (a call before a return address, a tail jump, a
// prologue): target memory first, else the file of the module that holds them. A core leaves
// read-only text out (all of it, or all but the first page), and a debugger's memory callback
// may not serve it; the file's bytes at the same link address are the code that ran, as far as
// the module's build-id says it is the same file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ehbt/unwinder.hpp"

namespace ehbt::unwind {

class CodeBytes final : public Memory {
 public:
  // The file of whichever module holds the address.
  CodeBytes(Memory& mem, const ModuleSet& modules) : mem_(mem), modules_(&modules) {}
  // `module`'s file alone: the caller knows the code lies in it.
  CodeBytes(Memory& mem, const Module& module) : mem_(mem), module_(&module) {}

  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    const std::size_t n = mem_.read(addr, out);
    if (n == out.size()) return n;
    const Module* m = module_ != nullptr ? module_ : modules_->find(addr);
    if (m == nullptr || !m->image) return n;
    return m->image->read(m->to_link(addr), out);
  }

 private:
  Memory& mem_;
  const ModuleSet* modules_ = nullptr;
  const Module* module_ = nullptr;
};

}  // namespace ehbt::unwind
