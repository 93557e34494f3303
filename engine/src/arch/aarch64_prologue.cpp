// SPDX-License-Identifier: Apache-2.0
// The decoder knows just enough A64 to follow sp and x29 through a prologue. Encodings are
// from the Arm Architecture Reference Manual (DDI 0487), section C4.1 "A64 instruction set
// encoding"; field names follow it. Each recogniser is a mask over the fixed bits of one
// encoding class and the value those bits must have.
#include "arch/aarch64_prologue.hpp"

#include <array>

namespace ehbt::arch::aarch64 {
namespace {

constexpr unsigned kFp = 29, kLr = 30, kSpOrZr = 31;

// Field extraction.
constexpr unsigned rd(uint32_t w) {
  return w & 0x1f;
}  // Rd / Rt, bits 4:0
constexpr unsigned rn(uint32_t w) {
  return (w >> 5) & 0x1f;
}  // Rn, bits 9:5
constexpr unsigned rt2(uint32_t w) {
  return (w >> 10) & 0x1f;
}  // Rt2, bits 14:10
constexpr int64_t sign_extend(uint64_t v, unsigned bits) {
  const uint64_t m = 1ull << (bits - 1);
  return static_cast<int64_t>((v ^ m) - m);
}

// --- Branches ----------------------------------------------------------------------------
// Unconditional branch (immediate): op:00101:imm26. op 0 = B, 1 = BL.
constexpr bool is_b(uint32_t w) {
  return (w & 0xfc000000) == 0x14000000;
}
constexpr bool is_bl(uint32_t w) {
  return (w & 0xfc000000) == 0x94000000;
}
// Unconditional branch (register): 1101011:opc(4):op2(5):op3(6):Rn:op4. opc 0000 = BR (and
// BRAAZ/BRAA...), 0001 = BLR (BLRAA...), 0010 = RET (RETAA/RETAB).
constexpr bool is_branch_reg(uint32_t w) {
  return (w & 0xfe000000) == 0xd6000000;
}
constexpr unsigned branch_reg_opc(uint32_t w) {
  return (w >> 21) & 0xf;
}
constexpr bool is_br_or_ret(uint32_t w) {
  return is_branch_reg(w) && (branch_reg_opc(w) == 0 || branch_reg_opc(w) == 2);
}
constexpr bool is_blr(uint32_t w) {
  return is_branch_reg(w) && branch_reg_opc(w) == 1;
}
// UDF #imm16 is 0x0000:imm16; linkers also pad between functions with zero words.
constexpr bool is_udf(uint32_t w) {
  return (w & 0xffff0000) == 0;
}

// --- Data processing (immediate) ---------------------------------------------------------
// Add/subtract (immediate): sf:op:S:100010:sh:imm12:Rn:Rd. op 1 = SUB, S 1 sets flags (and
// then Rd 31 is xzr, not sp); sh 1 shifts imm12 left by 12.
constexpr bool is_addsub_imm(uint32_t w) {
  return (w & 0x1f800000) == 0x11000000;
}
constexpr bool sf(uint32_t w) {
  return (w >> 31) & 1;
}
constexpr bool op_sub(uint32_t w) {
  return (w >> 30) & 1;
}
constexpr bool sets_flags(uint32_t w) {
  return (w >> 29) & 1;
}
constexpr uint64_t addsub_imm(uint32_t w) {
  const uint64_t imm12 = (w >> 10) & 0xfff;
  return (w >> 22) & 1 ? imm12 << 12 : imm12;
}
// `add x29, sp, #imm` (`mov x29, sp` is its alias with imm 0): 64-bit ADD without flags.
constexpr bool is_add_x_imm(uint32_t w) {
  return (w & 0xff800000) == 0x91000000;
}
// Add/subtract (immediate, with tags), ADDG/SUBG: sf:op:S:100011:... (Rd may be sp).
constexpr bool is_addsub_imm_tags(uint32_t w) {
  return (w & 0x1f800000) == 0x11800000;
}
// Logical (immediate): sf:opc(2):100100:N:immr:imms:Rn:Rd. opc 11 (ANDS) writes xzr; the others
// (AND/ORR/EOR) write sp when Rd is 31, as in `and sp, x9, #-16`.
constexpr bool is_logical_imm(uint32_t w) {
  return (w & 0x1f800000) == 0x12000000;
}
constexpr bool logical_sets_flags(uint32_t w) {
  return ((w >> 29) & 3) == 3;
}

// --- Data processing (register) ----------------------------------------------------------
// Add/subtract (extended register): sf:op:S:01011:00:1:Rm:option:imm3:Rn:Rd; with S 0, Rd 31
// is sp (`sub sp, sp, x16, uxtx` allocates a large frame).
constexpr bool is_addsub_ext(uint32_t w) {
  return (w & 0x1f200000) == 0x0b200000;
}

// --- Loads and stores --------------------------------------------------------------------
// Load/store register pair: opc(2):101:V:0:mode(2):L:imm7:Rt2:Rn:Rt. mode 01 post-index,
// 10 signed offset, 11 pre-index (00: no-allocate pair, no writeback). Writeback iff bit 23.
constexpr bool is_pair(uint32_t w) {
  return (w & 0x3a000000) == 0x28000000;
}
constexpr unsigned pair_mode(uint32_t w) {
  return (w >> 23) & 3;
}
constexpr bool pair_writeback(uint32_t w) {
  return (w >> 23) & 1;
}
constexpr int64_t pair_imm7(uint32_t w) {
  return sign_extend((w >> 15) & 0x7f, 7);
}
// Bytes per imm7 step: V 0 (general registers): opc 00 (32-bit) 4, 10 (64-bit) 8, 01 STGP 16
// / LDPSW 4; V 1 (SIMD&FP): opc 00 S 4, 01 D 8, 10 Q 16. 0 for a reserved encoding.
constexpr unsigned pair_scale(uint32_t w) {
  const unsigned opc = w >> 30;
  const bool simd = (w >> 26) & 1;
  const bool load = (w >> 22) & 1;
  if (simd) return opc == 3 ? 0 : 4u << opc;
  switch (opc) {
    case 0:
      return 4;
    case 1:
      return load ? 4 : 16;
    case 2:
      return 8;
    default:
      return 0;
  }
}
// STP (64-bit general registers), the form that stores a frame record: opc 10, V 0, L 0.
constexpr bool is_stp_x(uint32_t w) {
  return (w & 0xfe400000) == 0xa8000000;
}
constexpr unsigned kPairPost = 1;  // pair_mode of a post-index access
// Load/store register (unscaled immediate, immediate post-index, unprivileged, immediate
// pre-index): size(2):111:V:00:opc(2):0:imm9:mode(2):Rn:Rt. mode 01 post, 11 pre; the
// writeback adds the unscaled imm9 to Rn whatever the size, load or store.
constexpr bool is_ldst_imm9(uint32_t w) {
  return (w & 0x3b200000) == 0x38000000;
}
constexpr bool imm9_writeback(uint32_t w) {
  return (w >> 10) & 1;
}
constexpr int64_t imm9(uint32_t w) {
  return sign_extend((w >> 12) & 0x1ff, 9);
}
// LDRAA/LDRAB: 11:111:0:00:M:S:1:imm9:W:1:Rn:Rt; W 1 writes the base back.
constexpr bool is_ldra_writeback(uint32_t w) {
  return (w & 0xff200c00) == 0xf8200c00;
}

// A prologue allocates less than this; more means the words are not a prologue.
constexpr int64_t kMaxFrameBytes = int64_t{1} << 32;

bool read_insn(Memory& mem, uint64_t addr, uint32_t& out) {
  uint64_t v = 0;
  if (!mem.read_uint(addr, 4, /*big_endian=*/false, v)) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

Unexpected<PrologueFailure> unrecognised(const char* why) {
  return unexpected(PrologueFailure{PrologueError::Unrecognised, 0, why});
}

// Does `w` set sp other than by the immediate adjustments the decoder follows?
bool writes_sp_otherwise(uint32_t w) {
  if (is_addsub_imm(w)) {
    return rd(w) == kSpOrZr && !sets_flags(w) && !(sf(w) && rn(w) == kSpOrZr);
  }
  if (is_addsub_imm_tags(w)) return rd(w) == kSpOrZr;
  if (is_logical_imm(w)) return rd(w) == kSpOrZr && !logical_sets_flags(w);
  if (is_addsub_ext(w)) return rd(w) == kSpOrZr && !sets_flags(w);
  if (is_ldra_writeback(w)) return rn(w) == kSpOrZr;
  return false;
}

// A 64-bit general register stored relative to sp: where, as a depth below the CFA.
struct SpStore {
  static constexpr unsigned kNone = 32;
  int64_t slot = -1;      // where `reg` went
  unsigned reg = kNone;   // first (or only) register stored
  unsigned reg2 = kNone;  // a pair's second register, at slot - 8
};

// Follows one instruction's effect on sp (`depth`: how far sp is below the CFA), the part
// both analyses share, and tells which x register it stored relative to sp, if any.
Expected<SpStore, PrologueFailure> step_sp(uint32_t w, int64_t& depth) {
  SpStore store;
  if (is_pair(w) && rn(w) == kSpOrZr) {
    const unsigned scale = pair_scale(w);
    if (scale == 0) return unrecognised("reserved store-pair encoding");
    const int64_t off = pair_imm7(w) * scale;
    if (is_stp_x(w)) {
      // Pre-index and signed offset store at sp + off, post-index at sp.
      store = SpStore{depth - (pair_mode(w) == kPairPost ? 0 : off), rd(w), rt2(w)};
    }
    if (pair_writeback(w)) depth -= off;
  } else if (is_ldst_imm9(w) && rn(w) == kSpOrZr) {
    // STR Xt (size 11, V 0, opc 00) pre-index stores at the new sp, post-index at the old,
    // the unscaled form (no writeback) at sp + imm9.
    const bool str_x = (w & 0xffe00000) == 0xf8000000;
    const bool pre = (w >> 11) & 1;
    if (str_x) store = SpStore{depth - (imm9_writeback(w) && !pre ? 0 : imm9(w)), rd(w)};
    if (imm9_writeback(w)) depth -= imm9(w);
  } else if ((w & 0xffc00000) == 0xf9000000 && rn(w) == kSpOrZr) {
    // STR Xt, [sp, #imm12 * 8]
    store = SpStore{depth - static_cast<int64_t>(((w >> 10) & 0xfff) * 8), rd(w)};
  } else if (is_addsub_imm(w) && sf(w) && !sets_flags(w) && rd(w) == kSpOrZr && rn(w) == kSpOrZr) {
    const int64_t imm = static_cast<int64_t>(addsub_imm(w));
    depth += op_sub(w) ? imm : -imm;
  } else if (writes_sp_otherwise(w)) {
    return unrecognised("sp is changed in a way the decoder does not follow");
  }
  if (depth < 0) return unrecognised("sp moves above its value at function entry");
  if (depth > kMaxFrameBytes) return unrecognised("sp moves down further than any frame");
  return store;
}

}  // namespace

Expected<uint64_t, PrologueFailure> find_function_start(Memory& mem, uint64_t pc,
                                                        uint32_t max_words) {
  uint64_t addr = pc & ~uint64_t{3};
  // Past `add x29, sp, #imm` (walking backwards) we are in the prologue: a call there can only
  // be the end of the function before (a call to a function that does not return).
  bool passed_fp_set = false;
  for (uint32_t i = 0; i < max_words; ++i) {
    if (addr < 4) return unrecognised("no function boundary before address 0");
    addr -= 4;
    uint32_t w = 0;
    if (!read_insn(mem, addr, w)) {
      return unexpected(
          PrologueFailure{PrologueError::MemoryFault, addr, "instruction unreadable"});
    }
    if (is_br_or_ret(w) || is_b(w) || is_udf(w)) return addr + 4;
    if (passed_fp_set && (is_bl(w) || is_blr(w))) return addr + 4;
    if (is_add_x_imm(w) && rd(w) == kFp && rn(w) == kSpOrZr) passed_fp_set = true;
  }
  return unexpected(PrologueFailure{PrologueError::ScanCap, 0,
                                    "no function boundary within max_prologue_scan words"});
}

Expected<PrologueFrame, PrologueFailure> analyse_prologue(Memory& mem, uint64_t start, uint64_t pc,
                                                          uint32_t max_insns) {
  if (start % 4 != 0) return unrecognised("function start is misaligned");
  // Offsets below the sp at function entry (= the CFA): how far sp has moved down, and where
  // the frame record was stored (-1: not yet).
  int64_t depth = 0;
  int64_t record = -1;
  uint64_t addr = start;
  for (uint32_t i = 0; i < max_insns; ++i, addr += 4) {
    if (addr >= pc) return unrecognised("the pc is reached before x29 is set from sp");
    uint32_t w = 0;
    if (!read_insn(mem, addr, w)) {
      return unexpected(
          PrologueFailure{PrologueError::MemoryFault, addr, "instruction unreadable"});
    }
    if (is_b(w) || is_bl(w) || is_branch_reg(w) || is_udf(w)) {
      return unrecognised("control leaves the code before x29 is set from sp");
    }
    if (is_add_x_imm(w) && rd(w) == kFp && rn(w) == kSpOrZr) {
      const int64_t fp = depth - static_cast<int64_t>(addsub_imm(w));  // x29 = CFA - fp
      if (record < 0) return unrecognised("x29 is set from sp before a frame record is stored");
      if (fp != record) return unrecognised("x29 does not point at the stored frame record");
      if (fp < 16) return unrecognised("the frame record does not lie below the CFA");
      return PrologueFrame{static_cast<uint64_t>(fp), addr};
    }
    auto store = step_sp(w, depth);
    if (!store) return unexpected(store.error());
    if (store->reg == kFp && store->reg2 == kLr) record = store->slot;  // the frame record
  }
  return unexpected(
      PrologueFailure{PrologueError::ScanCap, 0, "x29 is not set within max_prologue_insns words"});
}

Expected<SavedLr, PrologueFailure> analyse_lr_save(Memory& mem, uint64_t start, uint64_t pc,
                                                   uint32_t max_insns) {
  if (start % 4 != 0) return unrecognised("function start is misaligned");
  int64_t depth = 0;  // how far sp is below the CFA
  int64_t lr = -1;    // where x30 was stored, below the CFA (-1: not yet)
  uint64_t addr = start;
  for (uint32_t i = 0; addr < pc; ++i, addr += 4) {
    if (i == max_insns) {
      return unexpected(
          PrologueFailure{PrologueError::ScanCap, 0, "the pc lies past max_prologue_insns words"});
    }
    uint32_t w = 0;
    if (!read_insn(mem, addr, w)) {
      return unexpected(
          PrologueFailure{PrologueError::MemoryFault, addr, "instruction unreadable"});
    }
    if (!is_bl(w) && !is_blr(w) && (is_b(w) || is_branch_reg(w) || is_udf(w))) {
      return unrecognised("control leaves the straight-line code before the pc");
    }
    if ((w & 0xfc000000) == 0x54000000 || (w & 0x7e000000) == 0x34000000 ||
        (w & 0x7e000000) == 0x36000000) {
      return unrecognised("a conditional branch comes before the pc");  // b.cond, cbz, tbz
    }
    auto store = step_sp(w, depth);
    if (!store) return unexpected(store.error());
    if (store->reg == kLr) lr = store->slot;
    if (store->reg2 == kLr) lr = store->slot - 8;
  }
  if (lr <= 0 || lr > depth) return unrecognised("x30 is not stored in the frame");
  return SavedLr{static_cast<uint64_t>(depth), static_cast<uint64_t>(lr)};
}

}  // namespace ehbt::arch::aarch64
