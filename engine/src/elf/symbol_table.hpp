// SPDX-License-Identifier: Apache-2.0
// Function symbols of one image and the "which symbol covers this address" index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ehbt/image.hpp"

namespace ehbt::elf {

// Collects symbols, then answers lookups. Covering rule: a symbol covers addr when
// start <= addr < start + size; a size-0 symbol covers only its own address. Nothing is
// guessed from a neighbouring symbol. When several symbols cover an address the preferred one
// is, in order: the better binding (GLOBAL/GNU_UNIQUE, then WEAK, then LOCAL) — so the public
// `raise` wins over the hidden alias `__GI_raise` —, the later start (the innermost),
// the smaller size, a FUNC/IFUNC over a NOTYPE, fewer leading underscores, and finally the
// lexicographically smaller name, so the answer never depends on table order.
class SymbolTable {
 public:
  explicit SymbolTable(uint32_t max_symbols = UINT32_MAX) : max_symbols_(max_symbols) {}

  // Adds one symbol (name not yet demangled). Returns false once the cap is reached.
  bool add(uint64_t start, uint64_t size, std::string_view name, uint8_t bind, uint8_t type);
  bool full() const { return entries_.size() >= max_symbols_; }
  // Room for `symbols` more entries (capped by the table's limit) and `name_bytes` of names,
  // so that loading a large table does not regrow and copy its vectors.
  void reserve(uint64_t symbols, uint64_t name_bytes);
  std::size_t size() const { return entries_.size(); }

  // Builds the lookup index; call once after the last add().
  void finish();

  // The preferred covering symbol, demangled; nothing when no symbol covers addr.
  std::optional<Symbol> lookup(uint64_t addr) const;

 private:
  struct Entry {
    uint64_t start;
    uint64_t end;  // exclusive; start + 1 for size-0 symbols, saturated at UINT64_MAX
    uint64_t size;
    uint32_t name_off;
    uint32_t name_len;
    uint8_t bind_rank;
    uint8_t type_rank;
    uint8_t underscores;
  };
  // A maximal address range in which one symbol is the preferred cover.
  struct Range {
    uint64_t start, end;
    uint32_t entry;
  };
  bool better(uint32_t a, uint32_t b) const;
  std::string_view name_of(const Entry& e) const;

  uint32_t max_symbols_;
  std::vector<Entry> entries_;
  std::string names_;
  std::vector<Range> ranges_;  // sorted, disjoint
};

// Demangles an Itanium C++ ABI name; returns the input unchanged when it is not one.
std::string demangle(std::string_view name);

}  // namespace ehbt::elf
