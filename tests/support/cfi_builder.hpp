// SPDX-License-Identifier: Apache-2.0
// A tiny assembler for call frame information, for tests: byte writers, DW_CFA_* and DW_OP_*
// instruction streams, CIE/FDE records for .eh_frame and .debug_frame (32- and 64-bit,
// either byte order, every DW_EH_PE_* encoding) and .eh_frame_hdr sections.
//
// It is written from the specifications (DWARF 5 section 6.4, the LSB's "Exception Frames")
// independently of the parser in engine/src/dwarf, so tests can compare the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dwarf/cfi.hpp"

namespace ehbt::test {

std::vector<std::byte> bytes_of(std::initializer_list<int> values);

// Appends integers in a chosen byte order.
class ByteWriter {
 public:
  explicit ByteWriter(bool big_endian = false) : big_endian_(big_endian) {}

  ByteWriter& u8(uint64_t v) { return uint(1, v); }
  ByteWriter& u16(uint64_t v) { return uint(2, v); }
  ByteWriter& u32(uint64_t v) { return uint(4, v); }
  ByteWriter& u64(uint64_t v) { return uint(8, v); }
  ByteWriter& uint(unsigned size, uint64_t v);
  ByteWriter& uleb(uint64_t v);
  ByteWriter& sleb(int64_t v);
  ByteWriter& str(std::string_view s);  // with its NUL
  ByteWriter& raw(std::span<const std::byte> b);
  ByteWriter& raw(std::initializer_list<int> b);
  ByteWriter& zeros(std::size_t n);
  // Overwrites `size` bytes at `offset`.
  void patch(std::size_t offset, unsigned size, uint64_t v);

  std::size_t size() const { return bytes_.size(); }
  bool big_endian() const { return big_endian_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  bool big_endian_;
  std::vector<std::byte> bytes_;
};

// Where relative pointer encodings are relative to, when the builder encodes a value.
struct EncodeBases {
  uint64_t text = 0;
  uint64_t data = 0;
  uint64_t func = 0;
};

// Writes `value` with a DW_EH_PE_* encoding as if the writer's byte 0 lived at `writer_addr`:
// the stored number is value - base. For DW_EH_PE_indirect, `value` is the address of the
// cell that holds the real pointer. DW_EH_PE_aligned pads with zeros first.
void write_encoded(ByteWriter& w, uint8_t encoding, uint64_t value, uint64_t writer_addr,
                   uint8_t address_size, const EncodeBases& bases = {});

// DW_CFA_* instruction stream.
class CfaOps {
 public:
  explicit CfaOps(bool big_endian = false) : w_(big_endian) {}

  CfaOps& nop();
  CfaOps& advance_loc(uint8_t delta);  // delta < 64
  CfaOps& advance_loc1(uint8_t delta);
  CfaOps& advance_loc2(uint16_t delta);
  CfaOps& advance_loc4(uint32_t delta);
  CfaOps& MIPS_advance_loc8(uint64_t delta);
  CfaOps& set_loc(std::span<const std::byte> encoded_address);
  CfaOps& offset(uint8_t reg, uint64_t factored);  // reg < 64
  CfaOps& offset_extended(uint64_t reg, uint64_t factored);
  CfaOps& offset_extended_sf(uint64_t reg, int64_t factored);
  CfaOps& restore(uint8_t reg);  // reg < 64
  CfaOps& restore_extended(uint64_t reg);
  CfaOps& undefined(uint64_t reg);
  CfaOps& same_value(uint64_t reg);
  CfaOps& register_(uint64_t reg, uint64_t from);
  CfaOps& remember_state();
  CfaOps& restore_state();
  CfaOps& def_cfa(uint64_t reg, uint64_t offset);
  CfaOps& def_cfa_sf(uint64_t reg, int64_t factored);
  CfaOps& def_cfa_register(uint64_t reg);
  CfaOps& def_cfa_offset(uint64_t offset);
  CfaOps& def_cfa_offset_sf(int64_t factored);
  CfaOps& def_cfa_expression(std::span<const std::byte> expr);
  CfaOps& expression(uint64_t reg, std::span<const std::byte> expr);
  CfaOps& val_expression(uint64_t reg, std::span<const std::byte> expr);
  CfaOps& val_offset(uint64_t reg, uint64_t factored);
  CfaOps& val_offset_sf(uint64_t reg, int64_t factored);
  CfaOps& GNU_args_size(uint64_t size);
  CfaOps& GNU_negative_offset_extended(uint64_t reg, uint64_t factored);
  CfaOps& AARCH64_negate_ra_state();
  CfaOps& raw(std::initializer_list<int> b);

  const std::vector<std::byte>& bytes() const { return w_.bytes(); }
  operator std::vector<std::byte>() const { return w_.bytes(); }
  operator std::span<const std::byte>() const { return w_.bytes(); }

 private:
  ByteWriter w_;
};

// DW_OP_* expression.
class ExprOps {
 public:
  explicit ExprOps(bool big_endian = false) : w_(big_endian) {}

  ExprOps& op(uint8_t opcode);  // an operation without operands
  ExprOps& lit(uint8_t n);      // DW_OP_lit<n>, n < 32
  ExprOps& reg(uint8_t n);      // DW_OP_reg<n>, n < 32
  ExprOps& breg(uint8_t n, int64_t offset);
  ExprOps& regx(uint64_t reg);
  ExprOps& bregx(uint64_t reg, int64_t offset);
  ExprOps& addr(unsigned size, uint64_t value);
  ExprOps& const_u(unsigned size, uint64_t value);  // DW_OP_const<size>u
  ExprOps& const_s(unsigned size, int64_t value);   // DW_OP_const<size>s
  ExprOps& constu(uint64_t v);
  ExprOps& consts(int64_t v);
  ExprOps& pick(uint8_t index);
  ExprOps& plus_uconst(uint64_t v);
  ExprOps& deref_size(uint8_t size);
  ExprOps& bra(int16_t offset);
  ExprOps& skip(int16_t offset);
  ExprOps& raw(std::initializer_list<int> b);

  const std::vector<std::byte>& bytes() const { return w_.bytes(); }
  operator std::vector<std::byte>() const { return w_.bytes(); }
  operator std::span<const std::byte>() const { return w_.bytes(); }

 private:
  ByteWriter w_;
};

struct CieSpec {
  uint8_t version = 1;
  std::string augmentation = "zR";
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t address_size = 8;     // written for version 4; also the size of "eh" and absptr values
  uint8_t segment_size = 0;     // version 4
  uint64_t eh_data = 0;         // "eh": the exception table pointer
  uint8_t fde_encoding = 0x1b;  // pcrel | sdata4, what GCC emits
  uint8_t lsda_encoding = 0xff;
  uint8_t personality_encoding = 0xff;
  uint64_t personality = 0;  // for indirect encodings: the cell's address
  std::vector<std::byte> instructions;
  bool dwarf64 = false;
  // Replaces the augmentation data the builder would write (after the 'z' length).
  std::optional<std::vector<std::byte>> augmentation_data;
  // Pads the record with DW_CFA_nop to a multiple of this many bytes (0: no padding).
  unsigned pad_to = 0;
};

struct FdeSpec {
  uint64_t pc_begin = 0;
  uint64_t pc_range = 0;
  uint64_t lsda = 0;  // written when the CIE has 'L' (indirect: the cell's address)
  std::vector<std::byte> instructions;
  bool dwarf64 = false;
  uint64_t segment = 0;  // written when the CIE's segment_size is not 0
  // Overrides: the raw CIE pointer field, and the augmentation data.
  std::optional<uint64_t> cie_pointer;
  std::optional<std::vector<std::byte>> augmentation_data;
  unsigned pad_to = 0;
};

class CfiBuilder {
 public:
  CfiBuilder(dwarf::SectionKind kind, uint64_t section_addr, bool big_endian = false,
             uint8_t address_size = 8, EncodeBases bases = {});

  // Each returns the section offset of the record it appended.
  uint64_t cie(const CieSpec& spec);
  uint64_t fde(uint64_t cie_offset, const FdeSpec& spec);
  uint64_t terminator();
  void raw(std::span<const std::byte> b);
  void raw(std::initializer_list<int> b);
  void pad(std::size_t n);

  dwarf::SectionKind kind() const { return kind_; }
  uint64_t addr() const { return addr_; }
  std::size_t size() const { return w_.size(); }
  std::vector<std::byte>& bytes() { return w_.bytes(); }
  const std::vector<std::byte>& bytes() const { return w_.bytes(); }
  // The section as the parser sees it (valid until the builder changes).
  dwarf::SectionView view() const { return {addr_, std::span<const std::byte>(w_.bytes())}; }
  dwarf::Format format() const { return {w_.big_endian(), address_size_}; }
  void patch(std::size_t offset, unsigned size, uint64_t v) { w_.patch(offset, size, v); }

 private:
  // Writes length + id/pointer + body, with the length computed from the body.
  uint64_t record(bool dwarf64, bool is_cie, uint64_t cie_pointer_value,
                  const std::vector<std::byte>& body, unsigned pad_to);

  dwarf::SectionKind kind_;
  uint64_t addr_;
  uint8_t address_size_;
  EncodeBases bases_;
  ByteWriter w_;
  std::vector<std::pair<uint64_t, CieSpec>> cies_;
};

// .eh_frame_hdr contents.
struct HdrSpec {
  uint8_t version = 1;
  uint8_t eh_frame_ptr_enc = 0x1b;  // pcrel | sdata4
  uint8_t fde_count_enc = 0x03;     // udata4
  uint8_t table_enc = 0x3b;         // datarel | sdata4
  uint64_t eh_frame_addr = 0;
  std::vector<std::pair<uint64_t, uint64_t>> entries;  // (initial location, FDE address)
  std::optional<uint64_t> fde_count;                   // default: entries.size()
};
std::vector<std::byte> build_eh_frame_hdr(const HdrSpec& spec, uint64_t hdr_addr,
                                          bool big_endian = false, uint8_t address_size = 8);

}  // namespace ehbt::test
