// SPDX-License-Identifier: Apache-2.0
// GoogleTest checks on what the SFrame reader makes of the hand-made sections of
// support/sframe_bytes.hpp: a section that must parse, and the rows it gives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sframe/sframe.hpp"
#include "support/sframe_bytes.hpp"

namespace ehbt::test {

// The table of `bytes` placed at `addr`; a failure (with the reader's error code) when it
// does not parse. The bytes are kept alive until the test program exits.
sframe::Table parse_ok(std::vector<std::byte> bytes, uint64_t addr = kSframeAddr);

// The row's CFA is `reg` + `offset`.
void expect_cfa(const dwarf::Row& row, uint16_t reg, int64_t offset);

// The row's rule for `reg` is `kind` with `offset`, and, for the register-based kinds, based
// on register `base`.
void expect_rule(const dwarf::Row& row, uint16_t reg, dwarf::RuleKind kind, int64_t offset = 0,
                 uint16_t base = 0);

}  // namespace ehbt::test
