// SPDX-License-Identifier: Apache-2.0
// Function starts one walk has learnt from the frames it has already proven (unwind/validate.hpp):
// the target of each direct call that proved a caller not taken from a table. A direct call's
// target is where some function (or a PLT stub) begins, whichever function the callee turns out
// to be; so a candidate whose call target lies below a known start that is itself at or below
// the callee's pc cannot have called into the callee's function at that target: the function at
// the target ends before the known start, so before the callee's pc. Where nothing else says
// where a function starts (no symbol, no table), that tells a stale return address from a caller.
// (It assumes a direct call enters a function at its start and functions do not overlap; code
// that calls into the middle of the callee's own function, or falls through from one entry into
// another, would have its caller disproven: the walk stops or scans on, it never gains a frame.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ehbt/limits.hpp"

namespace ehbt::unwind {

class KnownStarts {
 public:
  // Remembers `start`, up to Limits::max_known_starts of them: later ones are not kept, and a
  // proof that would have needed one falls back to the other bounds of its rule.
  void add(uint64_t start, const Limits& limits) {
    if (start == 0) return;
    auto it = std::lower_bound(starts_.begin(), starts_.end(), start);
    if (it != starts_.end() && *it == start) return;
    if (starts_.size() >= limits.max_known_starts) return;
    starts_.insert(it, start);
  }
  // The lowest known start s with lo < s <= hi, or nothing (sorted: a binary search).
  std::optional<uint64_t> between(uint64_t lo, uint64_t hi) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), lo);
    if (it == starts_.end() || *it > hi) return std::nullopt;
    return *it;
  }
  std::size_t size() const { return starts_.size(); }

 private:
  std::vector<uint64_t> starts_;  // sorted, distinct
};

}  // namespace ehbt::unwind
