// SPDX-License-Identifier: Apache-2.0
// The test CFI assembler. Encodings follow DWARF 5 section 7.6 (LEB128), 6.4 (CIE/FDE,
// DW_CFA_*) and the LSB "Exception Frames" chapter (.eh_frame, DW_EH_PE_*, .eh_frame_hdr).
#include "support/cfi_builder.hpp"

#include <cstdlib>
#include <stdexcept>

namespace ehbt::test {
namespace {

// DW_EH_PE_* numbers, spelled out here rather than borrowed from the engine.
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kIndirect = 0x80;
constexpr uint8_t kAligned = 0x50;

void check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(what);
}

}  // namespace

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v & 0xff));
  return out;
}

ByteWriter& ByteWriter::uint(unsigned size, uint64_t v) {
  for (unsigned i = 0; i < size; ++i) {
    const unsigned shift = 8 * (big_endian_ ? size - 1 - i : i);
    bytes_.push_back(static_cast<std::byte>(shift >= 64 ? 0 : (v >> shift) & 0xff));
  }
  return *this;
}

ByteWriter& ByteWriter::uleb(uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    bytes_.push_back(static_cast<std::byte>(b));
  } while (v != 0);
  return *this;
}

ByteWriter& ByteWriter::sleb(int64_t v) {
  for (;;) {
    uint8_t b = v & 0x7f;
    v >>= 7;  // arithmetic shift (C++20)
    const bool done = (v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0);
    if (!done) b |= 0x80;
    bytes_.push_back(static_cast<std::byte>(b));
    if (done) return *this;
  }
}

ByteWriter& ByteWriter::str(std::string_view s) {
  for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
  bytes_.push_back(std::byte{0});
  return *this;
}

ByteWriter& ByteWriter::raw(std::span<const std::byte> b) {
  bytes_.insert(bytes_.end(), b.begin(), b.end());
  return *this;
}

ByteWriter& ByteWriter::raw(std::initializer_list<int> b) {
  return raw(bytes_of(b));
}

ByteWriter& ByteWriter::zeros(std::size_t n) {
  bytes_.insert(bytes_.end(), n, std::byte{0});
  return *this;
}

void ByteWriter::patch(std::size_t offset, unsigned size, uint64_t v) {
  check(offset + size <= bytes_.size(), "patch past the end");
  for (unsigned i = 0; i < size; ++i) {
    const unsigned shift = 8 * (big_endian_ ? size - 1 - i : i);
    bytes_[offset + i] = static_cast<std::byte>((v >> shift) & 0xff);
  }
}

void write_encoded(ByteWriter& w, uint8_t encoding, uint64_t value, uint64_t writer_addr,
                   uint8_t address_size, const EncodeBases& bases) {
  if (encoding == kOmit) return;
  const uint8_t app = encoding & 0x70;
  if (app == kAligned) {
    while ((writer_addr + w.size()) % address_size != 0) w.u8(0);
  }
  const uint64_t field_addr = writer_addr + w.size();
  uint64_t base = 0;
  switch (app) {
    case 0x10:
      base = field_addr;
      break;
    case 0x20:
      base = bases.text;
      break;
    case 0x30:
      base = bases.data;
      break;
    case 0x40:
      base = bases.func;
      break;
    default:
      break;
  }
  const uint64_t stored = value - base;
  (void)kIndirect;  // indirection changes nothing in the stored bytes: they name the cell
  switch (encoding & 0x0f) {
    case 0x00:
      w.uint(address_size, stored);
      break;
    case 0x01:
      w.uleb(stored);
      break;
    case 0x02:
    case 0x0a:
      w.uint(2, stored);
      break;
    case 0x03:
    case 0x0b:
      w.uint(4, stored);
      break;
    case 0x04:
    case 0x0c:
      w.uint(8, stored);
      break;
    case 0x09:
      w.sleb(static_cast<int64_t>(stored));
      break;
    default:
      check(false, "unknown DW_EH_PE format");
  }
}

// ---- DW_CFA_* ----------------------------------------------------------------------------

CfaOps& CfaOps::nop() {
  return raw({0x00});
}
CfaOps& CfaOps::advance_loc(uint8_t delta) {
  check(delta < 64, "advance_loc delta");
  w_.u8(0x40 | delta);
  return *this;
}
CfaOps& CfaOps::advance_loc1(uint8_t d) {
  w_.u8(0x02).u8(d);
  return *this;
}
CfaOps& CfaOps::advance_loc2(uint16_t d) {
  w_.u8(0x03).u16(d);
  return *this;
}
CfaOps& CfaOps::advance_loc4(uint32_t d) {
  w_.u8(0x04).u32(d);
  return *this;
}
CfaOps& CfaOps::MIPS_advance_loc8(uint64_t d) {
  w_.u8(0x1d).u64(d);
  return *this;
}
CfaOps& CfaOps::set_loc(std::span<const std::byte> encoded) {
  w_.u8(0x01).raw(encoded);
  return *this;
}
CfaOps& CfaOps::offset(uint8_t reg, uint64_t factored) {
  check(reg < 64, "offset reg");
  w_.u8(0x80 | reg).uleb(factored);
  return *this;
}
CfaOps& CfaOps::offset_extended(uint64_t reg, uint64_t factored) {
  w_.u8(0x05).uleb(reg).uleb(factored);
  return *this;
}
CfaOps& CfaOps::offset_extended_sf(uint64_t reg, int64_t factored) {
  w_.u8(0x11).uleb(reg).sleb(factored);
  return *this;
}
CfaOps& CfaOps::restore(uint8_t reg) {
  check(reg < 64, "restore reg");
  w_.u8(0xc0 | reg);
  return *this;
}
CfaOps& CfaOps::restore_extended(uint64_t reg) {
  w_.u8(0x06).uleb(reg);
  return *this;
}
CfaOps& CfaOps::undefined(uint64_t reg) {
  w_.u8(0x07).uleb(reg);
  return *this;
}
CfaOps& CfaOps::same_value(uint64_t reg) {
  w_.u8(0x08).uleb(reg);
  return *this;
}
CfaOps& CfaOps::register_(uint64_t reg, uint64_t from) {
  w_.u8(0x09).uleb(reg).uleb(from);
  return *this;
}
CfaOps& CfaOps::remember_state() {
  return raw({0x0a});
}
CfaOps& CfaOps::restore_state() {
  return raw({0x0b});
}
CfaOps& CfaOps::def_cfa(uint64_t reg, uint64_t offset) {
  w_.u8(0x0c).uleb(reg).uleb(offset);
  return *this;
}
CfaOps& CfaOps::def_cfa_sf(uint64_t reg, int64_t factored) {
  w_.u8(0x12).uleb(reg).sleb(factored);
  return *this;
}
CfaOps& CfaOps::def_cfa_register(uint64_t reg) {
  w_.u8(0x0d).uleb(reg);
  return *this;
}
CfaOps& CfaOps::def_cfa_offset(uint64_t offset) {
  w_.u8(0x0e).uleb(offset);
  return *this;
}
CfaOps& CfaOps::def_cfa_offset_sf(int64_t factored) {
  w_.u8(0x13).sleb(factored);
  return *this;
}
CfaOps& CfaOps::def_cfa_expression(std::span<const std::byte> expr) {
  w_.u8(0x0f).uleb(expr.size()).raw(expr);
  return *this;
}
CfaOps& CfaOps::expression(uint64_t reg, std::span<const std::byte> expr) {
  w_.u8(0x10).uleb(reg).uleb(expr.size()).raw(expr);
  return *this;
}
CfaOps& CfaOps::val_expression(uint64_t reg, std::span<const std::byte> expr) {
  w_.u8(0x16).uleb(reg).uleb(expr.size()).raw(expr);
  return *this;
}
CfaOps& CfaOps::val_offset(uint64_t reg, uint64_t factored) {
  w_.u8(0x14).uleb(reg).uleb(factored);
  return *this;
}
CfaOps& CfaOps::val_offset_sf(uint64_t reg, int64_t factored) {
  w_.u8(0x15).uleb(reg).sleb(factored);
  return *this;
}
CfaOps& CfaOps::GNU_args_size(uint64_t size) {
  w_.u8(0x2e).uleb(size);
  return *this;
}
CfaOps& CfaOps::GNU_negative_offset_extended(uint64_t reg, uint64_t factored) {
  w_.u8(0x2f).uleb(reg).uleb(factored);
  return *this;
}
CfaOps& CfaOps::AARCH64_negate_ra_state() {
  return raw({0x2d});
}
CfaOps& CfaOps::raw(std::initializer_list<int> b) {
  w_.raw(b);
  return *this;
}

// ---- DW_OP_* -----------------------------------------------------------------------------

ExprOps& ExprOps::op(uint8_t opcode) {
  w_.u8(opcode);
  return *this;
}
ExprOps& ExprOps::lit(uint8_t n) {
  check(n < 32, "lit");
  return op(0x30 + n);
}
ExprOps& ExprOps::reg(uint8_t n) {
  check(n < 32, "reg");
  return op(0x50 + n);
}
ExprOps& ExprOps::breg(uint8_t n, int64_t offset) {
  check(n < 32, "breg");
  w_.u8(0x70 + n).sleb(offset);
  return *this;
}
ExprOps& ExprOps::regx(uint64_t reg) {
  w_.u8(0x90).uleb(reg);
  return *this;
}
ExprOps& ExprOps::bregx(uint64_t reg, int64_t offset) {
  w_.u8(0x92).uleb(reg).sleb(offset);
  return *this;
}
ExprOps& ExprOps::addr(unsigned size, uint64_t value) {
  w_.u8(0x03).uint(size, value);
  return *this;
}
ExprOps& ExprOps::const_u(unsigned size, uint64_t value) {
  const uint8_t code = size == 1 ? 0x08 : size == 2 ? 0x0a : size == 4 ? 0x0c : 0x0e;
  w_.u8(code).uint(size, value);
  return *this;
}
ExprOps& ExprOps::const_s(unsigned size, int64_t value) {
  const uint8_t code = size == 1 ? 0x09 : size == 2 ? 0x0b : size == 4 ? 0x0d : 0x0f;
  w_.u8(code).uint(size, static_cast<uint64_t>(value));
  return *this;
}
ExprOps& ExprOps::constu(uint64_t v) {
  w_.u8(0x10).uleb(v);
  return *this;
}
ExprOps& ExprOps::consts(int64_t v) {
  w_.u8(0x11).sleb(v);
  return *this;
}
ExprOps& ExprOps::pick(uint8_t index) {
  w_.u8(0x15).u8(index);
  return *this;
}
ExprOps& ExprOps::plus_uconst(uint64_t v) {
  w_.u8(0x23).uleb(v);
  return *this;
}
ExprOps& ExprOps::deref_size(uint8_t size) {
  w_.u8(0x94).u8(size);
  return *this;
}
ExprOps& ExprOps::bra(int16_t offset) {
  w_.u8(0x28).u16(static_cast<uint16_t>(offset));
  return *this;
}
ExprOps& ExprOps::skip(int16_t offset) {
  w_.u8(0x2f).u16(static_cast<uint16_t>(offset));
  return *this;
}
ExprOps& ExprOps::raw(std::initializer_list<int> b) {
  w_.raw(b);
  return *this;
}

// ---- records -----------------------------------------------------------------------------

CfiBuilder::CfiBuilder(dwarf::SectionKind kind, uint64_t section_addr, bool big_endian,
                       uint8_t address_size, EncodeBases bases)
    : kind_(kind),
      addr_(section_addr),
      address_size_(address_size),
      bases_(bases),
      w_(big_endian) {}

uint64_t CfiBuilder::record(bool dwarf64, bool is_cie, uint64_t cie_pointer_value,
                            const std::vector<std::byte>& body, unsigned pad_to) {
  const uint64_t start = w_.size();
  const bool debug = kind_ == dwarf::SectionKind::DebugFrame;
  const unsigned len_size = dwarf64 ? 12 : 4;
  const unsigned id_size = (debug && dwarf64) ? 8 : 4;
  std::size_t padding = 0;
  if (pad_to != 0) {
    while ((len_size + id_size + body.size() + padding) % pad_to != 0) ++padding;
  }
  const uint64_t length = id_size + body.size() + padding;
  if (dwarf64) {
    w_.u32(0xffffffff).u64(length);
  } else {
    w_.u32(length);
  }
  uint64_t id = cie_pointer_value;
  if (is_cie) id = debug ? (id_size == 8 ? ~uint64_t{0} : 0xffffffffull) : 0;
  w_.uint(id_size, id);
  w_.raw(body);
  w_.zeros(padding);  // DW_CFA_nop
  return start;
}

uint64_t CfiBuilder::cie(const CieSpec& spec) {
  const bool debug = kind_ == dwarf::SectionKind::DebugFrame;
  const uint64_t start = w_.size();
  const unsigned len_size = spec.dwarf64 ? 12 : 4;
  const unsigned id_size = (debug && spec.dwarf64) ? 8 : 4;
  const uint64_t body_addr = addr_ + start + len_size + id_size;
  const uint8_t asz = spec.version == 4 ? spec.address_size : address_size_;

  ByteWriter b(w_.big_endian());
  b.u8(spec.version).str(spec.augmentation);
  if (spec.version == 4) b.u8(spec.address_size).u8(spec.segment_size);
  std::string_view aug = spec.augmentation;
  if (aug.substr(0, 2) == "eh") {
    b.uint(asz, spec.eh_data);
    aug.remove_prefix(2);
  }
  b.uleb(spec.code_align).sleb(spec.data_align);
  if (spec.version == 1) {
    b.u8(spec.ra_reg);
  } else {
    b.uleb(spec.ra_reg);
  }
  if (!aug.empty() && aug[0] == 'z') {
    std::vector<std::byte> data;
    if (spec.augmentation_data) {
      data = *spec.augmentation_data;
    } else {
      // The data starts after a one-byte length (checked below).
      const uint64_t data_addr = body_addr + b.size() + 1;
      ByteWriter d(w_.big_endian());
      for (char c : aug.substr(1)) {
        if (c == 'L') {
          d.u8(spec.lsda_encoding);
        } else if (c == 'R') {
          d.u8(spec.fde_encoding);
        } else if (c == 'P') {
          d.u8(spec.personality_encoding);
          write_encoded(d, spec.personality_encoding, spec.personality, data_addr, asz, bases_);
        }
      }
      data = d.bytes();
      check(data.size() < 128, "augmentation data too long for the builder");
    }
    b.uleb(data.size()).raw(data);
  }
  b.raw(spec.instructions);
  const uint64_t off = record(spec.dwarf64, true, 0, b.bytes(), spec.pad_to);
  cies_.emplace_back(off, spec);
  return off;
}

uint64_t CfiBuilder::fde(uint64_t cie_offset, const FdeSpec& spec) {
  const bool debug = kind_ == dwarf::SectionKind::DebugFrame;
  CieSpec cie;
  for (const auto& [off, s] : cies_) {
    if (off == cie_offset) cie = s;
  }
  const uint64_t start = w_.size();
  const unsigned len_size = spec.dwarf64 ? 12 : 4;
  const unsigned id_size = (debug && spec.dwarf64) ? 8 : 4;
  const uint64_t body_addr = addr_ + start + len_size + id_size;
  const uint8_t asz = cie.version == 4 ? cie.address_size : address_size_;
  // .eh_frame: distance from the pointer field back to the CIE; .debug_frame: an offset.
  uint64_t pointer = debug ? cie_offset : start + len_size - cie_offset;
  if (spec.cie_pointer) pointer = *spec.cie_pointer;

  ByteWriter b(w_.big_endian());
  if (cie.version == 4 && cie.segment_size != 0) b.uint(cie.segment_size, spec.segment);
  const uint8_t enc = debug ? 0x00 : cie.fde_encoding;
  write_encoded(b, enc, spec.pc_begin, body_addr, asz, bases_);
  write_encoded(b, enc & 0x0f, spec.pc_range, body_addr, asz, bases_);
  const bool has_z = cie.augmentation.find('z') != std::string::npos;
  if (has_z) {
    std::vector<std::byte> data;
    if (spec.augmentation_data) {
      data = *spec.augmentation_data;
    } else if (cie.augmentation.find('L') != std::string::npos && cie.lsda_encoding != kOmit) {
      ByteWriter d(w_.big_endian());
      EncodeBases bases = bases_;
      bases.func = spec.pc_begin;
      write_encoded(d, cie.lsda_encoding, spec.lsda, body_addr + b.size() + 1, asz, bases);
      data = d.bytes();
    }
    b.uleb(data.size()).raw(data);
  }
  b.raw(spec.instructions);
  return record(spec.dwarf64, false, pointer, b.bytes(), spec.pad_to);
}

uint64_t CfiBuilder::terminator() {
  const uint64_t off = w_.size();
  w_.u32(0);
  return off;
}

void CfiBuilder::raw(std::span<const std::byte> b) {
  w_.raw(b);
}
void CfiBuilder::raw(std::initializer_list<int> b) {
  w_.raw(b);
}
void CfiBuilder::pad(std::size_t n) {
  w_.zeros(n);
}

std::vector<std::byte> build_eh_frame_hdr(const HdrSpec& spec, uint64_t hdr_addr, bool big_endian,
                                          uint8_t address_size) {
  ByteWriter w(big_endian);
  w.u8(spec.version).u8(spec.eh_frame_ptr_enc).u8(spec.fde_count_enc).u8(spec.table_enc);
  EncodeBases bases;
  bases.data = hdr_addr;  // datarel in the header: relative to its start
  write_encoded(w, spec.eh_frame_ptr_enc, spec.eh_frame_addr, hdr_addr, address_size, bases);
  write_encoded(w, spec.fde_count_enc, spec.fde_count.value_or(spec.entries.size()), hdr_addr,
                address_size, bases);
  if (spec.table_enc != kOmit) {
    for (const auto& [loc, fde] : spec.entries) {
      write_encoded(w, spec.table_enc, loc, hdr_addr, address_size, bases);
      write_encoded(w, spec.table_enc, fde, hdr_addr, address_size, bases);
    }
  }
  return w.bytes();
}

}  // namespace ehbt::test
