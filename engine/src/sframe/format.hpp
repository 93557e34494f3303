// SPDX-License-Identifier: Apache-2.0
// The bytes of an .sframe section (versions 2 and 3): sizes, field offsets and bit layouts,
// shared by the reader and the writer. Values follow the SFrame specification (binutils
// docs 2.41/2.45 for V2, 2.46 for V3). Multi-byte fields are in the target's byte order;
// the magic tells which.
#pragma once

#include <cstdint>

namespace ehbt::sframe::fmt {

// --- Preamble and header ---
inline constexpr uint16_t kMagic = 0xdee2;
inline constexpr uint8_t kVersion2 = 2;
inline constexpr uint8_t kVersion3 = 3;

inline constexpr uint8_t kFlagFdeSorted = 0x1;
inline constexpr uint8_t kFlagFramePointer = 0x2;  // V2 only; the bit is unused in V3
inline constexpr uint8_t kFlagFuncStartPcrel = 0x4;
inline constexpr uint8_t kKnownFlagsV2 = kFlagFdeSorted | kFlagFramePointer | kFlagFuncStartPcrel;
inline constexpr uint8_t kKnownFlagsV3 = kFlagFdeSorted | kFlagFuncStartPcrel;

// sframe_header: preamble (magic u16, version u8, flags u8), abi u8, fixed FP offset s8,
// fixed RA offset s8, auxiliary header length u8, num_fdes u32, num_fres u32, fre_len u32,
// fdeoff u32, freoff u32. fdeoff/freoff count from the end of the header (and of the
// auxiliary header that follows it).
inline constexpr uint32_t kHeaderSize = 28;
inline constexpr uint32_t kOffMagic = 0;
inline constexpr uint32_t kOffVersion = 2;
inline constexpr uint32_t kOffFlags = 3;
inline constexpr uint32_t kOffAbi = 4;
inline constexpr uint32_t kOffFixedFp = 5;
inline constexpr uint32_t kOffFixedRa = 6;
inline constexpr uint32_t kOffAuxLen = 7;
inline constexpr uint32_t kOffNumFdes = 8;
inline constexpr uint32_t kOffNumFres = 12;
inline constexpr uint32_t kOffFreLen = 16;
inline constexpr uint32_t kOffFdeOff = 20;
inline constexpr uint32_t kOffFreOff = 24;

inline constexpr uint8_t kAbiAarch64Big = 1;
inline constexpr uint8_t kAbiAarch64Little = 2;
inline constexpr uint8_t kAbiAmd64Little = 3;
inline constexpr uint8_t kAbiS390xBig = 4;

// --- Function descriptors ---
// V2 FDE (20 bytes): func start s32, func size u32, first FRE offset u32 (from the FRE
// sub-section), num FREs u32, func info u8, rep size u8, padding u16.
inline constexpr uint32_t kV2FdeSize = 20;
// V3 FDE index (16 bytes): func start s64, func size u32, offset u32 (from the FRE sub-section)
// of the function's attributes, which the FREs follow.
inline constexpr uint32_t kV3FdeIndexSize = 16;
// V3 FDE attributes (5 bytes, unaligned): num FREs u16, func info u8, func info2 u8, rep size u8.
inline constexpr uint32_t kV3FdeAttrSize = 5;

// The function start is relative to the start of the section, or (flag FUNC_START_PCREL) to
// the start field itself, which is the first field of the FDE.

// func info: bits 0-3 FRE type, bit 4 PC type, bit 5 aarch64 pointer-authentication key,
// bit 7 (V3) signal frame.
inline constexpr uint8_t kFreTypeAddr1 = 0;
inline constexpr uint8_t kFreTypeAddr2 = 1;
inline constexpr uint8_t kFreTypeAddr4 = 2;
inline constexpr uint8_t kPcTypeInc = 0;
inline constexpr uint8_t kPcTypeMask = 1;
constexpr uint8_t info_fre_type(uint8_t info) {
  return info & 0xf;
}
constexpr uint8_t info_pc_type(uint8_t info) {
  return (info >> 4) & 1;
}
constexpr bool info_pauth_b(uint8_t info) {
  return ((info >> 5) & 1) != 0;
}
constexpr bool info_signal(uint8_t info) {
  return ((info >> 7) & 1) != 0;
}
constexpr uint8_t make_func_info(uint8_t fre_type, uint8_t pc_type, bool pauth_b, bool signal) {
  return static_cast<uint8_t>((signal ? 0x80 : 0) | (pauth_b ? 0x20 : 0) | ((pc_type & 1) << 4) |
                              (fre_type & 0xf));
}

// func info2 (V3): bits 0-4 FDE type.
inline constexpr uint8_t kFdeTypeDefault = 0;
inline constexpr uint8_t kFdeTypeFlex = 1;
constexpr uint8_t info2_fde_type(uint8_t info2) {
  return info2 & 0x1f;
}

// --- Frame row entries ---
// FRE: start offset (u8/u16/u32 by FRE type), info u8, then N data words of S bytes.
// info: bit 0 CFA base (0 FP, 1 SP; unused in flexible FDEs), bits 1-4 data word count,
// bits 5-6 data word size, bit 7 aarch64 mangled RA.
inline constexpr uint8_t kBaseFp = 0;
inline constexpr uint8_t kBaseSp = 1;
inline constexpr uint8_t kWordSize1 = 0;
inline constexpr uint8_t kWordSize2 = 1;
inline constexpr uint8_t kWordSize4 = 2;
constexpr uint8_t fre_base(uint8_t info) {
  return info & 1;
}
constexpr uint8_t fre_word_count(uint8_t info) {
  return (info >> 1) & 0xf;
}
constexpr uint8_t fre_word_size_code(uint8_t info) {
  return (info >> 5) & 3;
}
constexpr bool fre_mangled_ra(uint8_t info) {
  return ((info >> 7) & 1) != 0;
}
constexpr uint8_t make_fre_info(uint8_t base, uint8_t count, uint8_t size_code, bool mangled) {
  return static_cast<uint8_t>((mangled ? 0x80 : 0) | ((size_code & 3) << 5) | ((count & 0xf) << 1) |
                              (base & 1));
}
constexpr unsigned start_size(uint8_t fre_type) {
  return fre_type == kFreTypeAddr1 ? 1 : fre_type == kFreTypeAddr2 ? 2 : 4;
}
constexpr unsigned word_size(uint8_t size_code) {
  return size_code == kWordSize1 ? 1 : size_code == kWordSize2 ? 2 : 4;
}

// Default FDEs: word 0 is the CFA offset from the base register. Then, by ABI:
//   amd64:   [FP at CFA+w1]                      (RA at the header's fixed offset)
//   aarch64: [RA at CFA+w1 [FP at CFA+w2]]
//   s390x:   [RA at CFA+w1 (0: not saved, padding) [FP at CFA+w2]]
inline constexpr int64_t kRaOffsetInvalid = 0;

// s390x stores the CFA offset minus 160 (the CFA is the caller's SP + 160) divided by 8 (the
// stack stays 8-byte aligned), in every FDE type.
inline constexpr int64_t kS390xCfaAdjustment = -160;
inline constexpr int64_t kS390xCfaAlignment = 8;
constexpr int64_t s390x_cfa_decode(int64_t word) {
  return word * kS390xCfaAlignment - kS390xCfaAdjustment;
}
// V2 s390x: an odd RA/FP word is a DWARF register number shifted left by one (the value is
// saved in that register); V3 says this with flexible FDEs instead.
constexpr bool s390x_v2_is_regnum(int64_t word) {
  return (word & 1) != 0;
}
constexpr int64_t s390x_v2_regnum(int64_t word) {
  return word >> 1;
}
constexpr int64_t s390x_v2_encode_regnum(int64_t reg) {
  return (reg << 1) | 1;
}

// Flexible FDEs (V3): CFA, RA and FP each as a control word and an offset word, in that
// order; RA may be a single zero word (padding) when FP follows and RA has no rule.
// Control word: bit 0 reg_p (base is register `regnum`, else the CFA), bit 1 deref_p (the
// value is stored at base + offset, else it is base + offset), bit 2 reserved (0), bits 3+
// the DWARF register number. Control words are unsigned, offsets signed.
constexpr bool ctrl_reg_p(uint64_t c) {
  return (c & 1) != 0;
}
constexpr bool ctrl_deref_p(uint64_t c) {
  return (c & 2) != 0;
}
constexpr bool ctrl_reserved(uint64_t c) {
  return (c & 4) != 0;
}
constexpr uint64_t ctrl_regnum(uint64_t c) {
  return c >> 3;
}
constexpr uint64_t make_ctrl(uint64_t reg, bool deref, bool reg_p) {
  return (reg << 3) | (deref ? 2u : 0u) | (reg_p ? 1u : 0u);
}

}  // namespace ehbt::sframe::fmt
