// SPDX-License-Identifier: Apache-2.0
// The entries of one large symbol table grouped by where they start, so that a pass for a few
// addresses reads the entries near them instead of the whole table.
//
// A one-shot walk through a large binary with code that has no unwind table (node's embedded
// builtins) asks for the symbol at one pc at a time, and before the full table is built each
// answer is a pass over the table (symbol_loader.cpp): node_deopt.core took seven passes over
// node's 110,000-entry .symtab, about 1.5M instructions each, and an eighth for the report's
// names, 14.5M of the run's 16.5M. Building the full table costs far more (a sort by
// preference). Making these buckets costs about what a pass does, and every later pass reads
// two buckets and the long entries: node_deopt.core 8.2M. They index the table's entries,
// not symbols: which entry a query prefers is still decided by the pass, on the entries the
// buckets return, with the same code as a pass through the whole table. Only the walk's
// passes (symbol_loader.cpp's symbol_without_table) make them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "elf/symbol_table.hpp"

namespace ehbt::elf {

class SymbolBuckets {
 public:
  // About this many entries a bucket: a lookup reads two buckets and the long entries.
  static constexpr uint64_t kEntriesPerBucket = 8;

  // Indexes the entries of syms[1..] (entry 0 is the reserved null symbol) for which
  // `indexed(entry)` holds (those a pass could offer a sink), bucketed by where in [lo, hi]
  // (the image's address range) they start. One loop over the table: each bucket is a chain
  // through the entries. Null when the table has 2^32 entries or more (indices are 32-bit).
  // Allocation is linear in the entries.
  template <typename Sym, typename Indexed>
  static std::unique_ptr<SymbolBuckets> build(std::span<const Sym> syms, uint64_t lo, uint64_t hi,
                                              Indexed&& indexed);

  // Calls visit(index) once for every indexed entry that can cover an address of `sorted`
  // (ascending): a superset of those that do. Entries longer than a bucket, or outside
  // [lo, hi], are visited every time.
  template <typename Visit>
  void for_candidates(std::span<const uint64_t> sorted, Visit&& visit) const;

  // How many entries are indexed.
  uint64_t size() const { return size_; }
  std::size_t long_entries() const { return long_.size(); }
  std::size_t bucket_count() const { return head_.size(); }

 private:
  static constexpr uint32_t kEnd = 0;  // ends a chain (entry 0 is never indexed)

  uint64_t size_ = 0;
  uint64_t base_ = 0;           // lo
  unsigned shift_ = 0;          // bucket b holds the starts in base + [b, b + 1) << shift
  std::vector<uint32_t> head_;  // per bucket: its last entry in table order, or kEnd
  // Per table entry: the one before it in its bucket. Only a bucketed entry's is written or
  // read, so the array is not zeroed first (a table of node's size: 440 KB).
  std::unique_ptr<uint32_t[]> next_;
  std::vector<uint32_t> long_;  // visited for every address
};

template <typename Sym, typename Indexed>
std::unique_ptr<SymbolBuckets> SymbolBuckets::build(std::span<const Sym> syms, uint64_t lo,
                                                    uint64_t hi, Indexed&& indexed) {
  if (syms.size() >= UINT32_MAX || hi < lo) return nullptr;
  auto out = std::make_unique<SymbolBuckets>();
  // The smallest power-of-two bucket that spreads the range over size / 8 buckets or fewer.
  const uint64_t most = std::max<uint64_t>(1, syms.size() / kEntriesPerBucket);
  const uint64_t span = hi - lo;
  unsigned shift = 0;
  while (shift < 63 && (span >> shift) >= most) ++shift;
  out->base_ = lo;
  out->shift_ = shift;
  out->head_.assign((span >> shift) + 1, kEnd);
  out->next_ = std::make_unique_for_overwrite<uint32_t[]>(syms.size());
  const uint64_t bucket_bytes = uint64_t{1} << shift;
  uint64_t count = 0;
  for (std::size_t i = 1; i < syms.size(); ++i) {
    const Sym& s = syms[i];
    if (!indexed(s)) continue;
    ++count;
    const uint64_t v = s.st_value;
    if (v < lo || v - lo > span || entry_end(v, s.st_size) - v > bucket_bytes) {
      out->long_.push_back(static_cast<uint32_t>(i));
      continue;
    }
    uint32_t& head = out->head_[(v - lo) >> shift];
    out->next_[i] = head;
    head = static_cast<uint32_t>(i);
  }
  out->size_ = count;
  return out;
}

template <typename Visit>
void SymbolBuckets::for_candidates(std::span<const uint64_t> sorted, Visit&& visit) const {
  const uint64_t buckets = bucket_count();
  // An entry no longer than a bucket that covers `a` starts in a's bucket or the one before.
  uint64_t unvisited = 0;  // the buckets below it were visited (sorted is ascending)
  for (const uint64_t a : sorted) {
    if (a < base_) continue;  // nothing bucketed starts below base_
    const uint64_t b = (a - base_) >> shift_;
    const uint64_t from = std::max(b > 0 ? b - 1 : 0, unvisited);
    const uint64_t to = std::min(b + 1, buckets);  // exclusive
    for (uint64_t k = from; k < to; ++k) {
      // Each step moves to a lower table index: at most the table's size.
      for (uint32_t j = head_[k]; j != kEnd; j = next_[j]) visit(j);
    }
    unvisited = std::max(unvisited, to);
  }
  for (const uint32_t i : long_) visit(i);
}

}  // namespace ehbt::elf
