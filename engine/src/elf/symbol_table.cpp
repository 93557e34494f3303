// SPDX-License-Identifier: Apache-2.0
// Symbol coverage is resolved once, when the table is built: one sort by start and a sweep
// that keeps the covering symbols in a heap ordered by preference yield disjoint ranges,
// each tagged with its preferred symbol, so a lookup is one binary search no matter how
// symbols nest or alias. A SymbolQuery resolves a fixed set of addresses with the same
// preference order and no index at all.
#include "elf/symbol_table.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "elf/rust_demangle.hpp"

namespace ehbt::elf {
namespace {

uint8_t bind_rank(uint8_t bind) {
  switch (bind) {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
      return 0;
    case STB_WEAK:
      return 1;
    case STB_LOCAL:
      return 2;
    default:
      return 3;
  }
}

// Longer names than this are returned mangled: the demangler recurses on its input.
constexpr std::size_t kMaxDemangleLength = 4096;

}  // namespace

std::string demangle(std::string_view name) {
  if (name.size() < 3 || name.size() > kMaxDemangleLength || name.substr(0, 2) != "_Z") {
    return std::string(name);
  }
  // Rust's legacy names look like Itanium nested names to the C++ demangler, which leaves
  // their escapes in (rust_demangle.hpp).
  if (auto rust = demangle_rust_legacy(name)) return std::move(*rust);
  std::string s(name);
  int status = 0;
  char* out = abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status);
  if (status == 0 && out != nullptr) s = out;
  std::free(out);
  return s;
}

bool SymbolSink::add(uint64_t start, uint64_t size, std::string_view name, uint8_t bind,
                     uint8_t type) {
  if (full()) return false;
  // A .symtab written by the static linker names versioned definitions `name@@VERSION` or
  // `name@VERSION`; the symbol is `name` (as .dynsym and GDB show it). PLT stubs keep their
  // `@plt` (plt_symbols.cpp): that is how GDB names them.
  const bool plt_stub = name.size() > 4 && name.substr(name.size() - 4) == "@plt" &&
                        name.find('@') == name.size() - 4;
  if (auto at = name.find('@'); !plt_stub && at != std::string_view::npos && at > 0)
    name = name.substr(0, at);
  if (name.empty() || name.size() > UINT32_MAX) return true;  // skipped, not full
  Entry e;
  e.start = start;
  e.end = entry_end(start, size);
  e.size = size;
  e.name = name.data();
  e.name_len = static_cast<uint32_t>(name.size());
  e.bind_rank = bind_rank(bind);
  e.type_rank = (type == STT_FUNC || type == STT_GNU_IFUNC) ? 0 : 1;
  uint8_t u = 0;
  while (u < name.size() && u < 255 && name[u] == '_') ++u;
  e.underscores = u;
  ++added_;
  accept(e);
  return true;
}

bool SymbolSink::better(const Entry& x, const Entry& y) {
  if (x.bind_rank != y.bind_rank) return x.bind_rank < y.bind_rank;
  if (x.start != y.start) return x.start > y.start;
  if (x.size != y.size) return x.size < y.size;
  if (x.type_rank != y.type_rank) return x.type_rank < y.type_rank;
  if (x.underscores != y.underscores) return x.underscores < y.underscores;
  return x.name_view() < y.name_view();
}

Symbol SymbolSink::to_symbol(const Entry& e) {
  return Symbol{demangle(e.name_view()), e.start, e.size};
}

void SymbolTable::reserve(uint64_t symbols) {
  const uint64_t room = max_symbols() > added() ? max_symbols() - added() : 0;
  entries_.reserve(entries_.size() + static_cast<std::size_t>(std::min(symbols, room)));
}

void SymbolTable::finish() {
  ranges_.clear();
  const std::size_t n = entries_.size();
  // Symbols given in address order, none overlapping the next (Go's function table, which
  // add_go_symbols feeds as it is): each is the only cover of its own range, which is what the
  // sweep below finds, here without the sort and the heap. Checked, not assumed.
  std::size_t ordered = n > 0 ? 1 : 0;
  while (ordered < n && entries_[ordered].start >= entries_[ordered - 1].end) ++ordered;
  if (ordered == n) {
    ranges_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      // A range that saturated at the top of the address space may be empty: no cover.
      if (entries_[i].end > entries_[i].start)
        ranges_.push_back(Range{entries_[i].start, entries_[i].end, static_cast<uint32_t>(i)});
    }
    return;
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.start < b.start; });
  ranges_.reserve(n);

  // The preferred cover can only change where a symbol starts or where the current preferred
  // one ends (another symbol ending leaves the best one best), so the sweep visits those
  // points alone. `active` is a max-heap by preference; symbols that ended are dropped when
  // they reach its top.
  auto worse = [this](uint32_t a, uint32_t b) { return better(entries_[b], entries_[a]); };
  std::vector<uint32_t> active;
  std::size_t next_start = 0;
  uint64_t at = n > 0 ? entries_[0].start : 0;
  // Each iteration pushes a symbol, pops one, or ends: at most 2n + 1 iterations.
  for (std::size_t guard = 0; guard <= 2 * n + 1; ++guard) {
    while (next_start < n && entries_[next_start].start <= at) {
      active.push_back(static_cast<uint32_t>(next_start++));
      std::push_heap(active.begin(), active.end(), worse);
    }
    while (!active.empty() && entries_[active.front()].end <= at) {
      std::pop_heap(active.begin(), active.end(), worse);
      active.pop_back();
    }
    if (active.empty()) {
      if (next_start >= n) break;
      at = entries_[next_start].start;
      continue;
    }
    const uint32_t best = active.front();
    uint64_t next = entries_[best].end;
    if (next_start < n) next = std::min(next, entries_[next_start].start);
    if (!ranges_.empty() && ranges_.back().end == at && ranges_.back().entry == best) {
      ranges_.back().end = next;
    } else {
      ranges_.push_back(Range{at, next, best});
    }
    at = next;
  }
  ranges_.shrink_to_fit();
}

std::optional<Symbol> SymbolTable::lookup(uint64_t addr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.start; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  return to_symbol(entries_[it->entry]);
}

SymbolQuery::SymbolQuery(std::span<const uint64_t> addrs, uint32_t max_symbols, uint64_t work_cap)
    : SymbolSink(max_symbols), addrs_(addrs.begin(), addrs.end()), work_cap_(work_cap) {
  sorted_ = addrs_;
  std::sort(sorted_.begin(), sorted_.end());
  sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
  best_.assign(sorted_.size(), Entry{});
  if (!sorted_.empty()) set_window(sorted_.front(), sorted_.back());
  // One address needs no filter: the window is that address alone.
  if (sorted_.size() > 1) {
    auto pages = std::make_unique<PageFilter>();
    for (uint64_t a : sorted_) pages->add(a);
    set_page_filter(std::move(pages));
  }
}

bool SymbolQuery::wants_in_window(uint64_t start, uint64_t size) const {
  const uint64_t end = entry_end(start, size);
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), start);
  return it != sorted_.end() && *it < end;
}

void SymbolQuery::accept(const Entry& e) {
  if (overflowed_) return;
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), e.start);
  for (std::size_t i = static_cast<std::size_t>(it - sorted_.begin());
       i < sorted_.size() && sorted_[i] < e.end; ++i) {
    if (++work_ > work_cap_) {
      overflowed_ = true;
      return;
    }
    if (best_[i].name == nullptr || better(e, best_[i])) best_[i] = e;
  }
}

std::vector<std::optional<Symbol>> SymbolQuery::results() const {
  std::vector<std::optional<Symbol>> out(addrs_.size());
  for (std::size_t k = 0; k < addrs_.size(); ++k) {
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), addrs_[k]);
    const Entry& e = best_[static_cast<std::size_t>(it - sorted_.begin())];
    if (e.name != nullptr) out[k] = to_symbol(e);
  }
  return out;
}

}  // namespace ehbt::elf
