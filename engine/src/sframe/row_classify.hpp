// SPDX-License-Identifier: Apache-2.0
// One DWARF row in SFrame terms: a default-FDE row, a row that needs a V3 flexible FDE, the
// x86-64 PLT CFA (a PCMASK function), or the reason SFrame cannot say it.
#pragma once

#include <cstdint>
#include <string>

#include "dwarf/cfi.hpp"
#include "ehbt/arch.hpp"
#include "sframe/expr_patterns.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::sframe {

struct RowVerdict {
  enum class Form : uint8_t { Default, Flex, Plt, Inexpressible };
  Form form = Form::Inexpressible;
  FrameRow row;     // Default, Flex (start left 0); Plt: the FP/RA part
  PltCfa plt;       // Plt
  std::string why;  // Inexpressible
};

// `version` 2 or 3 decides what is expressible (V3: flexible FDEs; V2: s390x's
// register-encoded RA/FP).
RowVerdict classify_row(const dwarf::Row& row, Arch arch, uint8_t version);

}  // namespace ehbt::sframe
