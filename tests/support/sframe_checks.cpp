// SPDX-License-Identifier: Apache-2.0
#include "support/sframe_checks.hpp"

#include <gtest/gtest.h>

#include <list>
#include <utility>

namespace ehbt::test {

sframe::Table parse_ok(std::vector<std::byte> bytes, uint64_t addr) {
  // A Table reads the bytes it was parsed from: keep them for the rest of the test program
  // (callers pass freshly assembled temporaries). List nodes never move.
  static std::list<std::vector<std::byte>> kept;
  const std::vector<std::byte>& owned = kept.emplace_back(std::move(bytes));
  auto t = sframe::Table::parse(owned, addr, Limits{});
  EXPECT_TRUE(t.has_value()) << (t ? "" : sframe::to_string(t.error().code));
  return std::move(t).value();
}

void expect_cfa(const dwarf::Row& row, uint16_t reg, int64_t offset) {
  EXPECT_EQ(row.cfa.kind, dwarf::CfaKind::RegOffset);
  EXPECT_EQ(row.cfa.reg, reg);
  EXPECT_EQ(row.cfa.offset, offset);
}

void expect_rule(const dwarf::Row& row, uint16_t reg, dwarf::RuleKind kind, int64_t offset,
                 uint16_t base) {
  const dwarf::Rule r = row.rule(reg);
  EXPECT_EQ(r.kind, kind) << "reg " << reg;
  EXPECT_EQ(r.offset, offset) << "reg " << reg;
  if (kind == dwarf::RuleKind::Register || kind == dwarf::RuleKind::RegOffset ||
      kind == dwarf::RuleKind::AtRegOffset) {
    EXPECT_EQ(r.reg, base) << "reg " << reg;
  }
}

}  // namespace ehbt::test
