// SPDX-License-Identifier: Apache-2.0
// An ELF object (executable, shared library, vDSO) in its own link-time address space, and a
// Module: an image placed in a target at a load bias.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"

namespace ehbt {

class PerfMap;
struct PerfMapEntry;

// A loadable segment (PT_LOAD), in link-time addresses.
struct Segment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;  // file offset
  uint64_t filesz = 0;
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
};

// Bytes of one section and the link-time address they start at. Empty when absent.
struct SectionRef {
  uint64_t addr = 0;
  std::span<const std::byte> bytes;
  bool empty() const { return bytes.empty(); }
};

struct Symbol {
  std::string name;    // demangled where it was a C++ name
  uint64_t start = 0;  // link-time
  uint64_t size = 0;
};

class Image;

// Finds the separate debug files of one target's images: its debug directories and sysroots,
// its debuginfod session, its warnings (engine/src/core/debug_files.hpp). A target defers each
// image's lookup to it (Image::defer_debug_file), and the first user of the debug file runs it,
// so that only the modules frames land in are looked up, and fetched.
class DebugFileFinder {
 public:
  virtual ~DebugFileFinder() = default;
  // The debug file of `image` (one the finder was told about), or null.
  virtual std::shared_ptr<const Image> find(const Image& image) = 0;
};

// Per-image state owned by the unwinder (parsed CIEs, FDE index, rows). Images are shared
// across cores of one build, so this survives as long as the image does.
class ImageCache {
 public:
  virtual ~ImageCache() = default;
};

class Image {
 public:
  // An ELF file, mapped read-only. Section headers when present, program headers otherwise.
  static Expected<std::shared_ptr<Image>, std::string> open(const std::string& path,
                                                            const Limits& limits = {});
  // ELF bytes already in memory (tests, fuzzers, an image copied out of a core).
  static Expected<std::shared_ptr<Image>, std::string> from_bytes(std::vector<std::byte> bytes,
                                                                  std::string name,
                                                                  const Limits& limits = {});
  // An image reconstructed from target memory alone, the way the kernel does it: ELF header ->
  // program headers -> PT_GNU_EH_FRAME -> .eh_frame_hdr -> .eh_frame. `load_addr` is where
  // the ELF header is mapped in the target.
  static Expected<std::shared_ptr<Image>, std::string> from_memory(Memory& mem, uint64_t load_addr,
                                                                   std::string name,
                                                                   const Limits& limits = {});

  virtual ~Image();

  const std::string& name() const { return name_; }
  const std::string& build_id() const { return build_id_; }  // lowercase hex; "" if none
  Arch arch() const { return arch_; }
  bool big_endian() const { return big_endian_; }
  uint8_t address_size() const { return address_size_; }
  uint16_t elf_type() const { return elf_type_; }  // ET_EXEC, ET_DYN, ...
  uint64_t entry() const { return entry_; }
  const std::vector<Segment>& segments() const { return segments_; }
  // Lowest PT_LOAD vaddr rounded down to its alignment: load base - this = bias.
  uint64_t min_vaddr() const { return min_vaddr_; }
  bool is_executable(uint64_t link_addr) const;

  SectionRef eh_frame_hdr() const { return eh_frame_hdr_; }
  SectionRef eh_frame() const { return eh_frame_; }
  // The file's own .debug_frame, else its separate debug file's (debug_file(): this may look
  // the debug file up).
  SectionRef debug_frame() const;
  SectionRef sframe() const { return sframe_; }
  SectionRef dynamic() const { return dynamic_; }

  // Reads link-time addresses from the file contents of PT_LOAD segments (bss reads as
  // zeros). Short when the range leaves the segments.
  std::size_t read(uint64_t link_addr, std::span<std::byte> out) const;

  // The symbol that covers link_addr (.symtab, else .dynsym, else a build-id debug file's),
  // or nothing; never the nearest preceding symbol of another function. Loaded lazily: an
  // image with a large symbol table answers its first few distinct addresses by one pass
  // each (no table built, for one-shot walks) and builds the table after that.
  std::optional<Symbol> symbolize(uint64_t link_addr) const;
  // symbolize() for many addresses at once, for one-shot callers (the CLI): unless the table
  // is loaded already, one pass over the symbol sources answers exactly these addresses and
  // keeps nothing, which costs far less than building the table. Same answers, in order.
  std::vector<std::optional<Symbol>> symbolize_all(std::span<const uint64_t> link_addrs) const;

  // .gnu_debuglink: the separate debug file's name ("" when absent) and the CRC-32 of that
  // file's whole contents.
  const std::string& debuglink() const { return debuglink_; }
  uint32_t debuglink_crc() const { return debuglink_crc_; }
  // The separate debug file that supplies the .debug_frame, .symtab and DWARF this image
  // lacks. Attached once, by whoever looked it up; a later call changes nothing and returns
  // false.
  bool attach_debug_file(std::shared_ptr<const Image> debug) const;
  // Defers the lookup to the first user of the debug file: debug_file() asks `finder` then,
  // once, and attaches what it finds. Held weakly (a finder lives as long as its target: an
  // image shared through an ImageStore may outlive it). A later call (another target
  // resolving the shared image) replaces a lookup still pending; none is recorded once a
  // debug file is attached.
  void defer_debug_file(std::weak_ptr<DebugFileFinder> finder) const;
  // The attached debug file; when none is and a lookup is deferred, runs it first (under the
  // image's lock: one lookup, however many threads ask). Null when there is none.
  std::shared_ptr<const Image> debug_file() const;
  // The debug file attached so far, without looking it up.
  std::shared_ptr<const Image> attached_debug_file() const;

  ImageCache* cache() const { return cache_.get(); }
  void set_cache(std::unique_ptr<ImageCache> cache) const { cache_ = std::move(cache); }

  // The whole ELF file as this image holds it: a read-only mapping of name() (open) or the
  // bytes given to from_bytes(); empty for an image rebuilt from target memory. For readers
  // of the parts the image does not parse itself (DWARF for source lines, engine/src/lines).
  std::span<const std::byte> file_bytes() const;
  // True when file_bytes() is a mapping of the file name() names (Image::open).
  bool from_file() const;
  // Per-image state of the source-line lookup (engine/src/lines), separate from the
  // unwinder's cache(): made by `make` on the first call, under a lock, and kept as long as
  // the image (so an ImageStore shares it across targets). `make` may return null.
  ImageCache* lines_cache(const std::function<std::unique_ptr<ImageCache>()>& make) const;

 protected:
  Image() = default;

  std::string name_;
  std::string build_id_;
  Arch arch_ = Arch::X86_64;
  bool big_endian_ = false;
  uint8_t address_size_ = 8;
  uint16_t elf_type_ = 0;
  uint64_t entry_ = 0;
  uint64_t min_vaddr_ = 0;
  std::vector<Segment> segments_;
  SectionRef eh_frame_hdr_, eh_frame_, debug_frame_, sframe_, dynamic_;
  std::string debuglink_;
  uint32_t debuglink_crc_ = 0;

 private:
  friend class ImageLoader;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  mutable std::unique_ptr<ImageCache> cache_;
};

// An image as mapped in one target.
struct Module {
  std::shared_ptr<const Image> image;  // may be null: a mapping we know of but have no file for
  std::string path;                    // as the target names it
  uint64_t bias = 0;                   // target address = link-time address + bias
  uint64_t start = 0, end = 0;         // target address range [start, end)
  // true: the file's build-id is the one the target recorded; false: they differ; nothing:
  // either side has none (or no file was found), so there is nothing to compare.
  std::optional<bool> build_id_match;
  std::string file;      // the file actually used ("" if none)
  std::string build_id;  // as recorded by the target (core), hex
  // The separate debug file already attached to `image` when the module was resolved (an
  // image shared with an earlier target); "" otherwise: the lookup itself waits for the
  // first frame that needs it (Image::debug_file(), which names the file it found).
  std::string debug_file;
  // Why no file backs the module, for stop reasons ("libc.so.6 not found (named by the
  // core)"); "" when one does, or when none is expected (the vDSO).
  std::string missing;

  uint64_t to_link(uint64_t target_addr) const { return target_addr - bias; }
  bool contains(uint64_t target_addr) const { return target_addr >= start && target_addr < end; }
};

// The modules of one target, searchable by address.
class ModuleSet {
 public:
  void add(Module m);
  const Module* find(uint64_t target_addr) const;
  // find(), answered by `hint` (a module of this set, e.g. the callee's) when no two modules
  // overlap and the hint contains the address: then it is the only module that can. Saves
  // the search for a return address into the module the walk is already in.
  const Module* find(uint64_t target_addr, const Module* hint) const;
  const std::vector<Module>& modules() const { return modules_; }

  // Additions (JIT code). Executable memory no file backs (a PT_LOAD with PF_X outside every
  // NT_FILE mapping, an anonymous r-xp/rwxp line of /proc/PID/maps): code in no module,
  // stepped by the frame pointer. Regions must not overlap; later overlapping ones are dropped.
  void add_anonymous_code(uint64_t start, uint64_t end);
  const std::vector<std::pair<uint64_t, uint64_t>>& anonymous_code() const { return code_; }
  // Names for code outside every module; may be null.
  void set_perf_map(std::shared_ptr<const PerfMap> map) { perf_map_ = std::move(map); }
  const std::shared_ptr<const PerfMap>& perf_map() const { return perf_map_; }
  // Whether `addr` is JIT code: in an anonymous executable region or named by the perf map
  // (a core without a file list cannot tell anonymous mappings apart), and in no module.
  bool is_jit_code(uint64_t addr) const;
  // The perf map's entry for a pc outside every module, or null.
  const PerfMapEntry* perf_map_entry(uint64_t addr) const;

 private:
  std::vector<Module> modules_;    // sorted by start
  std::vector<uint64_t> max_end_;  // max_end_[i]: largest end among modules_[0..i]
  bool disjoint_ = true;           // no two modules share an address
  std::vector<std::pair<uint64_t, uint64_t>> code_;  // [start, end), sorted, disjoint
  std::shared_ptr<const PerfMap> perf_map_;
};

}  // namespace ehbt
