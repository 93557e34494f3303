// SPDX-License-Identifier: Apache-2.0
// A register set indexed by DWARF register number, with a validity bit per register.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>

#include "ehbt/arch.hpp"

namespace ehbt {

// DWARF numbers below this are tracked (aarch64 d8-d15 are 72-79, s390x psw addr is 65).
inline constexpr uint16_t kMaxRegs = 96;

class RegisterSet {
 public:
  RegisterSet() = default;
  explicit RegisterSet(Arch arch) : arch_(arch) {}

  Arch arch() const { return arch_; }

  // The program counter is kept apart from the DWARF columns: on x86-64 and aarch64 the
  // return-address column is a pseudo register, and a frame's pc is not "restored" by a rule.
  uint64_t pc() const { return pc_; }
  void set_pc(uint64_t pc) { pc_ = pc; }

  bool has(uint16_t reg) const { return reg < kMaxRegs && valid_[reg]; }
  std::optional<uint64_t> get(uint16_t reg) const {
    if (!has(reg)) return std::nullopt;
    return values_[reg];
  }
  // Value without an optional; 0 when unknown (values of cleared registers are not erased).
  uint64_t raw(uint16_t reg) const { return has(reg) ? values_[reg] : 0; }
  bool set(uint16_t reg, uint64_t value) {
    if (reg >= kMaxRegs) return false;
    values_[reg] = value;
    valid_.set(reg);
    return true;
  }
  void clear(uint16_t reg) {
    if (reg < kMaxRegs) valid_.reset(reg);
  }
  void clear_all() { valid_.reset(); }
  // An empty set for `arch`, as RegisterSet(arch) but without erasing 800 bytes of values
  // (the walk reuses its caller's set for every step).
  void reset(Arch arch) {
    valid_.reset();
    pc_ = 0;
    arch_ = arch;
  }
  std::size_t count() const { return valid_.count(); }
  // Makes valid here every register of `mask` valid in `from`, with its value; `listed` names
  // the registers of `mask` (each below kMaxRegs). Their values are copied whether valid or
  // not, and the validity bits in one operation: no branch or read-modify-write per register.
  template <class List>
  void copy_valid(const RegisterSet& from, const std::bitset<kMaxRegs>& mask, const List& listed) {
    for (uint16_t r : listed) values_[r] = from.values_[r];
    valid_ |= from.valid_ & mask;
  }

  uint64_t sp() const { return raw(arch_info(arch_).sp_reg); }
  void set_sp(uint64_t v) { set(arch_info(arch_).sp_reg, v); }

 private:
  std::array<uint64_t, kMaxRegs> values_{};
  std::bitset<kMaxRegs> valid_;
  uint64_t pc_ = 0;
  Arch arch_ = Arch::X86_64;
};

}  // namespace ehbt
