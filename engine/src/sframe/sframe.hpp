// SPDX-License-Identifier: Apache-2.0
// SFrame (.sframe, versions 2 and 3): the contract between the reader, the writer, the
// checker and the unwinder.
//
// The reader validates a section the way the Linux kernel does before trusting it (magic,
// version, ABI, header offsets, sorted FDEs, FRE bounds, strictly increasing FRE starts) and
// hands the unwinder rows in the same form as DWARF CFI rows (dwarf::Row), so one apply_row
// serves both. The writer turns DWARF rows into SFrame functions, reporting every row SFrame
// cannot express instead of guessing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf/cfi.hpp"
#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::sframe {

enum class ErrorCode : uint8_t {
  Truncated,    // a structure runs past the section
  BadMagic,     // not 0xdee2 in either byte order
  BadVersion,   // not 2 or 3
  BadAbi,       // unknown ABI/arch, or not the image's architecture
  BadHeader,    // counts and sub-section offsets disagree with the section size, flags invalid
  Unsorted,     // FDEs not sorted by function start (checked during search, like the kernel)
  BadFde,       // FDE fields invalid: FRE range outside the FRE sub-section, bad types
  BadFre,       // FRE invalid: start not increasing / past the function, bad data-word count
  NotCovered,   // no function covers the pc (not corruption)
  Unsupported,  // valid, but a construct this reader deliberately does not evaluate
  Limit,        // a cap from Limits was reached
};
std::string_view to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::Truncated;
  uint64_t where = 0;  // section offset of the offending structure
};

// One line for an error of `section`: "SFrame version 1 is not supported (only 2 and 3)" for a
// version the reader does not read (binutils 2.40's `as --gsframe`, Debian 12's, writes
// version 1), else "CODE at section offset 0x..".
std::string describe(const Error& e, std::span<const std::byte> section);

enum class Abi : uint8_t { Aarch64Big = 1, Aarch64Little = 2, Amd64Little = 3, S390xBig = 4 };
// The architecture an ABI id names, whether its sections are big-endian, and the ABI id of an
// architecture in a byte order (only AArch64 has both; SFrame defines none for i386).
Arch abi_arch(Abi abi);
bool abi_big_endian(Abi abi);
std::optional<Abi> abi_for(Arch arch, bool big_endian);

// How a value (the frame pointer or the return address) is recovered: the union of what V2
// and V3 (flexible FDEs) can say.
struct Recovery {
  enum class Kind : uint8_t {
    Untracked,   // no information: FP keeps its value; RA is where the ABI fixes it (amd64:
                 // CFA + fixed RA offset; aarch64/s390x: still in the link register)
    AtCfa,       // saved at CFA + offset
    Register,    // value is `reg` + offset (V3 flexible; s390x: RA/FP saved in a register)
    AtRegister,  // saved at `reg` + offset (V3 flexible, deref of a register)
    Undefined,   // RA only: the outermost frame (an FRE with no data words)
  };
  Kind kind = Kind::Untracked;
  uint16_t reg = 0;  // DWARF register number (Register, AtRegister)
  int64_t offset = 0;
};

// CFA = reg + offset, or with `deref` the value stored there (V3 flexible: DRAP).
struct CfaRecovery {
  uint16_t reg = 0;  // DWARF register number
  int64_t offset = 0;
  bool deref = false;
};

// One decoded FRE.
struct FrameRow {
  uint32_t start = 0;  // offset from the function start (PCMASK: within the repeated block)
  CfaRecovery cfa;
  Recovery fp;
  Recovery ra;
  bool ra_mangled = false;  // aarch64: the RA is signed (pointer authentication)
};

enum class PcType : uint8_t { Increment, Mask };  // FRE starts: plain offsets, or pc % rep_size
enum class FdeType : uint8_t { Default, Flex };   // V3: how FRE data words are read

struct Function {
  uint64_t start = 0;  // link-time address
  uint32_t size = 0;
  PcType pc_type = PcType::Increment;
  uint8_t rep_size = 0;  // PCMASK: size of the repeated block (a PLT entry)
  FdeType type = FdeType::Default;
  bool pauth_b_key = false;   // aarch64: signed with the B key
  bool signal_frame = false;  // V3: the function is a signal trampoline
  std::vector<FrameRow> rows;
};

struct Header {
  uint8_t version = 0;
  uint8_t flags = 0;
  Abi abi = Abi::Amd64Little;
  int8_t fixed_fp_offset = 0;  // CFA-relative, when the ABI fixes where FP is saved (else 0)
  int8_t fixed_ra_offset = 0;  // CFA-relative, when the ABI fixes where RA is saved (else 0)
  uint32_t num_fdes = 0;
  uint32_t num_fres = 0;
};

// A parsed .sframe section. parse() checks the header and sub-section bounds; functions are
// decoded on demand and each one checked completely when decoded. Lookups check the order of
// every FDE they probe. The bytes must outlive the table. Thread-compatible (const methods
// may run concurrently).
class Table {
 public:
  // `section_addr`: link-time address of the section's first byte (function starts are
  // relative to it or to their own field).
  static Expected<Table, Error> parse(std::span<const std::byte> section, uint64_t section_addr,
                                      const Limits& limits);
  Table(Table&&) noexcept;
  Table& operator=(Table&&) noexcept;
  ~Table();

  const Header& header() const;
  Arch arch() const;
  uint32_t num_functions() const;
  // Function `index` (< num_functions()) with all its rows.
  Expected<Function, Error> function(uint32_t index) const;
  // The row covering link-time `pc`, in the unwinder's row form (see to_dwarf_row). NotCovered
  // when no function covers the pc.
  Expected<dwarf::Row, Error> find_row(uint64_t pc) const;

 private:
  Table();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An SFrame row as a DWARF row: CFA rule, FP and RA rules in the ABI's DWARF numbering,
// ra_signed/b_key for aarch64; Undefined RA for the outermost frame. `row_end` is the
// link-time pc where the row stops applying.
dwarf::Row to_dwarf_row(const Header& header, const Function& fn, const FrameRow& row,
                        uint64_t row_start, uint64_t row_end);

// --- Writer ---

// A function (or one of its rows) the chosen version cannot express.
struct Inexpressible {
  uint64_t function = 0;  // link-time start of the FDE's function
  uint64_t pc = 0;        // link-time start of the row
  std::string why;        // e.g. "CFA is an expression (DRAP): needs V3"
};

struct Conversion {
  Header header;
  std::vector<Function> functions;           // sorted by start
  std::vector<Inexpressible> inexpressible;  // functions left out, with the reason
};

// Every FDE of `cfi`'s .eh_frame, row by row, as SFrame `version` (2 or 3) functions for
// `arch`. A function with any inexpressible row is left out whole (the unwinder then falls
// back to .eh_frame for it) and reported.
Conversion convert_cfi(dwarf::ImageCfi& cfi, Arch arch, uint8_t version, const Limits& limits);

// Encodes a conversion into section bytes placed at link-time `section_addr` (V2 is written
// with PC-relative function starts, the form current kernels accept).
Expected<std::vector<std::byte>, Error> encode(const Conversion& conversion, uint64_t section_addr);

// --- Checker (addition) ---

// One place where .sframe and .eh_frame say different things about the CFA, FP or RA.
struct Disagreement {
  uint64_t function = 0;  // link-time start of the SFrame function
  uint64_t pc = 0;        // link-time pc where the two sides differ
  std::string what;       // both sides, e.g. "CFA: sframe sp+16, eh_frame sp+8"
};

struct CheckReport {
  uint64_t functions = 0, rows = 0, eh_frame_only = 0, sframe_only = 0;
  std::vector<Disagreement> disagreements;
  std::vector<Error> errors;
};

// Compares every SFrame function of `table` with `cfi`'s rows at every row boundary of either
// side inside the function: CFA rule, FP location, RA location (the three things SFrame
// tracks; rules for other registers are not a disagreement). `functions`/`rows` count what was
// compared; `eh_frame_only` counts FDEs without an SFrame function, `sframe_only` SFrame
// functions without an FDE.
CheckReport check_against_cfi(const Table& table, dwarf::ImageCfi& cfi, const Limits& limits);

}  // namespace ehbt::sframe
