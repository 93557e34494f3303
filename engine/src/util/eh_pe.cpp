// SPDX-License-Identifier: Apache-2.0
// DW_EH_PE_* decoding, following the LSB's description of the encodings and what each
// application is relative to.
#include "util/eh_pe.hpp"

namespace ehbt::util {
namespace {

bool valid_address_size(uint8_t size) {
  return size == 2 || size == 4 || size == 8;
}

}  // namespace

unsigned encoded_value_size(uint8_t encoding, uint8_t address_size) {
  switch (encoding & eh_pe::format_mask) {
    case eh_pe::absptr:
      return valid_address_size(address_size) ? address_size : 0;
    case eh_pe::udata2:
    case eh_pe::sdata2:
      return 2;
    case eh_pe::udata4:
    case eh_pe::sdata4:
      return 4;
    case eh_pe::udata8:
    case eh_pe::sdata8:
      return 8;
    default:
      return 0;
  }
}

bool valid_pointer_encoding(uint8_t encoding) {
  if (encoding == eh_pe::omit) return true;
  switch (encoding & eh_pe::format_mask) {
    case eh_pe::absptr:
    case eh_pe::uleb128:
    case eh_pe::udata2:
    case eh_pe::udata4:
    case eh_pe::udata8:
    case eh_pe::sleb128:
    case eh_pe::sdata2:
    case eh_pe::sdata4:
    case eh_pe::sdata8:
      break;
    default:
      return false;
  }
  const uint8_t app = encoding & eh_pe::application_mask;
  if (app > eh_pe::aligned) return false;
  // An aligned pointer is always a full address word.
  if (app == eh_pe::aligned && (encoding & eh_pe::format_mask) != eh_pe::absptr) return false;
  return true;
}

Expected<uint64_t, ReadError> read_encoded_value(ByteReader& reader, uint8_t format,
                                                 uint8_t address_size) {
  const uint64_t start = reader.offset();
  auto truncated = [&] { return unexpected(ReadError{ReadErrorCode::Truncated, start}); };
  switch (format & eh_pe::format_mask) {
    case eh_pe::uleb128:
      return reader.read_uleb128();
    case eh_pe::sleb128: {
      auto v = reader.read_sleb128();
      if (!v) return unexpected(v.error());
      return static_cast<uint64_t>(*v);
    }
    case eh_pe::absptr:
    case eh_pe::udata2:
    case eh_pe::udata4:
    case eh_pe::udata8: {
      const unsigned size = encoded_value_size(format, address_size);
      if (size == 0) return unexpected(ReadError{ReadErrorCode::BadEncoding, start});
      uint64_t v = 0;
      if (!reader.read_uint(size, v)) return truncated();
      return v;
    }
    case eh_pe::sdata2:
    case eh_pe::sdata4:
    case eh_pe::sdata8: {
      int64_t v = 0;
      if (!reader.read_sint(encoded_value_size(format, address_size), v)) return truncated();
      return static_cast<uint64_t>(v);
    }
    default:
      return unexpected(ReadError{ReadErrorCode::BadEncoding, start});
  }
}

Expected<uint64_t, ReadError> read_encoded_pointer(ByteReader& reader, uint8_t encoding,
                                                   const PointerContext& ctx) {
  if (encoding == eh_pe::omit) return uint64_t{0};
  const uint64_t start = reader.offset();
  auto bad = [&] { return unexpected(ReadError{ReadErrorCode::BadEncoding, start}); };
  if (!valid_pointer_encoding(encoding) || !valid_address_size(ctx.address_size)) return bad();

  const uint8_t app = encoding & eh_pe::application_mask;
  if (app == eh_pe::aligned) {
    // The field starts at the next multiple of the address size (in link-time addresses).
    if (!reader.align(ctx.address_size)) {
      return unexpected(ReadError{ReadErrorCode::Truncated, start});
    }
  }
  const uint64_t field_addr = reader.address();
  auto raw = read_encoded_value(reader, encoding, ctx.address_size);
  if (!raw) return raw;

  uint64_t base = 0;
  switch (app) {
    case eh_pe::absptr:
    case eh_pe::aligned:
      break;
    case eh_pe::pcrel:
      base = field_addr;
      break;
    case eh_pe::textrel:
      if (ctx.text_base == 0) return bad();
      base = ctx.text_base;
      break;
    case eh_pe::datarel:
      if (ctx.data_base == 0) return bad();
      base = ctx.data_base;
      break;
    case eh_pe::funcrel:
      if (!ctx.func_base) return bad();
      base = *ctx.func_base;
      break;
    default:
      return bad();
  }
  uint64_t value = truncate_to(*raw + base, ctx.address_size);
  if (encoding & eh_pe::indirect) {
    std::optional<uint64_t> target;
    if (ctx.indirect != nullptr && *ctx.indirect) target = (*ctx.indirect)(value);
    if (!target) return unexpected(ReadError{ReadErrorCode::MemoryFault, value});
    value = truncate_to(*target, ctx.address_size);
  }
  return value;
}

}  // namespace ehbt::util
