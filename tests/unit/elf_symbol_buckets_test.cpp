// SPDX-License-Identifier: Apache-2.0
// SymbolBuckets: for any set of addresses, every indexed entry that covers one of them is
// visited, and no entry twice, whatever the entries' sizes and where they start (inside the
// range, at its ends, outside it, near the top of the address space).
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "elf/symbol_buckets.hpp"

namespace {

using ehbt::elf::entry_end;
using ehbt::elf::SymbolBuckets;

template <typename Sym>
Sym make_sym(uint64_t value, uint64_t size, unsigned type = STT_FUNC, uint16_t shndx = 1) {
  Sym s{};
  s.st_value = static_cast<decltype(s.st_value)>(value);
  s.st_size = static_cast<decltype(s.st_size)>(size);
  s.st_info = static_cast<unsigned char>((STB_GLOBAL << 4) | type);
  s.st_shndx = shndx;
  return s;
}

// The entries a pass could offer, as the tests index them: defined functions at non-zero
// addresses (the loader's rule also reads names; the buckets only apply the predicate).
template <typename Sym>
bool is_function(const Sym& s) {
  return s.st_shndx != SHN_UNDEF && s.st_value != 0 && (s.st_info & 0xf) == STT_FUNC;
}

// What for_candidates visits for `addrs`, asserting that nothing is visited twice.
std::vector<uint32_t> visited(const SymbolBuckets& b, std::vector<uint64_t> addrs) {
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  std::vector<uint32_t> out;
  b.for_candidates(addrs, [&out](uint32_t i) { out.push_back(i); });
  std::vector<uint32_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "visited twice";
  return sorted;
}

// Every indexed entry of `syms` covering an address of `addrs` is among `seen`.
template <typename Sym>
void expect_covers_seen(const std::vector<Sym>& syms, const std::vector<uint64_t>& addrs,
                        const std::vector<uint32_t>& seen) {
  for (uint64_t a : addrs) {
    for (uint32_t i = 1; i < syms.size(); ++i) {
      const uint64_t v = syms[i].st_value;
      if (!is_function(syms[i]) || v > a || entry_end(v, syms[i].st_size) <= a) continue;
      EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), i))
          << "entry " << i << " at " << std::hex << v << " size " << syms[i].st_size << " covers "
          << a << " and was not visited";
    }
  }
}

template <typename Sym>
void random_tables(uint64_t top) {
  std::mt19937_64 rng(20261205);
  for (int round = 0; round < 40; ++round) {
    const uint64_t lo = 0x400000, hi = lo + (uint64_t{1} << (12 + round % 12)) - 1;
    std::vector<Sym> syms(1);  // entry 0: the null symbol
    const int n = 50 + static_cast<int>(rng() % 400);
    for (int k = 0; k < n; ++k) {
      // Mostly inside [lo, hi]; some below, above, and at the top of the address space.
      uint64_t v = lo + rng() % (hi - lo + 1);
      switch (rng() % 10) {
        case 0:
          v = rng() % lo;
          break;
        case 1:
          v = hi + 1 + rng() % 0x10000;
          break;
        case 2:
          v = top - rng() % 0x100;
          break;
        default:
          break;
      }
      // Sizes from 0 to many buckets, and sizes that run past the top of the address space.
      uint64_t size = rng() % 64;
      switch (rng() % 6) {
        case 0:
          size = 0;
          break;
        case 1:
          size = rng() % (hi - lo + 1);
          break;
        case 2:
          size = top;
          break;
        default:
          break;
      }
      const unsigned type = rng() % 8 == 0 ? STT_OBJECT : STT_FUNC;
      const uint16_t shndx = rng() % 16 == 0 ? SHN_UNDEF : 1;
      syms.push_back(make_sym<Sym>(v, size, type, shndx));
    }
    auto buckets = SymbolBuckets::build(std::span<const Sym>(syms), lo, hi, is_function<Sym>);
    ASSERT_TRUE(buckets);
    const auto indexed = std::count_if(syms.begin() + 1, syms.end(), is_function<Sym>);
    EXPECT_EQ(buckets->size(), static_cast<uint64_t>(indexed));
    EXPECT_GT(buckets->bucket_count(), 1u);
    // One address at a time, at the starts and last bytes of entries and around them.
    for (std::size_t i = 1; i < syms.size(); ++i) {
      const uint64_t v = syms[i].st_value;
      const uint64_t end = entry_end(v, syms[i].st_size);
      for (uint64_t a : {v, v - 1, v + 1, end - 1, end, lo, hi, hi + 1}) {
        const std::vector<uint64_t> one{a};
        expect_covers_seen(syms, one, visited(*buckets, one));
      }
    }
    // Many addresses at once (each bucket visited once for all of them).
    std::vector<uint64_t> many;
    for (int k = 0; k < 60; ++k) many.push_back(lo + rng() % (hi - lo + 1));
    many.push_back(hi);
    many.push_back(top);
    expect_covers_seen(syms, many, visited(*buckets, many));
  }
}

TEST(ElfSymbolBuckets, EveryCoveringEntryIsVisitedOnce64) {
  random_tables<Elf64_Sym>(UINT64_MAX);
}

TEST(ElfSymbolBuckets, EveryCoveringEntryIsVisitedOnce32) {
  random_tables<Elf32_Sym>(UINT32_MAX);
}

// Entries whose range is longer than a bucket are visited for every address; the others only
// near their own.
TEST(ElfSymbolBuckets, ShortEntriesAreVisitedOnlyNearTheirAddresses) {
  std::vector<Elf64_Sym> syms(1);
  const uint64_t lo = 0x10000, hi = lo + 0xfffff;
  for (uint64_t k = 0; k < 4096; ++k) syms.push_back(make_sym<Elf64_Sym>(lo + k * 0x100, 0x80));
  syms.push_back(make_sym<Elf64_Sym>(lo, hi - lo + 1));  // covers the whole range
  const uint32_t whole = static_cast<uint32_t>(syms.size() - 1);
  auto buckets =
      SymbolBuckets::build(std::span<const Elf64_Sym>(syms), lo, hi, is_function<Elf64_Sym>);
  ASSERT_TRUE(buckets);
  EXPECT_EQ(buckets->long_entries(), 1u);
  const std::vector<uint32_t> seen = visited(*buckets, {lo + 0x80000});
  EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), whole));
  EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), uint32_t{1 + 0x800}));
  // Two buckets of 4096 / 8 entries' worth of range: a few dozen entries, not the table.
  EXPECT_LT(seen.size(), 40u);
  // An address below every start sees only the long entry (none of the others reaches it).
  EXPECT_EQ(visited(*buckets, {lo - 1}), std::vector<uint32_t>{whole});
}

// No entry indexed: every address visits nothing.
TEST(ElfSymbolBuckets, NothingIndexed) {
  std::vector<Elf64_Sym> syms(3);
  syms[1] = make_sym<Elf64_Sym>(0x1000, 0x10, STT_OBJECT);
  syms[2] = make_sym<Elf64_Sym>(0x2000, 0x10, STT_FUNC, SHN_UNDEF);
  auto buckets = SymbolBuckets::build(std::span<const Elf64_Sym>(syms), 0x1000, 0x2fff,
                                      is_function<Elf64_Sym>);
  ASSERT_TRUE(buckets);
  EXPECT_EQ(buckets->size(), 0u);
  EXPECT_TRUE(visited(*buckets, {0x1000, 0x1008, 0x2000}).empty());
  // A range whose end lies below its start (no segments) gives no buckets.
  EXPECT_FALSE(SymbolBuckets::build(std::span<const Elf64_Sym>(syms), UINT64_MAX, 0,
                                    is_function<Elf64_Sym>));
}

}  // namespace
