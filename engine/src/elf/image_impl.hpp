// SPDX-License-Identifier: Apache-2.0
// The private state behind ehbt::Image and the loader that fills it. Only engine/src/elf
// includes this.
#pragma once

#include <libelf.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ehbt/image.hpp"
#include "elf/file_mapping.hpp"
#include "elf/go_pclntab.hpp"
#include "elf/symbol_buckets.hpp"
#include "elf/symbol_table.hpp"

namespace ehbt {

// Owns a libelf descriptor.
struct ElfHandle {
  Elf* elf = nullptr;
  ElfHandle() = default;
  explicit ElfHandle(Elf* e) : elf(e) {}
  ~ElfHandle() {
    if (elf != nullptr) elf_end(elf);
  }
  ElfHandle(const ElfHandle&) = delete;
  ElfHandle& operator=(const ElfHandle&) = delete;
};

namespace elf {
// What one pass through the whole of a symbol table offered a sink: its named function
// symbols (symbol_loader.cpp's add_entries). The same for every sink with room for them.
struct TableCount {
  bool complete = false;  // false: no pass went through the whole table yet
  uint64_t offered = 0;
  // For a table of at least Image::Impl::bucket_min_entries entries (symbol_buckets.hpp,
  // made in symbol_loader.cpp's add_entries); null before, when the table cannot have them,
  // and once the full table is built.
  std::unique_ptr<SymbolBuckets> buckets;
  bool buckets_tried = false;
};
// Per table, keyed by its ELF descriptor and section type. Only for descriptors that live as
// long as the image (its own, its attached debug file's): another descriptor could later sit
// at the same address.
class TableCounts {
 public:
  TableCount& of(const Elf* e, uint32_t type) {
    for (Known& k : known_) {
      if (k.elf == e && k.type == type) return k.count;
    }
    return known_.emplace_back(Known{e, type, {}}).count;
  }
  // Once the full table is built no pass follows: the buckets' memory is given back.
  void drop_buckets() {
    for (Known& k : known_) k.count.buckets.reset();
  }

 private:
  struct Known {
    const Elf* elf;
    uint32_t type;
    TableCount count;
  };
  std::vector<Known> known_;  // a few: .symtab and .dynsym, the debug file's .symtab
};
}  // namespace elf

struct Image::Impl {
  // Where the file bytes live: a read-only mapping (open) or an owned buffer (from_bytes).
  // Section spans point into one of them, so they are declared before anything that refers
  // to them and destroyed last.
  elf::FileMapping mapping;
  std::vector<std::byte> owned;
  std::span<const std::byte> file;           // the whole file; empty for images built from memory
  std::vector<std::byte> debug_frame_plain;  // decompressed .debug_frame, when it was compressed

  // Images from target memory own the pieces they copied, keyed by link-time address.
  std::vector<std::pair<uint64_t, std::vector<std::byte>>> pieces;

  // libelf's view of `file`, kept for the lazy symbol load. Destroyed before the bytes.
  ElfHandle elf;

  Limits limits;
  // False for a separate debug file opened only for its symbols (no further lookups).
  bool allow_debug_file = true;

  // .gnu_debugdata (MiniDebugInfo: an xz-compressed ELF holding a small .symtab).
  std::span<const std::byte> gnu_debugdata;

  // Set once by Image::attach_debug_file, or by the deferred lookup (Image::debug_file);
  // both read and written under the lock.
  mutable std::mutex debug_mu;
  std::shared_ptr<const Image> debug_file;
  std::weak_ptr<DebugFileFinder> debug_finder;  // the lookup deferred, until it runs

  // Image::lines_cache(): made once, under its own lock (a DWARF index may take a while to
  // open, and must not hold up the debug file's readers).
  std::mutex lines_mu;
  bool lines_made = false;
  std::unique_ptr<ImageCache> lines;

  std::once_flag symbols_once;
  elf::SymbolTable symbols;

  // Go's function table: the .gopclntab section, or (no section headers) found by its magic
  // on first use; .text's address is the base of its entry offsets where the header's is 0.
  SectionRef gopclntab_section;
  uint64_t text_addr = 0;
  bool has_section_headers = false;
  // Every section header was read, named, and none is .debug_info (or .zdebug_info): the
  // lines area need not open the file again to learn it has no DWARF (libc.so.6, whose
  // DWARF is in its debug file). False when not known.
  bool no_debug_info = false;
  std::once_flag go_once;
  // Set once `go` is final: every step of a walk asks for the table, and call_once costs more
  // than this load on every call.
  std::atomic<bool> go_known{false};
  std::optional<elf::GoPclntab> go;
  uint64_t go_addr = 0;  // the table's link-time address
  // Go 1.18+: moduledata.gofunc, the base of funcdata offsets (inline trees), found on first
  // use (go_image.cpp).
  std::once_flag gofunc_once;
  std::optional<uint64_t> gofunc;
  std::atomic<bool> symbols_ready{false};  // set once `symbols` is built

  // Answers Image::symbolize gave before the table was built, one pass over the symbol
  // sources each (symbol_loader.cpp): a one-shot walk asks about a few pcs of an image (the
  // function start of a frame with no unwind table), and for a large table a pass costs a
  // small fraction of building it. `passes` counts them; at kMaxSymbolPasses the table is
  // built after all, so a long-lived user pays at most that many passes extra.
  // A pass costs a few dozen instructions an entry, a build several hundred a function (the
  // sort by preference): cgo's 1,789-entry .symtab took 885 K instructions to build for the
  // one frame of a function without unwind table, about 60 K to pass over. Only a table too
  // small for either to matter, under `pass_min_entries` entries, is built at once.
  std::mutex lookups_mu;
  // Held while symbol sources are read (collect_symbols): libelf loads a section's data on
  // first use without a lock of its own, and passes, symbolize_all and the table build of
  // one image may run on several threads.
  std::mutex collect_mu;
  uint64_t pass_min_entries = 256;
  // Tables of this many entries or more are bucketed (TableCount::buckets) by the first of
  // the passes symbolize() makes (symbol_without_table): below it a pass is cheap anyway.
  uint64_t bucket_min_entries = 8192;
  std::optional<uint64_t> own_entries;  // the larger of them, counted on first use
  uint32_t passes = 0;
  std::vector<std::pair<uint64_t, std::optional<Symbol>>> lookups;
  // What each symbol table of the image (and of its attached debug file) offers a sink, learnt
  // by the first pass through it, so that later passes read only the entries they need
  // (symbol_loader.cpp). Under collect_mu.
  elf::TableCounts table_counts;
};

namespace elf {
// One-address passes per image before Image::symbolize builds the full table (see above).
inline constexpr uint32_t kMaxSymbolPasses = 8;
}  // namespace elf

// Builds images; a friend of Image, so its members fill the protected fields directly.
class ImageLoader {
 public:
  using Result = Expected<std::shared_ptr<Image>, std::string>;

  static std::shared_ptr<Image> make(const Limits& limits);
  static Image::Impl& impl(const Image& image) { return *image.impl_; }

  // Parses the file bytes already placed in impl(image).file (and, for open(), `fd`).
  static Expected<void, std::string> parse_file(Image& image, int fd);
  static Result from_memory(Memory& mem, uint64_t load_addr, std::string name,
                            const Limits& limits);
  // Feeds every symbol source of the image, in order, to `sink` (symbol_loader.cpp).
  // `learn`: remember what each table offers, for later passes (symbol_loader.cpp).
  // `may_bucket`: a large table may be bucketed by this pass (symbol_buckets.hpp).
  static void collect_symbols(const Image& image, elf::SymbolSink& sink, bool learn = true,
                              bool may_bucket = false);
  // Builds the image's full symbol table (once).
  static void load_symbols(const Image& image);
  // One pass over the symbol sources answering `addrs` only (no table kept).
  static std::vector<std::optional<Symbol>> query_symbols(const Image& image,
                                                          std::span<const uint64_t> addrs);
  // symbolize(addr) without the table, while the pass budget lasts (Image::Impl::lookups);
  // nothing when the caller is to build the table and look there.
  static std::optional<std::optional<Symbol>> symbol_without_table(const Image& image,
                                                                   uint64_t addr);
};

namespace elf {

// PT_GNU_SFRAME (binutils 2.40+); older <elf.h> lacks it.
inline constexpr uint32_t kPtGnuSframe = 0x6474e554;
// Section headers walked per image at most.
inline constexpr uint32_t kMaxSections = 1u << 20;
// Page size assumed when a PT_LOAD states no usable alignment.
inline constexpr uint64_t kPageSize = 4096;

// Lowest PT_LOAD vaddr rounded down to its alignment (a power of two), else to a page.
uint64_t load_base(uint64_t vaddr, uint64_t align);

// The PT_LOAD whose file-backed part [vaddr, vaddr + filesz) holds addr, or null.
const Segment* file_segment_at(const std::vector<Segment>& segments, uint64_t addr);

// Initialises libelf once per process.
bool libelf_ready();

}  // namespace elf
}  // namespace ehbt
