// SPDX-License-Identifier: Apache-2.0
// The CFA, FP and RA of a row in one canonical text each, so that a row that came from
// .sframe and one from .eh_frame compare equal exactly when they recover the same values:
// "same value" and "no rule" read alike, a register-plus-offset DWARF expression reads like
// the flexible rule it equals, and the x86-64 PLT CFA expression is evaluated at the pc.
#pragma once

#include <cstdint>
#include <string>

#include "dwarf/cfi.hpp"
#include "ehbt/arch.hpp"

namespace ehbt::sframe {

struct RowText {
  std::string cfa;
  std::string fp;
  std::string ra;
};

RowText describe_row(const dwarf::Row& row, Arch arch, uint64_t pc);

}  // namespace ehbt::sframe
