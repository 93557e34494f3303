// SPDX-License-Identifier: Apache-2.0
// A CFI row's register rules: a small unsorted table, since real rows have a handful of rules
// and a linear scan over them beats any map.
#include <algorithm>

#include "dwarf/cfi.hpp"

namespace ehbt::dwarf {

Rule Row::rule(uint16_t reg) const {
  for (uint8_t i = 0; i < num_rules; ++i) {
    if (rules[i].reg == reg) return rules[i].rule;
  }
  return Rule{};
}

bool Row::set_rule(uint16_t reg, const Rule& r, uint32_t max_rules) {
  for (uint8_t i = 0; i < num_rules; ++i) {
    if (rules[i].reg != reg) continue;
    if (r.kind == RuleKind::Unspecified) {
      // Removal: the last rule takes the freed slot.
      rules[i] = rules[num_rules - 1];
      rules[num_rules - 1] = RegRule{};
      --num_rules;
    } else {
      rules[i].rule = r;
    }
    return true;
  }
  if (r.kind == RuleKind::Unspecified) return true;
  const std::size_t cap = std::min<std::size_t>(max_rules, kRowCapacity);
  if (num_rules >= cap) return false;
  rules[num_rules].reg = reg;
  rules[num_rules].rule = r;
  ++num_rules;
  return true;
}

}  // namespace ehbt::dwarf
