// SPDX-License-Identifier: Apache-2.0
// DW_EH_PE_* pointer encodings (LSB "Exception Frames", .eh_frame / .eh_frame_hdr / LSDA):
// a low nibble giving the value's format and a high nibble giving what it is relative to.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "ehbt/expected.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::util {

namespace eh_pe {
// Formats (low nibble).
inline constexpr uint8_t absptr = 0x00;
inline constexpr uint8_t uleb128 = 0x01;
inline constexpr uint8_t udata2 = 0x02;
inline constexpr uint8_t udata4 = 0x03;
inline constexpr uint8_t udata8 = 0x04;
inline constexpr uint8_t sleb128 = 0x09;
inline constexpr uint8_t sdata2 = 0x0a;
inline constexpr uint8_t sdata4 = 0x0b;
inline constexpr uint8_t sdata8 = 0x0c;
// Applications (bits 4-6).
inline constexpr uint8_t pcrel = 0x10;
inline constexpr uint8_t textrel = 0x20;
inline constexpr uint8_t datarel = 0x30;
inline constexpr uint8_t funcrel = 0x40;
inline constexpr uint8_t aligned = 0x50;
// Modifiers.
inline constexpr uint8_t indirect = 0x80;
inline constexpr uint8_t omit = 0xff;

inline constexpr uint8_t format_mask = 0x0f;
inline constexpr uint8_t application_mask = 0x70;
}  // namespace eh_pe

// Reads the pointer stored at a link-time address (DW_EH_PE_indirect); nullopt when it cannot.
using IndirectFn = std::function<std::optional<uint64_t>(uint64_t link_addr)>;

// What the relative applications are relative to. pcrel is always relative to the address
// of the encoded field (the reader's base_addr + offset).
struct PointerContext {
  uint8_t address_size = 8;
  uint64_t text_base = 0;             // 0: unknown, textrel fails
  uint64_t data_base = 0;             // 0: unknown, datarel fails
  std::optional<uint64_t> func_base;  // funcrel: the FDE's pc_begin
  const IndirectFn* indirect = nullptr;
};

// Size in bytes of a fixed-size format, 0 for LEB128 and for unknown formats.
unsigned encoded_value_size(uint8_t encoding, uint8_t address_size);

// `v` as an address of `address_size` bytes: what an encoded pointer wraps to.
inline uint64_t truncate_to(uint64_t v, uint8_t address_size) {
  return address_size >= 8 ? v : v & ((uint64_t{1} << (address_size * 8)) - 1);
}

// True when `encoding` names a format and application this decoder understands.
bool valid_pointer_encoding(uint8_t encoding);

// Decodes one pointer. DW_EH_PE_omit consumes nothing and yields 0; callers that need a
// value check for omit first. Results are truncated to address_size bytes.
Expected<uint64_t, ReadError> read_encoded_pointer(ByteReader& reader, uint8_t encoding,
                                                   const PointerContext& ctx);

// The raw value of a format, with no application (FDE pc_range, hdr fde_count).
Expected<uint64_t, ReadError> read_encoded_value(ByteReader& reader, uint8_t format,
                                                 uint8_t address_size);

}  // namespace ehbt::util
