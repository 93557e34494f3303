// SPDX-License-Identifier: Apache-2.0
// A frame's register set, held out of line so that a Frame stays a few tens of bytes: a deep
// walk then stores a compact record per frame instead of an 800-byte RegisterSet, and a walk
// that keeps no registers (UnwindOptions::keep_registers false) allocates none per frame.
// Reads of an empty holder answer as an empty register set; it spells like a RegisterSet so
// that `frame.regs.get(6)` keeps compiling.
#pragma once

#include <memory>
#include <optional>

#include "ehbt/registers.hpp"

namespace ehbt {

class FrameRegisters {
 public:
  FrameRegisters() = default;
  FrameRegisters(const RegisterSet& regs) : set_(std::make_unique<RegisterSet>(regs)) {}
  FrameRegisters(const FrameRegisters& other)
      : set_(other.set_ ? std::make_unique<RegisterSet>(*other.set_) : nullptr) {}
  FrameRegisters(FrameRegisters&&) noexcept = default;
  FrameRegisters& operator=(const FrameRegisters& other) {
    if (this == &other) return *this;
    if (other.set_) {
      assign(*other.set_);
    } else {
      set_.reset();
    }
    return *this;
  }
  FrameRegisters& operator=(FrameRegisters&&) noexcept = default;
  // Copies into the set already held, if any: a walk reuses its two working sets.
  FrameRegisters& operator=(const RegisterSet& regs) {
    assign(regs);
    return *this;
  }

  // Whether no set is held (a frame of a walk that kept no registers).
  bool empty() const { return set_ == nullptr; }
  void reset() { set_.reset(); }
  // The set for writing, created empty on first use.
  RegisterSet& mut() {
    if (!set_) set_ = std::make_unique<RegisterSet>();
    return *set_;
  }
  // The set for reading; an empty set when none is held.
  const RegisterSet& view() const { return set_ ? *set_ : empty_set(); }
  operator const RegisterSet&() const { return view(); }

  // The RegisterSet interface, for source compatibility.
  Arch arch() const { return view().arch(); }
  uint64_t pc() const { return view().pc(); }
  void set_pc(uint64_t pc) { mut().set_pc(pc); }
  bool has(uint16_t reg) const { return view().has(reg); }
  std::optional<uint64_t> get(uint16_t reg) const { return view().get(reg); }
  uint64_t raw(uint16_t reg) const { return view().raw(reg); }
  bool set(uint16_t reg, uint64_t value) { return mut().set(reg, value); }
  void clear(uint16_t reg) {
    if (set_) set_->clear(reg);
  }
  void clear_all() {
    if (set_) set_->clear_all();
  }
  std::size_t count() const { return view().count(); }
  uint64_t sp() const { return view().sp(); }
  void set_sp(uint64_t v) { mut().set_sp(v); }

 private:
  void assign(const RegisterSet& regs) {
    if (set_) {
      *set_ = regs;
    } else {
      set_ = std::make_unique<RegisterSet>(regs);
    }
  }
  static const RegisterSet& empty_set() {
    static const RegisterSet kEmpty;
    return kEmpty;
  }

  std::unique_ptr<RegisterSet> set_;
};

}  // namespace ehbt
