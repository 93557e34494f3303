// SPDX-License-Identifier: Apache-2.0
// CIE and FDE records of .eh_frame (LSB "Exception Frames") and .debug_frame (DWARF 5
// section 6.4.1). Both share the framing; they differ in the CIE id, in what an FDE's CIE
// pointer is relative to, and in how FDE addresses are encoded.
#include "dwarf/cfi.hpp"
#include "dwarf/read_error.hpp"
#include "dwarf/record_framing.hpp"
#include "util/byte_reader.hpp"
#include "util/eh_pe.hpp"

namespace ehbt::dwarf {
namespace {

using util::ByteReader;
namespace eh_pe = util::eh_pe;

constexpr uint32_t kDwarf64Escape = 0xffffffff;
// 0xfffffff0-0xfffffffe are reserved initial-length values.
constexpr uint32_t kReservedLengths = 0xfffffff0;

Error err(ErrorCode code, uint64_t where) {
  return {code, where};
}

// A reader over the section that cannot see past `end` (a record's last byte).
ByteReader record_reader(SectionView section, uint64_t end, Format fmt) {
  return ByteReader(section.bytes.first(static_cast<std::size_t>(end)), fmt.big_endian,
                    section.addr);
}

bool valid_address_size(uint8_t size) {
  return size == 2 || size == 4 || size == 8;
}

// Decodes a pointer whose indirection is only informational (personality, LSDA): the cell's
// address is reported, and a failed indirect read yields value 0 instead of an error.
Expected<uint64_t, Error> read_soft_pointer(ByteReader& r, uint8_t enc,
                                            const util::PointerContext& ctx, uint64_t& cell) {
  util::PointerContext direct = ctx;
  direct.indirect = nullptr;
  auto v = util::read_encoded_pointer(r, static_cast<uint8_t>(enc & ~eh_pe::indirect), direct);
  if (!v) return unexpected(from_read_error(v.error()));
  cell = 0;
  if (enc == eh_pe::omit || (enc & eh_pe::indirect) == 0) return *v;
  cell = *v;
  std::optional<uint64_t> target;
  if (ctx.indirect != nullptr && *ctx.indirect) target = (*ctx.indirect)(cell);
  return target.value_or(0);
}

}  // namespace

Expected<RecordFraming, Error> parse_record_framing(SectionKind kind, SectionView section,
                                                    uint64_t offset, Format fmt,
                                                    const Limits& limits) {
  ByteReader r(section.bytes, fmt.big_endian, section.addr);
  if (!r.seek(offset)) return unexpected(err(ErrorCode::BadLength, offset));
  RecordHeader h;
  h.offset = offset;
  uint32_t len32 = 0;
  if (!r.read_u32(len32)) return unexpected(err(ErrorCode::Truncated, offset));
  if (len32 == 0) {
    h.kind = RecordKind::Terminator;
    h.body = h.end = r.offset();
    return RecordFraming{h, true};
  }
  uint64_t length = len32;
  if (len32 == kDwarf64Escape) {
    h.dwarf64 = true;
    if (!r.read_u64(length)) return unexpected(err(ErrorCode::Truncated, offset));
  } else if (len32 >= kReservedLengths) {
    return unexpected(err(ErrorCode::BadLength, offset));
  }
  if (length > limits.max_record_bytes) {
    return unexpected(err(ErrorCode::LimitRecordBytes, offset));
  }
  if (length > r.remaining()) return unexpected(err(ErrorCode::BadLength, offset));
  const uint64_t content = r.offset();
  h.end = content + length;

  // .eh_frame keeps a 4-byte CIE id/pointer even in 64-bit records; .debug_frame uses the
  // offset size of the record's format.
  const unsigned id_size = (kind == SectionKind::DebugFrame && h.dwarf64) ? 8 : 4;
  if (length < id_size) return unexpected(err(ErrorCode::BadLength, offset));
  uint64_t id = 0;
  r.read_uint(id_size, id);  // cannot fail: length covers it
  h.body = r.offset();

  if (kind == SectionKind::EhFrame) {
    if (id == 0) {
      h.kind = RecordKind::Cie;
      return RecordFraming{h, true};
    }
    // The pointer counts backwards from its own field.
    h.kind = RecordKind::Fde;
    if (id > content) return RecordFraming{h, false};
    h.cie_offset = content - id;
  } else {
    const uint64_t cie_id = id_size == 8 ? ~uint64_t{0} : uint64_t{0xffffffff};
    if (id == cie_id) {
      h.kind = RecordKind::Cie;
      return RecordFraming{h, true};
    }
    h.cie_offset = id;
  }
  h.kind = RecordKind::Fde;
  const bool ok = h.cie_offset < section.bytes.size() && h.cie_offset != offset;
  return RecordFraming{h, ok};
}

std::optional<CommonFde> common_debug_fde(SectionView section, uint64_t offset, const Cie& cie,
                                          Format fmt, const Limits& limits) {
  const unsigned size = cie.address_size;
  if (cie.has_z || cie.segment_size != 0 || (size != 4 && size != 8)) return std::nullopt;
  ByteReader r(section.bytes, fmt.big_endian, section.addr);
  uint64_t length = 0;
  if (!r.seek(offset) || !r.read_uint(4, length)) return std::nullopt;
  // The general path's checks, in its order: no terminator or 64-bit escape, within the caps
  // and the section, long enough for the CIE pointer and the two addresses.
  if (length == 0 || length >= kReservedLengths || length > limits.max_record_bytes ||
      length > r.remaining() || length < 4 + 2 * uint64_t{size}) {
    return std::nullopt;
  }
  uint64_t id = 0, begin = 0, range = 0;
  r.read_uint(4, id);  // none can fail: the length covers them
  r.read_uint(size, begin);
  r.read_uint(size, range);
  if (id != cie.offset || id == 0xffffffff || begin + range < begin) return std::nullopt;
  return CommonFde{offset + 4 + length, FdeRange{begin, begin + range}};
}

Expected<RecordHeader, Error> parse_record_header(SectionKind kind, SectionView section,
                                                  uint64_t offset, Format fmt,
                                                  const Limits& limits) {
  auto f = parse_record_framing(kind, section, offset, fmt, limits);
  if (!f) return unexpected(f.error());
  if (!f->cie_ok) return unexpected(err(ErrorCode::BadCie, offset));
  return f->header;
}

Expected<Cie, Error> parse_cie(SectionKind kind, SectionView section, uint64_t offset, Format fmt,
                               const Limits& limits, const Bases& bases,
                               const IndirectReader& indirect) {
  auto hdr = parse_record_header(kind, section, offset, fmt, limits);
  if (!hdr) return unexpected(hdr.error());
  if (hdr->kind != RecordKind::Cie) return unexpected(err(ErrorCode::BadCie, offset));

  ByteReader r = record_reader(section, hdr->end, fmt);
  r.seek(hdr->body);
  auto truncated = [&] { return unexpected(err(ErrorCode::Truncated, r.offset())); };

  Cie cie;
  cie.offset = offset;
  cie.section_addr = section.addr;
  cie.address_size = fmt.address_size;
  if (!r.read_u8(cie.version)) return truncated();
  if (cie.version != 1 && cie.version != 3 && cie.version != 4) {
    return unexpected(err(ErrorCode::BadVersion, offset));
  }
  if (!r.read_cstring(cie.augmentation)) return truncated();
  std::string_view aug = cie.augmentation;

  if (cie.version == 4) {
    if (!r.read_u8(cie.address_size) || !r.read_u8(cie.segment_size)) return truncated();
    if (!valid_address_size(cie.address_size) || cie.segment_size > 8) {
      return unexpected(err(ErrorCode::BadCie, offset));
    }
  }
  if (!valid_address_size(cie.address_size)) return unexpected(err(ErrorCode::BadCie, offset));
  // Old GCC ("eh"): the address of the exception table follows the augmentation string.
  if (aug.substr(0, 2) == "eh") {
    if (!r.skip(cie.address_size)) return truncated();
    aug.remove_prefix(2);
  }

  auto code_align = r.read_uleb128();
  if (!code_align) return unexpected(from_read_error(code_align.error()));
  cie.code_align = *code_align;
  auto data_align = r.read_sleb128();
  if (!data_align) return unexpected(from_read_error(data_align.error()));
  cie.data_align = *data_align;
  uint64_t ra = 0;
  if (cie.version == 1) {
    uint8_t ra8 = 0;
    if (!r.read_u8(ra8)) return truncated();
    ra = ra8;
  } else {
    auto ra_leb = r.read_uleb128();
    if (!ra_leb) return unexpected(from_read_error(ra_leb.error()));
    ra = *ra_leb;
  }
  if (ra > 0xffff) return unexpected(err(ErrorCode::BadRegister, ra));
  cie.ra_reg = static_cast<uint16_t>(ra);

  if (!aug.empty() && aug[0] == 'z') {
    cie.has_z = true;
    auto len = r.read_uleb128();
    if (!len) return unexpected(from_read_error(len.error()));
    const uint64_t data_start = r.offset();
    if (!r.skip(*len)) return unexpected(err(ErrorCode::Truncated, data_start));
    // The augmentation data, read with a cursor that cannot leave it.
    ByteReader d = record_reader(section, r.offset(), fmt);
    d.seek(data_start);
    const util::PointerContext ctx{cie.address_size, bases.text, bases.data, std::nullopt,
                                   &indirect};
    for (char c : aug.substr(1)) {
      if (c == 'L') {
        if (!d.read_u8(cie.lsda_encoding)) return unexpected(err(ErrorCode::Truncated, d.offset()));
        if (!util::valid_pointer_encoding(cie.lsda_encoding)) {
          return unexpected(err(ErrorCode::BadEncoding, d.offset() - 1));
        }
      } else if (c == 'P') {
        if (!d.read_u8(cie.personality_encoding)) {
          return unexpected(err(ErrorCode::Truncated, d.offset()));
        }
        auto p = read_soft_pointer(d, cie.personality_encoding, ctx, cie.personality_ptr);
        if (!p) return unexpected(p.error());
        cie.personality = *p;
      } else if (c == 'R') {
        if (!d.read_u8(cie.fde_encoding)) return unexpected(err(ErrorCode::Truncated, d.offset()));
        if (cie.fde_encoding == eh_pe::omit || !util::valid_pointer_encoding(cie.fde_encoding)) {
          return unexpected(err(ErrorCode::BadEncoding, d.offset() - 1));
        }
      } else if (c == 'S') {
        cie.signal_frame = true;
      } else if (c == 'B') {
        cie.b_key = true;
      } else if (c == 'G') {
        cie.mte_tagged = true;
      } else {
        break;  // unknown: 'z' told us how long the data is, so the rest can be skipped
      }
    }
  } else if (!aug.empty()) {
    return unexpected(err(ErrorCode::BadAugmentation, offset));
  }
  // DWARF .debug_frame FDEs always hold plain target addresses.
  if (kind == SectionKind::DebugFrame) cie.fde_encoding = eh_pe::absptr;

  cie.instructions_offset = r.offset();
  r.read_bytes(r.remaining(), cie.instructions);
  return cie;
}

namespace {

// Reads an FDE's pc_begin and range from `r`, which is at the record's body.
Expected<FdeRange, Error> read_fde_range(ByteReader& r, SectionKind kind, uint64_t offset,
                                         const Cie& cie, util::PointerContext& ctx) {
  if (cie.segment_size != 0 && !r.skip(cie.segment_size)) {
    return unexpected(err(ErrorCode::Truncated, r.offset()));
  }
  const uint8_t enc = kind == SectionKind::DebugFrame ? eh_pe::absptr : cie.fde_encoding;
  if (enc == eh_pe::absptr && valid_address_size(cie.address_size)) {
    // Two plain words of the CIE's address size (every .debug_frame FDE): what the general
    // decoding below reads for this encoding, without its dispatch (an index reads every FDE).
    uint64_t begin = 0, range = 0;
    if (!r.read_uint(cie.address_size, begin) || !r.read_uint(cie.address_size, range)) {
      return unexpected(err(ErrorCode::Truncated, r.offset()));
    }
    if (begin + range < begin) return unexpected(err(ErrorCode::BadLength, offset));
    return FdeRange{begin, begin + range};
  }
  auto begin = util::read_encoded_pointer(r, enc, ctx);
  if (!begin) return unexpected(from_read_error(begin.error()));
  // The range is a plain size: the format of the encoding without its application.
  auto range = util::read_encoded_value(r, enc & eh_pe::format_mask, cie.address_size);
  if (!range) return unexpected(from_read_error(range.error()));
  const FdeRange out{*begin, *begin + *range};
  if (out.pc_end < out.pc_begin) return unexpected(err(ErrorCode::BadLength, offset));
  return out;
}

}  // namespace

Expected<FdeRange, Error> parse_fde_range(SectionKind kind, SectionView section,
                                          const RecordHeader& h, const Cie& cie, Format fmt,
                                          const Bases& bases, const IndirectReader& indirect) {
  if (h.kind != RecordKind::Fde || h.cie_offset != cie.offset) {
    return unexpected(err(ErrorCode::BadCie, h.offset));
  }
  ByteReader r = record_reader(section, h.end, fmt);
  r.seek(h.body);
  util::PointerContext ctx{cie.address_size, bases.text, bases.data, std::nullopt, &indirect};
  return read_fde_range(r, kind, h.offset, cie, ctx);
}

Expected<Fde, Error> parse_fde(SectionKind kind, SectionView section, uint64_t offset,
                               const Cie& cie, Format fmt, const Limits& limits, const Bases& bases,
                               const IndirectReader& indirect) {
  auto hdr = parse_record_header(kind, section, offset, fmt, limits);
  if (!hdr) return unexpected(hdr.error());
  if (hdr->kind != RecordKind::Fde || hdr->cie_offset != cie.offset) {
    return unexpected(err(ErrorCode::BadCie, offset));
  }
  ByteReader r = record_reader(section, hdr->end, fmt);
  r.seek(hdr->body);

  Fde fde;
  fde.offset = offset;
  fde.cie_offset = cie.offset;
  fde.section_addr = section.addr;
  fde.end_offset = hdr->end;
  util::PointerContext ctx{cie.address_size, bases.text, bases.data, std::nullopt, &indirect};
  auto range = read_fde_range(r, kind, offset, cie, ctx);
  if (!range) return unexpected(range.error());
  fde.pc_begin = range->pc_begin;
  fde.pc_end = range->pc_end;

  if (cie.has_z) {
    auto len = r.read_uleb128();
    if (!len) return unexpected(from_read_error(len.error()));
    const uint64_t data_start = r.offset();
    if (!r.skip(*len)) return unexpected(err(ErrorCode::Truncated, data_start));
    if (cie.lsda_encoding != eh_pe::omit) {
      ByteReader d = record_reader(section, r.offset(), fmt);
      d.seek(data_start);
      ctx.func_base = fde.pc_begin;
      uint64_t cell = 0;
      auto lsda = read_soft_pointer(d, cie.lsda_encoding, ctx, cell);
      if (!lsda) return unexpected(lsda.error());
      fde.lsda = *lsda;
    }
  }
  fde.instructions_offset = r.offset();
  r.read_bytes(r.remaining(), fde.instructions);
  return fde;
}

}  // namespace ehbt::dwarf
