// SPDX-License-Identifier: Apache-2.0
// Function symbols of one image and the "which symbol covers this address" index.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ehbt/image.hpp"

namespace ehbt::elf {

// The end (exclusive) of the range a symbol covers: start + size, start + 1 for a size-0
// symbol, saturated at UINT64_MAX.
inline uint64_t entry_end(uint64_t start, uint64_t size) {
  const uint64_t span = size == 0 ? 1 : size;
  return start + span < start ? UINT64_MAX : start + span;
}

// Covering rule: a symbol covers addr when start <= addr < start + size; a size-0 symbol
// covers only its own address. Nothing is guessed from a neighbouring symbol. When several
// symbols cover an address the preferred one is, in order: the better binding (GLOBAL/
// GNU_UNIQUE, then WEAK, then LOCAL) — so the public `raise` wins over the hidden alias
// `__GI_raise` —, the later start (the innermost), the smaller size, a FUNC/IFUNC over a
// NOTYPE, fewer leading underscores, and finally the lexicographically smaller name, so the
// answer never depends on table order.
//
// Symbol sources (symbol_loader.cpp, plt_symbols.cpp) feed a SymbolSink: the full table for
// long-lived users, or a SymbolQuery that answers a fixed set of addresses in the same pass.
// Names are not copied: they stay in the mapped string table they came from, so whoever
// feeds a sink keeps that table alive as long as the sink (keep()), and synthesised names go
// through own().
class SymbolSink {
 public:
  explicit SymbolSink(uint32_t max_symbols) : max_symbols_(max_symbols) {}
  virtual ~SymbolSink() = default;
  // Moving keeps every owned name where it is (views into it stay valid); copying would not.
  SymbolSink(SymbolSink&&) = default;
  SymbolSink& operator=(SymbolSink&&) = default;
  SymbolSink(const SymbolSink&) = delete;
  SymbolSink& operator=(const SymbolSink&) = delete;

  // Adds one symbol (name not yet demangled). Returns false once the cap is reached.
  bool add(uint64_t start, uint64_t size, std::string_view name, uint8_t bind, uint8_t type);
  // Whether a symbol at [start, start + size) can matter to this sink. When it cannot, a
  // source may call skip() instead of add(): it counts towards the cap as add() would,
  // without the name ever being read. Symbols outside the sink's window are refused here,
  // inline: a one-address query refuses nearly every symbol of a large table, and this test
  // is what a pass over that table mostly costs.
  [[gnu::always_inline]] bool wants(uint64_t start, uint64_t size) const {
    if (start > window_last_) return false;
    const uint64_t end = entry_end(start, size);
    if (end <= window_first_) return false;
    if (pages_ && !pages_->may_cover(start, end)) return false;
    return wants_in_window(start, size);
  }
  bool skip() {
    if (full()) return false;
    ++added_;
    return true;
  }
  bool full() const { return added_ >= max_symbols_; }
  // How many more symbols it counts before it is full.
  uint64_t room() const { return full() ? 0 : max_symbols_ - added_; }
  // n skip()s at once, each of which would have counted: for a source that knows n <= room().
  void skip_many(uint64_t n) { added_ += n; }
  uint64_t added() const { return added_; }
  // wants() refuses every symbol that does not reach into [window_first(), window_last()].
  uint64_t window_first() const { return window_first_; }
  uint64_t window_last() const { return window_last_; }
  // The addresses this sink wants symbols for, distinct and ascending, when it is a fixed
  // set (a SymbolQuery); empty when it wants every symbol in its window.
  virtual std::span<const uint64_t> addresses() const { return {}; }
  // Room for `symbols` more entries (capped by the limit), so that loading a large table
  // does not regrow its vectors.
  virtual void reserve(uint64_t /*symbols*/) {}
  // Keeps the bytes that added names point into alive as long as this sink.
  void keep(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
  // A stable copy of a name made up by a source (`NAME@plt`).
  std::string_view own(std::string name) { return owned_.emplace_back(std::move(name)); }

 protected:
  // One symbol as the preference order needs it; the name is a view (see above).
  struct Entry {
    uint64_t start;
    uint64_t end;  // exclusive; start + 1 for size-0 symbols, saturated at UINT64_MAX
    uint64_t size;
    const char* name;
    uint32_t name_len;
    uint8_t bind_rank;
    uint8_t type_rank;
    uint8_t underscores;
    std::string_view name_view() const { return {name, name_len}; }
  };
  // True when x is preferred over y (the order described above; total up to equal symbols).
  static bool better(const Entry& x, const Entry& y);
  static Symbol to_symbol(const Entry& e);
  virtual void accept(const Entry& e) = 0;
  // wants() for a symbol that reaches into the window.
  virtual bool wants_in_window(uint64_t /*start*/, uint64_t /*size*/) const { return true; }
  // Only addresses in [first, last] matter to this sink (default: all).
  void set_window(uint64_t first, uint64_t last) {
    window_first_ = first;
    window_last_ = last;
  }
  // The 4 KiB pages that hold the addresses that matter, folded into 4,096 bits: a symbol
  // whose pages all miss them covers none of those addresses. It answers a large table's
  // typical symbol (a page or two long, between two wanted addresses) in a few instructions,
  // where wants_in_window searches the addresses.
  class PageFilter {
   public:
    void add(uint64_t addr) { set(addr >> 12); }
    bool may_cover(uint64_t start, uint64_t end) const {  // [start, end), end > start
      const uint64_t first = start >> 12, last = (end - 1) >> 12;
      if (last - first >= kMaxPagesTested) return true;
      for (uint64_t p = first; p <= last; ++p) {
        if (test(p)) return true;
      }
      return false;
    }

   private:
    static constexpr uint64_t kMaxPagesTested = 4;
    void set(uint64_t page) { bits_[(page >> 6) & 63] |= uint64_t{1} << (page & 63); }
    bool test(uint64_t page) const { return (bits_[(page >> 6) & 63] >> (page & 63)) & 1; }
    uint64_t bits_[64] = {};
  };
  void set_page_filter(std::unique_ptr<PageFilter> pages) { pages_ = std::move(pages); }
  uint32_t max_symbols() const { return max_symbols_; }

 private:
  uint32_t max_symbols_;
  uint64_t added_ = 0;
  uint64_t window_first_ = 0;
  uint64_t window_last_ = UINT64_MAX;
  std::unique_ptr<PageFilter> pages_;  // null: no page test
  std::vector<std::shared_ptr<const void>> owners_;
  std::deque<std::string> owned_;  // a deque never moves its elements: views stay valid
};

// Collects symbols, then answers any lookup.
class SymbolTable : public SymbolSink {
 public:
  explicit SymbolTable(uint32_t max_symbols = UINT32_MAX) : SymbolSink(max_symbols) {}
  SymbolTable(SymbolTable&&) = default;
  SymbolTable& operator=(SymbolTable&&) = default;

  void reserve(uint64_t symbols) override;
  std::size_t size() const { return entries_.size(); }

  // Builds the lookup index; call once after the last add().
  void finish();

  // The preferred covering symbol, demangled; nothing when no symbol covers addr.
  std::optional<Symbol> lookup(uint64_t addr) const;

 private:
  // A maximal address range in which one symbol is the preferred cover.
  struct Range {
    uint64_t start, end;
    uint32_t entry;
  };
  void accept(const Entry& e) override { entries_.push_back(e); }

  std::vector<Entry> entries_;
  std::vector<Range> ranges_;  // sorted, disjoint
};

// Answers a fixed set of addresses in one pass over the symbols, without building an index:
// each symbol is compared only against the addresses it covers. For one-shot commands that
// symbolise a few hundred pcs of a table of many thousand symbols.
class SymbolQuery : public SymbolSink {
 public:
  // `work_cap` bounds (address, covering symbol) comparisons; past it the query gives up
  // (overflowed()) and the caller builds the full table instead.
  SymbolQuery(std::span<const uint64_t> addrs, uint32_t max_symbols, uint64_t work_cap);

  bool overflowed() const { return overflowed_; }
  std::span<const uint64_t> addresses() const override { return sorted_; }
  // The answer for addrs[i], the same one SymbolTable::lookup gives for the same symbols.
  std::vector<std::optional<Symbol>> results() const;

 private:
  void accept(const Entry& e) override;
  bool wants_in_window(uint64_t start, uint64_t size) const override;

  std::vector<uint64_t> addrs_;   // as given
  std::vector<uint64_t> sorted_;  // distinct, ascending
  std::vector<Entry> best_;       // per sorted_ address; name == nullptr: none yet
  uint64_t work_cap_;
  uint64_t work_ = 0;
  bool overflowed_ = false;
};

// Demangles a legacy-mangled Rust name (rust_demangle.hpp) or an Itanium C++ ABI name;
// returns the input unchanged when it is neither.
std::string demangle(std::string_view name);

}  // namespace ehbt::elf
