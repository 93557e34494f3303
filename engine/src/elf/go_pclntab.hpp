// SPDX-License-Identifier: Apache-2.0
// Go's function table (.gopclntab, the runtime's `runtime.pclntab`): every Go function's entry
// pc, name and the pc-value tables the Go runtime unwinds with. Go binaries keep it even when
// stripped of .symtab and DWARF (`go build -ldflags='-s -w'`), because the runtime needs it.
//
// Layouts read (by the header's magic): Go 1.2-1.15 (0xfffffffb), 1.16-1.17 (0xfffffffa),
// 1.18-1.19 (0xfffffff0) and 1.20+ (0xfffffff1). Byte order is told by the magic, the pointer
// size and the pc quantum (the instruction size unit: 1 on x86, 4 on arm64) by the header.
// Every read is bounds-checked against the table's bytes; a table that does not make sense
// yields no answer, never a guess.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ehbt::elf {

class GoPclntab {
 public:
  enum class Version : uint8_t { Go12, Go116, Go118, Go120 };

  // One function: [entry, end) in link-time addresses, and where its _func record starts
  // (an offset into the table's bytes).
  struct Func {
    uint64_t entry = 0;
    uint64_t end = 0;
    uint64_t record = 0;
  };

  // Reads the header of the table in `bytes`. `text_hint`: the link-time address of .text,
  // used by 1.18+ tables whose textStart field is zero (left to a dynamic relocation).
  // Nothing when the bytes are no table this reader knows or the header points outside them.
  static std::optional<GoPclntab> parse(std::span<const std::byte> bytes, uint64_t text_hint = 0);
  // Whether `bytes` start with a header parse() accepts (for a bounded search by magic).
  static bool looks_like(std::span<const std::byte> bytes);

  Version version() const { return version_; }
  bool big_endian() const { return big_endian_; }
  uint8_t ptr_size() const { return ptr_size_; }
  uint8_t pc_quantum() const { return quantum_; }
  uint64_t size() const { return nfunc_; }

  // The i-th function of the table (sorted by entry), or nothing when its entry is unreadable.
  std::optional<Func> func(uint64_t index) const;
  // The i-th function's entry alone (func() without its record: index == size() is the end
  // of the last function), or nothing when it is unreadable.
  std::optional<uint64_t> entry(uint64_t index) const {
    uint64_t pc = 0;
    return entry_pc(index, pc) ? std::optional<uint64_t>(pc) : std::nullopt;
  }
  // The function whose [entry, end) holds pc: a binary search of at most `max_probes` steps
  // that also checks the table is sorted where it looks.
  std::optional<Func> find(uint64_t pc, uint32_t max_probes) const;
  // The function's name, as Go prints it (`main.main`, `runtime.(*mheap).alloc`).
  std::optional<std::string_view> name(const Func& f) const;
  // The stack pointer's offset from its value at function entry at `pc` (the pcsp table): the
  // frame's size so far, not counting the return address. Nothing when the function has no
  // table, pc is outside it, or the table is malformed or longer than `max_steps` entries.
  std::optional<int64_t> sp_delta(const Func& f, uint64_t pc, uint32_t max_steps) const;

  // Addition (source lines, Go 1.16+ layouts; nothing for older tables): what Go's traceback
  // reads to print `file:line` and the calls inlined at a pc.
  // The value of one of the function's pc-value tables at `pc`; `table` is its offset as the
  // _func record or a pcdata slot holds it (0: no table, nothing).
  std::optional<int64_t> pc_value(const Func& f, uint32_t table, uint64_t pc,
                                  uint32_t max_steps) const;
  // The _func record's line tables: pcfile (values: file indexes of the function's compile
  // unit) and pcln (values: line numbers).
  struct LineTables {
    uint32_t pcfile = 0;
    uint32_t pcln = 0;
    uint32_t cu_offset = 0;
  };
  std::optional<LineTables> line_tables(const Func& f) const;
  // The function's pcdata table `index` (its pctab offset; 0 when the function has none).
  std::optional<uint32_t> pcdata_table(const Func& f, uint32_t index) const;
  // The function's funcdata `index`: Go 1.18+, an offset from moduledata.gofunc (the
  // go:func.* data, outside this table); 1.16-1.17, the link-time address itself. Nothing
  // when the function has none.
  std::optional<uint64_t> funcdata(const Func& f, uint32_t index) const;
  // Whether funcdata() values are offsets from moduledata.gofunc (else addresses).
  bool funcdata_is_offset() const { return version_ >= Version::Go118; }
  // The file name pcfile's value `file_index` stands for in the compile unit at `cu_offset`.
  std::optional<std::string_view> file_name(uint32_t cu_offset, int64_t file_index) const;
  // A name by its offset in the function-name table (_func.nameOff, an inlined call's name).
  std::optional<std::string_view> name_at(int64_t name_offset) const;
  // Offset of the function-name table from the table's start (moduledata.funcnametab points
  // there).
  uint64_t funcname_offset() const { return funcname_off_; }
  uint64_t text_start() const { return text_start_; }

 private:
  bool read_uint(uint64_t off, unsigned size, uint64_t& out) const;
  // The NUL-terminated, non-empty string at `at`.
  std::optional<std::string_view> string_at(uint64_t at) const;
  bool entry_at(uint64_t index, uint64_t& entry, uint64_t& record) const;
  // entry_at without the record: what a search step needs.
  bool entry_pc(uint64_t index, uint64_t& entry) const;
  // Bytes of each of the two words of a function-table entry (pc, record): 32-bit offsets
  // from 1.18 on, pointers before.
  unsigned functab_word() const { return version_ >= Version::Go118 ? 4 : ptr_size_; }
  // Offset of the _func field that follows the entry, which is a word of the same kind.
  uint64_t after_entry() const { return functab_word(); }

  std::span<const std::byte> bytes_;
  uint64_t id_ = 0;  // parse()'s: copies answer alike and share it
  Version version_ = Version::Go118;
  bool big_endian_ = false;
  uint8_t ptr_size_ = 8;
  uint8_t quantum_ = 1;
  uint64_t nfunc_ = 0;
  uint64_t text_start_ = 0;
  uint64_t funcname_off_ = 0;  // base of name offsets
  uint64_t cutab_off_ = 0;     // per-compile-unit file index tables (1.16+)
  uint64_t filetab_off_ = 0;   // file names (1.16+)
  uint64_t pctab_off_ = 0;     // base of pc-value table offsets
  uint64_t functab_off_ = 0;   // the function table
  uint64_t func_base_ = 0;     // base of _func record offsets (the table itself before 1.16)
};

}  // namespace ehbt::elf
