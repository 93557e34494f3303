// SPDX-License-Identifier: Apache-2.0
// Symbol coverage is resolved once, when the table is built: a sweep over all symbol starts
// and ends yields disjoint ranges, each tagged with its preferred symbol, so a lookup is one
// binary search no matter how symbols nest or alias.
#include "elf/symbol_table.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <set>

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
  std::string s(name);
  if (s.size() < 3 || s.size() > kMaxDemangleLength || s.compare(0, 2, "_Z") != 0) return s;
  int status = 0;
  char* out = abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status);
  if (status == 0 && out != nullptr) s = out;
  std::free(out);
  return s;
}

bool SymbolTable::add(uint64_t start, uint64_t size, std::string_view name, uint8_t bind,
                      uint8_t type) {
  if (full()) return false;
  // A .symtab written by the static linker names versioned definitions `name@@VERSION` or
  // `name@VERSION`; the symbol is `name` (as .dynsym and GDB show it). PLT stubs keep their
  // `@plt` (plt_symbols.cpp): that is how GDB names them.
  const bool plt_stub = name.size() > 4 && name.substr(name.size() - 4) == "@plt" &&
                        name.find('@') == name.size() - 4;
  if (auto at = name.find('@'); !plt_stub && at != std::string_view::npos && at > 0)
    name = name.substr(0, at);
  if (name.empty() || name.size() > UINT32_MAX || names_.size() > UINT32_MAX - name.size())
    return true;  // skipped, not full
  Entry e{};
  e.start = start;
  uint64_t span = size == 0 ? 1 : size;
  e.end = start + span < start ? UINT64_MAX : start + span;
  e.size = size;
  e.name_off = static_cast<uint32_t>(names_.size());
  e.name_len = static_cast<uint32_t>(name.size());
  e.bind_rank = bind_rank(bind);
  e.type_rank = (type == STT_FUNC || type == STT_GNU_IFUNC) ? 0 : 1;
  uint8_t u = 0;
  while (u < name.size() && u < 255 && name[u] == '_') ++u;
  e.underscores = u;
  names_.append(name);
  entries_.push_back(e);
  return true;
}

void SymbolTable::reserve(uint64_t symbols, uint64_t name_bytes) {
  const uint64_t room = max_symbols_ > entries_.size() ? max_symbols_ - entries_.size() : 0;
  entries_.reserve(entries_.size() + static_cast<std::size_t>(std::min(symbols, room)));
  // A hint only (a hostile sh_size must not reserve gigabytes): growth past it still works.
  names_.reserve(names_.size() +
                 static_cast<std::size_t>(std::min<uint64_t>(name_bytes, 64u << 20)));
}

std::string_view SymbolTable::name_of(const Entry& e) const {
  return std::string_view(names_).substr(e.name_off, e.name_len);
}

bool SymbolTable::better(uint32_t a, uint32_t b) const {
  const Entry& x = entries_[a];
  const Entry& y = entries_[b];
  if (x.bind_rank != y.bind_rank) return x.bind_rank < y.bind_rank;
  if (x.start != y.start) return x.start > y.start;
  if (x.size != y.size) return x.size < y.size;
  if (x.type_rank != y.type_rank) return x.type_rank < y.type_rank;
  if (x.underscores != y.underscores) return x.underscores < y.underscores;
  int c = name_of(x).compare(name_of(y));
  if (c != 0) return c < 0;
  return a < b;
}

void SymbolTable::finish() {
  ranges_.clear();
  ranges_.reserve(entries_.size());
  const std::size_t n = entries_.size();
  std::vector<uint32_t> by_start(n), by_end(n);
  for (std::size_t i = 0; i < n; ++i) by_start[i] = by_end[i] = static_cast<uint32_t>(i);
  std::sort(by_start.begin(), by_start.end(),
            [&](uint32_t a, uint32_t b) { return entries_[a].start < entries_[b].start; });
  std::sort(by_end.begin(), by_end.end(),
            [&](uint32_t a, uint32_t b) { return entries_[a].end < entries_[b].end; });

  auto cmp = [this](uint32_t a, uint32_t b) { return better(a, b); };
  std::set<uint32_t, decltype(cmp)> active(cmp);
  std::size_t si = 0, ei = 0;
  // Each iteration consumes at least one start or end event: at most 2n iterations.
  while (si < n || ei < n) {
    uint64_t at = UINT64_MAX;
    if (si < n) at = std::min(at, entries_[by_start[si]].start);
    if (ei < n) at = std::min(at, entries_[by_end[ei]].end);
    while (ei < n && entries_[by_end[ei]].end == at) active.erase(by_end[ei++]);
    while (si < n && entries_[by_start[si]].start == at) {
      uint32_t idx = by_start[si++];
      if (entries_[idx].end > at) active.insert(idx);
    }
    if (active.empty()) continue;
    uint64_t next = UINT64_MAX;
    if (si < n) next = std::min(next, entries_[by_start[si]].start);
    if (ei < n) next = std::min(next, entries_[by_end[ei]].end);
    if (next <= at) continue;
    uint32_t best = *active.begin();
    if (!ranges_.empty() && ranges_.back().end == at && ranges_.back().entry == best) {
      ranges_.back().end = next;
    } else {
      ranges_.push_back(Range{at, next, best});
    }
  }
}

std::optional<Symbol> SymbolTable::lookup(uint64_t addr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.start; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  const Entry& e = entries_[it->entry];
  return Symbol{demangle(name_of(e)), e.start, e.size};
}

}  // namespace ehbt::elf
