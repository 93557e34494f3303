// SPDX-License-Identifier: Apache-2.0
// Loads an image's function symbols on first use: its own .symtab, else the .symtab of its
// separate debug file (the one the module resolver attached -- see core/debug_files.hpp --
// or, for an image opened on its own, one found by build-id as
// <dir>/<first two hex digits>/<remaining digits>.debug under each directory of the
// EHBT_DEBUG_DIR environment variable (':'-separated) and then /usr/lib/debug/.build-id),
// else MiniDebugInfo's .symtab together with .dynsym (MiniDebugInfo holds only what .dynsym
// lacks), and then Go's function table (.gopclntab) for what those leave unnamed. NAME@plt
// stubs are added in every case, as GDB shows them.
#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "elf/go_image.hpp"
#include "elf/image_impl.hpp"
#include "elf/minidebuginfo.hpp"
#include "elf/plt_symbols.hpp"

namespace ehbt {
namespace {

constexpr std::string_view kSystemDebugDir = "/usr/lib/debug/.build-id";

// A string table's bytes as libelf holds them (in the file mapping): names are views into it.
std::span<const char> string_table(Elf* e, std::size_t index) {
  Elf_Scn* scn = elf_getscn(e, index);
  GElf_Shdr sh;
  if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_STRTAB ||
      (sh.sh_flags & SHF_COMPRESSED) != 0)
    return {};
  Elf_Data* d = elf_getdata(scn, nullptr);
  if (d == nullptr || d->d_buf == nullptr) return {};
  return {static_cast<const char*>(d->d_buf), d->d_size};
}

// The NUL-terminated name at `off`; empty when it is out of bounds or unterminated.
std::string_view name_at(std::span<const char> strings, uint64_t off) {
  if (off >= strings.size()) return {};
  const char* p = strings.data() + off;
  const std::size_t room = strings.size() - static_cast<std::size_t>(off);
  const std::size_t len = strnlen(p, room);
  return len < room ? std::string_view(p, len) : std::string_view();
}

// What offer_entry did with one table entry.
enum class Offered : uint8_t {
  kNotNamedFunction,  // not offered: not a function symbol, or no name
  kCounted,           // offered, and the sink counted it (skip() or add() returned true)
  kRefused,           // offered, and the sink was full
};

// Whether a table entry is a named function symbol: defined, at a non-zero address, a
// function or a sized label in executable code, with a name offset inside the string table.
template <typename Sym>
[[gnu::always_inline]] inline bool named_function(const Sym& sym, std::span<const char> strings,
                                                  const Image& image) {
  const unsigned st_type = ELF64_ST_TYPE(sym.st_info);
  if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) return false;
  const bool func = st_type == STT_FUNC || st_type == STT_GNU_IFUNC;
  const bool code_label =
      st_type == STT_NOTYPE && sym.st_size > 0 && image.is_executable(sym.st_value);
  if (!func && !code_label) return false;
  return sym.st_name != 0 && sym.st_name < strings.size();
}

// Adds a named function symbol the sink wants (or counts it, when its name is empty);
// SymbolSink::add's answer.
template <typename Sym>
[[gnu::always_inline]] inline bool add_wanted(const Sym& sym, std::span<const char> strings,
                                              elf::SymbolSink& sink) {
  const std::string_view name = name_at(strings, sym.st_name);
  return name.empty() ? sink.skip()
                      : sink.add(sym.st_value, sym.st_size, name, ELF64_ST_BIND(sym.st_info),
                                 static_cast<uint8_t>(ELF64_ST_TYPE(sym.st_info)));
}

// Offers one table entry to the sink when it is a named function symbol.
template <typename Sym>
[[gnu::always_inline]] inline Offered offer_entry(const Sym& sym, std::span<const char> strings,
                                                  const Image& image, elf::SymbolSink& sink) {
  if (!named_function(sym, strings, image)) return Offered::kNotNamedFunction;
  // A named symbol counts towards the cap whether or not its name turns out empty or
  // unterminated: deciding that needs the name's bytes, and a symbol the sink has no use
  // for is only counted, its name never touched. The names are scattered over the string
  // table (7 MB for node), so reading even one byte of each faulted in nearly every page of
  // it for a one-shot query. The full table counts the same way, so both reach the cap at
  // the same entry.
  const bool counted =
      sink.wants(sym.st_value, sym.st_size) ? add_wanted(sym, strings, sink) : sink.skip();
  return counted ? Offered::kCounted : Offered::kRefused;
}

// Reads the entries in place (libelf has already converted them to host order) rather than
// copying each through gelf_getsym.
//
// Which entries are offered is a property of the table, not of the sink (every named function
// symbol, wanted or not, while the sink has room): `known`, when given, holds how many a pass
// through the whole table offered. With it, and room in the sink for that many, a later pass
// offers only the entries that reach into the sink's window -- one comparison for each of the
// others, which the sink would refuse (wants() tests the window first) and only count -- and
// counts the others at once. A sink for one address (Image::symbolize before the table is
// built) then costs a tenth of the instructions on node's 110,000-entry .symtab.
//
// A sink for a fixed set of addresses is answered from the table's buckets
// (symbol_buckets.hpp) once they are made: by a pass allowed to (`bucket_min`: the fewest
// entries of a table worth them, UINT64_MAX for a pass that may not make them), which counts
// what the table offers as a pass through it would. The entries they return are a superset of
// those that reach into the window, each tested as above.
template <typename Sym>
std::size_t add_entries(const Elf_Data& data, std::span<const char> strings, const Image& image,
                        elf::SymbolSink& sink, uint64_t max_entries, elf::TableCount* known,
                        uint64_t bucket_min) {
  const auto* syms = static_cast<const Sym*>(data.d_buf);
  const uint64_t end = std::min<uint64_t>(data.d_size / sizeof(Sym), max_entries);
  const std::span<const uint64_t> addrs = sink.addresses();
  if (known != nullptr && !known->buckets_tried && !addrs.empty() && end >= bucket_min) {
    known->buckets_tried = true;
    // The image's address range: a start outside every segment is visited for every address.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const Segment& seg : image.segments()) {
      const uint64_t last = seg.memsz > 0 ? std::min(seg.memsz - 1, UINT64_MAX - seg.vaddr) : 0;
      lo = std::min(lo, seg.vaddr);
      hi = std::max(hi, seg.vaddr + last);
    }
    known->buckets = elf::SymbolBuckets::build(
        std::span<const Sym>(syms, end), lo, hi,
        [&](const Sym& sym) { return named_function(sym, strings, image); });
    if (known->buckets) {
      known->complete = true;
      known->offered = known->buckets->size();
    }
  }
  std::size_t added = 0;
  uint64_t offered = 0;
  if (known != nullptr && known->complete && known->offered <= sink.room()) {
    const uint64_t first = sink.window_first(), last = sink.window_last();
    auto consider = [&](const Sym& sym) {
      if (sym.st_value > last || elf::entry_end(sym.st_value, sym.st_size) <= first) return;
      const Offered o = offer_entry(sym, strings, image, sink);
      if (o != Offered::kNotNamedFunction) ++offered;
      if (o == Offered::kCounted) ++added;
    };
    if (known->buckets && !addrs.empty()) {
      known->buckets->for_candidates(addrs, [&](uint32_t i) { consider(syms[i]); });
    } else {
      for (uint64_t i = 1; i < end; ++i) consider(syms[i]);
    }
    // Those outside the window, each skipped (and counted) as wants() refusing it would be;
    // the room test above means none is refused.
    const uint64_t outside = known->offered - offered;
    sink.skip_many(outside);
    return added + static_cast<std::size_t>(outside);
  }
  uint64_t i = 1;                             // entry 0 is the reserved null symbol
  if (known == nullptr || known->complete) {  // nothing to learn: the plain loop
    for (; i < end && !sink.full(); ++i) {
      if (offer_entry(syms[i], strings, image, sink) == Offered::kCounted) ++added;
    }
    return added;
  }
  if (end <= sink.room()) {
    // The first pass, learning the count, for a sink the table cannot fill (every named
    // function symbol is counted): an entry the sink does not want is counted here and
    // skipped all at once after the loop, as skip() for each would have. Nearly every run's
    // pass over libc's debug file (10,000 entries) is one: about 31 instructions an entry
    // the other way, about 18 this one.
    uint64_t outside = 0;
    for (; i < end; ++i) {
      const Sym& sym = syms[i];
      if (!named_function(sym, strings, image)) continue;
      ++offered;
      if (!sink.wants(sym.st_value, sym.st_size)) {
        ++outside;
      } else if (add_wanted(sym, strings, sink)) {
        ++added;
      }
    }
    sink.skip_many(outside);
    known->complete = true;
    known->offered = offered;
    return added + static_cast<std::size_t>(outside);
  }
  for (; i < end && !sink.full(); ++i) {
    const Offered o = offer_entry(syms[i], strings, image, sink);
    if (o != Offered::kNotNamedFunction) ++offered;
    if (o == Offered::kCounted) ++added;
  }
  if (i >= end) {
    known->complete = true;
    known->offered = offered;
  }
  return added;
}

// Adds the function symbols of the first section of `type` in `e`. True when it added any.
// `counts`: where what this table counts is remembered (add_entries), or null.
bool add_symbols(Elf* e, uint32_t type, const Image& image, elf::SymbolSink& sink,
                 const Limits& limits, elf::TableCounts* counts, uint64_t bucket_min = UINT64_MAX) {
  if (e == nullptr) return false;
  // Raw entries examined per table: symbol tables hold many non-function entries.
  const uint64_t max_entries = uint64_t{limits.max_symbols} * 4 + 16;
  const int cls = gelf_getclass(e);
  Elf_Scn* scn = nullptr;
  for (uint32_t n = 0; n < elf::kMaxSections && (scn = elf_nextscn(e, scn)) != nullptr; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr || data->d_type != ELF_T_SYM) return false;
    const std::size_t entsize = cls == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
    const std::size_t align = cls == ELFCLASS64 ? alignof(Elf64_Sym) : alignof(Elf32_Sym);
    if ((reinterpret_cast<uintptr_t>(data->d_buf) % align) != 0) return false;
    // Most entries of a real table are functions.
    sink.reserve(std::min<uint64_t>(data->d_size / entsize, max_entries));
    const std::span<const char> strings = string_table(e, sh.sh_link);
    elf::TableCount* known = counts != nullptr ? &counts->of(e, type) : nullptr;
    const std::size_t added =
        cls == ELFCLASS64
            ? add_entries<Elf64_Sym>(*data, strings, image, sink, max_entries, known, bucket_min)
        : cls == ELFCLASS32
            ? add_entries<Elf32_Sym>(*data, strings, image, sink, max_entries, known, bucket_min)
            : 0;
    return added > 0;
  }
  return false;
}

bool is_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Opens the separate debug file for `build_id`, or returns null.
std::shared_ptr<Image> open_debug_file(const std::string& build_id, const Limits& limits) {
  if (build_id.size() < 4 || !is_hex(build_id)) return nullptr;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EHBT_DEBUG_DIR"); env != nullptr) {
    std::string_view rest(env);
    // Bounded by the variable's length: each step consumes at least one character.
    while (!rest.empty()) {
      std::size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  dirs.emplace_back(kSystemDebugDir);
  const std::string tail = build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  for (const std::string& dir : dirs) {
    auto img = Image::open(dir + "/" + tail, limits);
    if (!img) continue;
    // A debug file for another build would attach wrong names.
    if ((*img)->build_id() != build_id) continue;
    ImageLoader::impl(**img).allow_debug_file = false;
    return *img;
  }
  return nullptr;
}

// Entries of the larger of e's .symtab and .dynsym, from the section headers alone.
uint64_t symbol_entries(Elf* e) {
  uint64_t most = 0;
  Elf_Scn* scn = nullptr;
  for (uint32_t n = 0; e != nullptr && n < elf::kMaxSections && (scn = elf_nextscn(e, scn)); ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_entsize == 0) continue;
    if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
      most = std::max<uint64_t>(most, sh.sh_size / sh.sh_entsize);
  }
  return most;
}

}  // namespace

void ImageLoader::collect_symbols(const Image& image, elf::SymbolSink& sink, bool learn,
                                  bool may_bucket) {
  Image::Impl& im = *image.impl_;
  std::lock_guard<std::mutex> lock(im.collect_mu);
  elf::TableCounts* counts = learn ? &im.table_counts : nullptr;  // under collect_mu
  const uint64_t bucket_min = may_bucket ? im.bucket_min_entries : UINT64_MAX;
  bool found = add_symbols(im.elf.elf, SHT_SYMTAB, image, sink, im.limits, counts, bucket_min);
  if (!found && im.allow_debug_file) {
    std::shared_ptr<const Image> dbg = image.debug_file();
    // An attached debug file lives as long as the image; one opened here only for this pass.
    elf::TableCounts* dbg_counts = dbg ? counts : nullptr;
    if (!dbg && !image.build_id().empty()) dbg = open_debug_file(image.build_id(), im.limits);
    if (dbg) {
      found = add_symbols(dbg->impl_->elf.elf, SHT_SYMTAB, image, sink, im.limits, dbg_counts,
                          bucket_min);
      sink.keep(dbg);  // its string table holds the names
    }
  }
  if (!found) {
    if (auto mini = elf::open_minidebuginfo(im.gnu_debugdata, im.limits)) {
      add_symbols(mini->impl_->elf.elf, SHT_SYMTAB, image, sink, im.limits, nullptr);
      sink.keep(mini);
    }
    add_symbols(im.elf.elf, SHT_DYNSYM, image, sink, im.limits, counts, bucket_min);
    elf::add_go_symbols(image, sink, im.limits);
  }
  elf::add_plt_symbols(im.elf.elf, image, sink, im.limits);
}

void ImageLoader::load_symbols(const Image& image) {
  Image::Impl& im = *image.impl_;
  elf::SymbolTable table(im.limits.max_symbols);
  collect_symbols(image, table, false);  // no pass follows the table: nothing to learn
  table.finish();
  im.symbols = std::move(table);
  im.symbols_ready.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(im.collect_mu);
  im.table_counts.drop_buckets();
}

std::vector<std::optional<Symbol>> ImageLoader::query_symbols(const Image& image,
                                                              std::span<const uint64_t> addrs) {
  Image::Impl& im = *image.impl_;
  // As much work as building the full table would take; more (many symbols covering many of
  // the addresses: hostile or odd tables) and the table is built after all.
  elf::SymbolQuery query(addrs, im.limits.max_symbols, uint64_t{im.limits.max_symbols} + 16);
  collect_symbols(image, query);
  if (!query.overflowed()) return query.results();
  std::vector<std::optional<Symbol>> out;
  out.reserve(addrs.size());
  for (uint64_t a : addrs) out.push_back(image.symbolize(a));
  return out;
}

std::optional<std::optional<Symbol>> ImageLoader::symbol_without_table(const Image& image,
                                                                       uint64_t addr) {
  Image::Impl& im = *image.impl_;
  // MiniDebugInfo is decompressed by every pass: one table build is cheaper than several.
  if (!im.gnu_debugdata.empty()) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(im.lookups_mu);
    for (const auto& [a, sym] : im.lookups) {
      if (a == addr) return sym;
    }
    if (!im.own_entries) {
      std::lock_guard<std::mutex> collecting(im.collect_mu);  // libelf: see collect_mu
      im.own_entries = symbol_entries(im.elf.elf);
    }
    if (*im.own_entries < im.pass_min_entries) return std::nullopt;
    if (im.passes >= elf::kMaxSymbolPasses) return std::nullopt;
    ++im.passes;  // claimed before the pass, so concurrent callers stay within the budget
  }
  // The pass runs unlocked: it only reads the image. The work cap is query_symbols' own.
  const uint64_t one[] = {addr};
  elf::SymbolQuery query(one, im.limits.max_symbols, uint64_t{im.limits.max_symbols} + 16);
  // A walk's pass may bucket a large table: a walk that asks about one pc of an image often
  // asks about more (node's builtins: seven), and making the buckets costs about what the
  // pass would have. A report's pass that names the frames never makes them (it is most
  // images' only pass, and then they would cost more than they save).
  collect_symbols(image, query, true, true);
  if (query.overflowed()) return std::nullopt;
  std::optional<Symbol> sym = std::move(query.results().front());
  std::lock_guard<std::mutex> lock(im.lookups_mu);
  im.lookups.emplace_back(addr, sym);
  return sym;
}

}  // namespace ehbt
