// SPDX-License-Identifier: Apache-2.0
// DWARF call frame information: the contract between the table parsers/evaluator (this
// directory) and their users (the unwinder, `ehbt cfi`, benchmarks, fuzzers).
//
// Everything here works in an image's link-time addresses over section bytes owned by the
// image; nothing reads target memory except DW_EH_PE_indirect pointers and expression
// dereferences, which go through a fallible Memory.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"
#include "ehbt/stop_reason.hpp"

namespace ehbt::dwarf {

enum class ErrorCode : uint8_t {
  Truncated,        // a record or operand runs past its bytes
  BadLength,        // a length field points past the section or is impossible
  BadLeb128,        // LEB128 longer than 10 bytes or overflowing 64 bits
  BadEncoding,      // unknown or unusable DW_EH_PE_* encoding
  BadCie,           // CIE pointer does not lead to a CIE (or leads to itself)
  BadVersion,       // CIE version not 1, 3 or 4
  BadAugmentation,  // augmentation string not understood and no 'z' to skip it
  BadOpcode,        // unknown DW_CFA_* / DW_OP_* opcode
  BadRegister,      // register number outside the tracked range
  BadState,         // restore_state without remember_state, and the like
  Unsorted,         // .eh_frame_hdr table not sorted
  NotCovered,       // the FDE found does not cover the pc
  NoEntry,          // no FDE covers the pc
  Unsupported,      // valid DWARF deliberately not evaluated
  MemoryFault,      // a target read failed (indirect pointer, deref)
  DivideByZero,     // DW_OP_div / DW_OP_mod by zero
  StackUnderflow,   // expression stack too shallow for an op
  LimitCfiInstructions,
  LimitRememberDepth,
  LimitRules,
  LimitExprSteps,
  LimitExprStack,
  LimitExprBytes,
  LimitRecordBytes,
  LimitIndexEntries,
  LimitSearchProbes,
};

struct Error {
  ErrorCode code = ErrorCode::Truncated;
  uint64_t where = 0;  // section offset, link-time address or target address, per code
};

std::string_view to_string(ErrorCode code);
StopReason to_stop_reason(ErrorCode code);

struct Format {
  bool big_endian = false;
  uint8_t address_size = 8;
};

enum class SectionKind : uint8_t { EhFrame, DebugFrame };

struct SectionView {
  uint64_t addr = 0;  // link-time address of bytes[0]
  std::span<const std::byte> bytes;
};

// Bases for DW_EH_PE_textrel / DW_EH_PE_datarel (0 = unknown: such encodings then fail).
struct Bases {
  uint64_t text = 0;
  uint64_t data = 0;
};

// DW_EH_PE_indirect reads through this (link-time address -> value), may be null.
using IndirectReader = std::function<std::optional<uint64_t>(uint64_t link_addr)>;

struct Cie {
  uint64_t offset = 0;  // in section
  uint8_t version = 1;
  std::string_view augmentation;
  uint64_t code_align = 1;
  int64_t data_align = 1;
  uint16_t ra_reg = 0;
  uint8_t address_size = 8;
  uint8_t segment_size = 0;
  uint8_t fde_encoding = 0;      // DW_EH_PE_absptr
  uint8_t lsda_encoding = 0xff;  // DW_EH_PE_omit
  bool has_z = false;
  bool signal_frame = false;  // 'S'
  bool b_key = false;         // 'B' (aarch64 pointer authentication with the B key)
  bool mte_tagged = false;    // 'G'
  uint64_t personality = 0;
  std::span<const std::byte> instructions;
  // Additions: where the instructions sit (set_loc's pc-relative base, error offsets), and the
  // personality's encoding and, when indirect, the address of its pointer cell. An indirect
  // personality that cannot be read leaves `personality` 0: unwinding never needs it.
  uint64_t instructions_offset = 0;  // section offset of instructions[0]
  uint64_t section_addr = 0;         // link-time address of the section
  uint8_t personality_encoding = 0xff;
  uint64_t personality_ptr = 0;
};

struct Fde {
  uint64_t offset = 0;      // in section
  uint64_t cie_offset = 0;  // in section
  uint64_t pc_begin = 0;    // link-time
  uint64_t pc_end = 0;      // exclusive
  uint64_t lsda = 0;
  std::span<const std::byte> instructions;
  // Additions (see Cie). An indirect LSDA that cannot be read leaves `lsda` 0.
  uint64_t instructions_offset = 0;  // section offset of instructions[0]
  uint64_t section_addr = 0;         // link-time address of the section
  uint64_t end_offset = 0;           // section offset just past the record
};

// The framing every record shares: length (32- or 64-bit), then a CIE id or CIE pointer.
enum class RecordKind : uint8_t { Cie, Fde, Terminator };
struct RecordHeader {
  uint64_t offset = 0;  // of the length field
  uint64_t body = 0;    // just past the CIE id / CIE pointer
  uint64_t end = 0;     // just past the record (offset + 4 for a terminator)
  bool dwarf64 = false;
  RecordKind kind = RecordKind::Cie;
  uint64_t cie_offset = 0;  // FDE: the CIE it names, in the section (inside it, not itself)
};
// Reads the header of the record at `offset`. BadLength when the record runs past the section,
// LimitRecordBytes when it is longer than Limits::max_record_bytes, BadCie when an FDE's CIE
// pointer leads outside the section or back to the FDE itself.
Expected<RecordHeader, Error> parse_record_header(SectionKind kind, SectionView section,
                                                  uint64_t offset, Format fmt,
                                                  const Limits& limits);

enum class RuleKind : uint8_t {
  Unspecified,  // no rule: the architecture decides (callee-saved -> same value)
  Undefined,
  SameValue,
  Offset,         // saved at CFA + offset
  ValOffset,      // value is CFA + offset
  Register,       // value is in register `reg`
  Expression,     // saved at the address the expression computes (CFA pushed first)
  ValExpression,  // value is what the expression computes (CFA pushed first)
  // Additions for SFrame V3 flexible FDEs (rows the DWARF evaluator itself never makes):
  RegOffset,    // value is register `reg` + offset
  AtRegOffset,  // saved at register `reg` + offset
};

struct Rule {
  RuleKind kind = RuleKind::Unspecified;
  uint16_t reg = 0;
  int64_t offset = 0;
  std::span<const std::byte> expr;
};

enum class CfaKind : uint8_t {
  Undefined,
  RegOffset,
  Expression,
  // Addition for SFrame V3 flexible FDEs (DRAP): CFA = the value stored at reg + offset.
  RegOffsetDeref,
};

struct CfaRule {
  CfaKind kind = CfaKind::Undefined;
  uint16_t reg = 0;
  int64_t offset = 0;
  std::span<const std::byte> expr;
};

struct RegRule {
  uint16_t reg = 0;
  Rule rule;
};

// One row of the CFI table: holds for link-time pcs in [start, end).
struct Row {
  uint64_t start = 0;
  uint64_t end = 0;
  CfaRule cfa;
  uint16_t ra_reg = 0;
  bool signal_frame = false;
  bool ra_signed = false;  // aarch64: DW_CFA_AARCH64_negate_ra_state toggled an odd number of times
  bool b_key = false;
  uint8_t num_rules = 0;
  std::array<RegRule, kRowCapacity> rules{};

  // The rule for `reg` (Unspecified when the row has none).
  Rule rule(uint16_t reg) const;
  // Sets (or, with Unspecified, removes) a rule; fails when the row is full.
  bool set_rule(uint16_t reg, const Rule& rule, uint32_t max_rules);
};

// Parses the record at `offset` of a section.
Expected<Cie, Error> parse_cie(SectionKind kind, SectionView section, uint64_t offset, Format fmt,
                               const Limits& limits, const Bases& bases = {},
                               const IndirectReader& indirect = {});
Expected<Fde, Error> parse_fde(SectionKind kind, SectionView section, uint64_t offset,
                               const Cie& cie, Format fmt, const Limits& limits,
                               const Bases& bases = {}, const IndirectReader& indirect = {});

// Evaluates CIE initial instructions then FDE instructions up to (and including) `pc`.
Expected<Row, Error> evaluate_row(const Cie& cie, const Fde& fde, uint64_t pc, Format fmt,
                                  const Limits& limits);

// Calls `fn` for every row an FDE defines (for `ehbt cfi`). Stops at the first error.
Expected<void, Error> for_each_row(const Cie& cie, const Fde& fde, Format fmt, const Limits& limits,
                                   const std::function<void(const Row&)>& fn);

// Bounded DWARF expression evaluation.
struct ExprContext {
  const RegisterSet* regs = nullptr;  // breg*/bregx read these (must be valid)
  Memory* mem = nullptr;              // deref* read these
  Format fmt;
  const Limits* limits = nullptr;
  std::optional<uint64_t> cfa;  // DW_OP_call_frame_cfa
};
Expected<uint64_t, Error> evaluate_expression(std::span<const std::byte> expr,
                                              const ExprContext& ctx,
                                              std::optional<uint64_t> initial_push = {});

// .eh_frame_hdr: version 1, eh_frame_ptr, fde_count, and a sorted table.
class EhFrameHdr {
 public:
  static Expected<EhFrameHdr, Error> parse(SectionView hdr, Format fmt, const Limits& limits,
                                           const IndirectReader& indirect = {});
  uint64_t eh_frame_addr() const { return eh_frame_addr_; }
  bool has_table() const { return count_ > 0; }
  uint64_t count() const { return count_; }
  // Link-time address of the FDE whose initial location is the greatest <= pc. Checks
  // sortedness of every probe. NoEntry when pc precedes the first entry.
  Expected<uint64_t, Error> lookup(uint64_t pc) const;

  // Additions: the table entries themselves.
  struct Entry {
    uint64_t initial_loc = 0;  // link-time pc
    uint64_t fde_addr = 0;     // link-time address of the FDE
  };
  // Entry `index` (< count()); Truncated/BadEncoding when it cannot be decoded.
  Expected<Entry, Error> entry(uint64_t index) const;
  // Like lookup(), returning the whole entry.
  Expected<Entry, Error> lookup_entry(uint64_t pc) const;
  uint8_t table_encoding() const { return table_enc_; }

 private:
  SectionView hdr_;
  Format fmt_;
  Limits limits_;
  uint64_t eh_frame_addr_ = 0;
  uint64_t count_ = 0;
  uint8_t table_enc_ = 0xff;
  uint64_t table_offset_ = 0;
  uint32_t entry_size_ = 0;
};

// All CFI of one image: .eh_frame through .eh_frame_hdr (or a sorted index built by one linear
// scan when there is no usable table), then .debug_frame. Caches CIEs, the index and recent
// rows. A section found corrupt is marked bad and not parsed again. Not thread-safe.
class ImageCfi {
 public:
  ImageCfi(SectionView eh_frame_hdr, SectionView eh_frame, SectionView debug_frame, Format fmt,
           Bases bases, const Limits& limits, IndirectReader indirect = {});
  ~ImageCfi();
  ImageCfi(const ImageCfi&) = delete;
  ImageCfi& operator=(const ImageCfi&) = delete;

  // Where .debug_frame comes from when the constructor was given none: asked once, by the
  // first lookup that reaches .debug_frame (a pc .eh_frame does not cover), so that an image's
  // separate debug file is looked up only when its tables need it.
  void set_debug_frame_source(std::function<SectionView()> source);

  // The row covering link-time `pc`; `from` tells which section gave it.
  Expected<Row, Error> find_row(uint64_t pc, SectionKind* from = nullptr,
                                bool use_debug_frame = true);
  // Addition: like find_row, without copying the row (a Row is ~2 KB). The pointer is into
  // the row cache and stays valid until the next find_row/find_row_ref on this object.
  Expected<const Row*, Error> find_row_ref(uint64_t pc, SectionKind* from = nullptr,
                                           bool use_debug_frame = true);
  // FDE + CIE covering `pc` in one section.
  Expected<std::pair<Fde, Cie>, Error> find_fde(SectionKind kind, uint64_t pc);
  // Every FDE of a section, in section order; errors on records are reported to on_error and
  // the walk goes on where the record length allows.
  void for_each_fde(SectionKind kind, const std::function<void(const Fde&, const Cie&)>& fn,
                    const std::function<void(const Error&)>& on_error);

  bool eh_frame_bad() const;
  bool debug_frame_bad() const;
  Format format() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ehbt::dwarf
