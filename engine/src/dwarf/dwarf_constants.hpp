// SPDX-License-Identifier: Apache-2.0
// DW_CFA_* and DW_OP_* opcode numbers (DWARF 5, sections 6.4.2 and 2.5, plus the GNU and
// AArch64 vendor extensions that real .eh_frame sections carry).
#pragma once

#include <cstdint>

namespace ehbt::dwarf::cfa {
// The three opcodes that carry an operand in their low six bits.
inline constexpr uint8_t advance_loc = 0x40;
inline constexpr uint8_t offset = 0x80;
inline constexpr uint8_t restore = 0xc0;
inline constexpr uint8_t high_mask = 0xc0;
inline constexpr uint8_t low_mask = 0x3f;

inline constexpr uint8_t nop = 0x00;
inline constexpr uint8_t set_loc = 0x01;
inline constexpr uint8_t advance_loc1 = 0x02;
inline constexpr uint8_t advance_loc2 = 0x03;
inline constexpr uint8_t advance_loc4 = 0x04;
inline constexpr uint8_t offset_extended = 0x05;
inline constexpr uint8_t restore_extended = 0x06;
inline constexpr uint8_t undefined = 0x07;
inline constexpr uint8_t same_value = 0x08;
inline constexpr uint8_t register_ = 0x09;
inline constexpr uint8_t remember_state = 0x0a;
inline constexpr uint8_t restore_state = 0x0b;
inline constexpr uint8_t def_cfa = 0x0c;
inline constexpr uint8_t def_cfa_register = 0x0d;
inline constexpr uint8_t def_cfa_offset = 0x0e;
inline constexpr uint8_t def_cfa_expression = 0x0f;
inline constexpr uint8_t expression = 0x10;
inline constexpr uint8_t offset_extended_sf = 0x11;
inline constexpr uint8_t def_cfa_sf = 0x12;
inline constexpr uint8_t def_cfa_offset_sf = 0x13;
inline constexpr uint8_t val_offset = 0x14;
inline constexpr uint8_t val_offset_sf = 0x15;
inline constexpr uint8_t val_expression = 0x16;
inline constexpr uint8_t MIPS_advance_loc8 = 0x1d;
// GNU_window_save on SPARC; AARCH64_negate_ra_state on aarch64 (the only arch we support
// that uses the number).
inline constexpr uint8_t AARCH64_negate_ra_state = 0x2d;
inline constexpr uint8_t GNU_args_size = 0x2e;
inline constexpr uint8_t GNU_negative_offset_extended = 0x2f;
}  // namespace ehbt::dwarf::cfa

namespace ehbt::dwarf::op {
inline constexpr uint8_t addr = 0x03;
inline constexpr uint8_t deref = 0x06;
inline constexpr uint8_t const1u = 0x08;
inline constexpr uint8_t const1s = 0x09;
inline constexpr uint8_t const2u = 0x0a;
inline constexpr uint8_t const2s = 0x0b;
inline constexpr uint8_t const4u = 0x0c;
inline constexpr uint8_t const4s = 0x0d;
inline constexpr uint8_t const8u = 0x0e;
inline constexpr uint8_t const8s = 0x0f;
inline constexpr uint8_t constu = 0x10;
inline constexpr uint8_t consts = 0x11;
inline constexpr uint8_t dup = 0x12;
inline constexpr uint8_t drop = 0x13;
inline constexpr uint8_t over = 0x14;
inline constexpr uint8_t pick = 0x15;
inline constexpr uint8_t swap = 0x16;
inline constexpr uint8_t rot = 0x17;
inline constexpr uint8_t xderef = 0x18;
inline constexpr uint8_t abs = 0x19;
inline constexpr uint8_t and_ = 0x1a;
inline constexpr uint8_t div = 0x1b;
inline constexpr uint8_t minus = 0x1c;
inline constexpr uint8_t mod = 0x1d;
inline constexpr uint8_t mul = 0x1e;
inline constexpr uint8_t neg = 0x1f;
inline constexpr uint8_t not_ = 0x20;
inline constexpr uint8_t or_ = 0x21;
inline constexpr uint8_t plus = 0x22;
inline constexpr uint8_t plus_uconst = 0x23;
inline constexpr uint8_t shl = 0x24;
inline constexpr uint8_t shr = 0x25;
inline constexpr uint8_t shra = 0x26;
inline constexpr uint8_t xor_ = 0x27;
inline constexpr uint8_t bra = 0x28;
inline constexpr uint8_t eq = 0x29;
inline constexpr uint8_t ge = 0x2a;
inline constexpr uint8_t gt = 0x2b;
inline constexpr uint8_t le = 0x2c;
inline constexpr uint8_t lt = 0x2d;
inline constexpr uint8_t ne = 0x2e;
inline constexpr uint8_t skip = 0x2f;
inline constexpr uint8_t lit0 = 0x30;
inline constexpr uint8_t lit31 = 0x4f;
inline constexpr uint8_t reg0 = 0x50;
inline constexpr uint8_t reg31 = 0x6f;
inline constexpr uint8_t breg0 = 0x70;
inline constexpr uint8_t breg31 = 0x8f;
inline constexpr uint8_t regx = 0x90;
inline constexpr uint8_t fbreg = 0x91;
inline constexpr uint8_t bregx = 0x92;
inline constexpr uint8_t piece = 0x93;
inline constexpr uint8_t deref_size = 0x94;
inline constexpr uint8_t xderef_size = 0x95;
inline constexpr uint8_t nop = 0x96;
inline constexpr uint8_t push_object_address = 0x97;
inline constexpr uint8_t call2 = 0x98;
inline constexpr uint8_t call4 = 0x99;
inline constexpr uint8_t call_ref = 0x9a;
inline constexpr uint8_t form_tls_address = 0x9b;
inline constexpr uint8_t call_frame_cfa = 0x9c;
inline constexpr uint8_t bit_piece = 0x9d;
inline constexpr uint8_t implicit_value = 0x9e;
inline constexpr uint8_t stack_value = 0x9f;
inline constexpr uint8_t implicit_pointer = 0xa0;
inline constexpr uint8_t addrx = 0xa1;
inline constexpr uint8_t constx = 0xa2;
inline constexpr uint8_t entry_value = 0xa3;
inline constexpr uint8_t const_type = 0xa4;
inline constexpr uint8_t regval_type = 0xa5;
inline constexpr uint8_t deref_type = 0xa6;
inline constexpr uint8_t xderef_type = 0xa7;
inline constexpr uint8_t convert = 0xa8;
inline constexpr uint8_t reinterpret = 0xa9;
inline constexpr uint8_t GNU_push_tls_address = 0xe0;
inline constexpr uint8_t GNU_uninit = 0xf0;
inline constexpr uint8_t GNU_encoded_addr = 0xf1;
inline constexpr uint8_t GNU_implicit_pointer = 0xf2;
inline constexpr uint8_t GNU_entry_value = 0xf3;
inline constexpr uint8_t GNU_const_type = 0xf4;
inline constexpr uint8_t GNU_regval_type = 0xf5;
inline constexpr uint8_t GNU_deref_type = 0xf6;
inline constexpr uint8_t GNU_convert = 0xf7;
inline constexpr uint8_t GNU_reinterpret = 0xf9;
inline constexpr uint8_t GNU_parameter_ref = 0xfa;
inline constexpr uint8_t GNU_addr_index = 0xfb;
inline constexpr uint8_t GNU_const_index = 0xfc;
inline constexpr uint8_t GNU_variable_value = 0xfd;
}  // namespace ehbt::dwarf::op
