// SPDX-License-Identifier: Apache-2.0
// .eh_frame_hdr layout (LSB "Exception Frame Header"): u8 version (1), u8 eh_frame_ptr_enc,
// u8 fde_count_enc, u8 table_enc, then eh_frame_ptr encoded with eh_frame_ptr_enc.
#include "elf/eh_frame_ptr.hpp"

#include "elf/byte_view.hpp"

namespace ehbt::elf {
namespace {

// DW_EH_PE_* values, from the LSB.
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kAbsptr = 0x00, kUdata2 = 0x02, kUdata4 = 0x03, kUdata8 = 0x04;
constexpr uint8_t kSdata2 = 0x0a, kSdata4 = 0x0b, kSdata8 = 0x0c;
constexpr uint8_t kApplyAbs = 0x00, kApplyPcrel = 0x10, kApplyDatarel = 0x30;
constexpr uint8_t kIndirect = 0x80;

}  // namespace

std::optional<uint64_t> decode_eh_frame_ptr(std::span<const std::byte> hdr, uint64_t hdr_addr,
                                            bool big_endian, uint8_t address_size) {
  if (hdr.size() < 4 || std::to_integer<uint8_t>(hdr[0]) != 1) return std::nullopt;
  uint8_t enc = std::to_integer<uint8_t>(hdr[1]);
  if (enc == kOmit || (enc & kIndirect)) return std::nullopt;

  unsigned size = 0;
  bool is_signed = false;
  switch (enc & 0x0f) {
    case kAbsptr:
      size = address_size == 4 ? 4 : 8;
      break;
    case kUdata2:
      size = 2;
      break;
    case kUdata4:
      size = 4;
      break;
    case kUdata8:
      size = 8;
      break;
    case kSdata2:
      size = 2, is_signed = true;
      break;
    case kSdata4:
      size = 4, is_signed = true;
      break;
    case kSdata8:
      size = 8, is_signed = true;
      break;
    default:
      return std::nullopt;
  }
  constexpr uint64_t kFieldOffset = 4;
  auto raw = load_uint(hdr, kFieldOffset, size, big_endian);
  if (!raw) return std::nullopt;
  uint64_t value = is_signed ? static_cast<uint64_t>(sign_extend(*raw, size)) : *raw;

  uint64_t result = 0;
  switch (enc & 0x70) {
    case kApplyAbs:
      result = value;
      break;
    case kApplyPcrel:
      result = hdr_addr + kFieldOffset + value;  // wraps like the target's arithmetic
      break;
    case kApplyDatarel:
      result = hdr_addr + value;
      break;
    default:
      return std::nullopt;
  }
  if (address_size == 4) result &= 0xffffffffu;
  return result;
}

}  // namespace ehbt::elf
