// SPDX-License-Identifier: Apache-2.0
#include "arch/jit_prologue.hpp"

namespace ehbt::arch {
namespace {

// Encodings (Intel SDM): REX.W 48; ModRM 0xc4 is mod 3, reg 0 (/0: ADD), rm 4 (rsp); 0xec is
// /5 (SUB) on rsp; 83 takes a sign-extended imm8, 81 an imm32.
constexpr uint8_t kRexW = 0x48;
constexpr uint8_t kAddRsp = 0xc4;
constexpr uint8_t kSubRsp = 0xec;

struct Bytes {
  std::span<const std::byte> code;
  uint8_t at(std::size_t i) const { return static_cast<uint8_t>(code[i]); }
  uint32_t u32(std::size_t i) const {
    return at(i) | uint32_t{at(i + 1)} << 8 | uint32_t{at(i + 2)} << 16 | uint32_t{at(i + 3)} << 24;
  }
};

// `add $imm,%rsp` or `sub $imm,%rsp` (ModRM `modrm`) at `off`, its length and immediate
// (sign-extended: a negative one is refused by the callers).
struct RspArith {
  std::size_t len = 0;
  int64_t imm = 0;
};
std::optional<RspArith> rsp_arith(const Bytes& b, std::size_t off, uint8_t modrm) {
  const std::size_t left = b.code.size() - off;
  if (left < 4 || b.at(off) != kRexW || b.at(off + 2) != modrm) return std::nullopt;
  if (b.at(off + 1) == 0x83) return RspArith{4, static_cast<int8_t>(b.at(off + 3))};
  if (b.at(off + 1) != 0x81 || left < 7) return std::nullopt;
  return RspArith{7, static_cast<int32_t>(b.u32(off + 3))};
}

// The frame's epilogue `add $S,%rsp; pop %rbp` at `off`: its length, or 0.
std::size_t epilogue_at(const Bytes& b, std::size_t off, uint64_t frame_bytes) {
  auto add = rsp_arith(b, off, kAddRsp);
  if (!add || add->imm < 0 || static_cast<uint64_t>(add->imm) != frame_bytes) return 0;
  const std::size_t pop = off + add->len;
  return pop < b.code.size() && b.at(pop) == 0x5d ? add->len + 1 : 0;
}

// Whether the instruction at `off` writes rsp: pop r64 (58+r, 41 58+r), add or sub of an
// immediate, lea of an rsp-relative address into rsp (48 8d 64 24 ib, 48 8d a4 24 id), mov of
// a register into rsp (REX.W 89 /r with rm rsp, REX.W 8b /r with reg rsp). Bytes cut short
// before the instruction could be told: true (nothing proves rsp unchanged).
bool writes_rsp(const Bytes& b, std::size_t off) {
  const std::size_t left = b.code.size() - off;
  if (left < 4) return true;
  const uint8_t op = b.at(off);
  if (op >= 0x58 && op <= 0x5f) return true;
  if (op == 0x41 && b.at(off + 1) >= 0x58 && b.at(off + 1) <= 0x5f) return true;
  if (rsp_arith(b, off, kAddRsp) || rsp_arith(b, off, kSubRsp)) return true;
  if ((op & 0xf8) != 0x48) return false;  // the rest need REX.W
  const uint8_t opc = b.at(off + 1), modrm = b.at(off + 2);
  if (opc == 0x8d && (modrm == 0x64 || modrm == 0xa4) && b.at(off + 3) == 0x24) return true;
  if (opc == 0x89 && (modrm & 0xc7) == 0xc4 && (op & 0x01) == 0) return true;  // rm: rsp
  if (opc == 0x8b && (modrm & 0xf8) == 0xe0 && (op & 0x04) == 0) return true;  // reg: rsp
  return false;
}

// The prologue of a method that bangs no stack (C2: a leaf with a small frame, an OSR entry):
// `sub $F,%rsp` (F: the frame without the return address), then `mov %rbp,F-8(%rsp)`
// (REX.W 89 /r, reg rbp, rm SIB base rsp: ModRM 0x2c no displacement, 0x6c disp8, 0xac
// disp32). The frame is the same as after `push %rbp; sub $F-8,%rsp`.
std::optional<JitPrologue> unbanged(const Bytes& b, std::size_t off) {
  auto sub = rsp_arith(b, off, kSubRsp);
  if (!sub || sub->imm < 8) return std::nullopt;
  const uint64_t saved_at = static_cast<uint64_t>(sub->imm) - 8;
  const std::size_t mov = off + sub->len;
  if (b.code.size() - mov < 4 || b.at(mov) != kRexW || b.at(mov + 1) != 0x89 ||
      b.at(mov + 3) != 0x24) {
    return std::nullopt;
  }
  const uint8_t modrm = b.at(mov + 2);
  std::size_t len = 4;
  uint64_t disp = 0;
  if (modrm == 0x6c && b.code.size() - mov >= 5) {
    len = 5;
    disp = b.at(mov + 4);  // disp8 is sign-extended: a negative one is no match below
    if (disp & 0x80) return std::nullopt;
  } else if (modrm == 0xac && b.code.size() - mov >= 8) {
    len = 8;
    disp = b.u32(mov + 4);
  } else if (modrm != 0x2c) {
    return std::nullopt;
  }
  if (disp != saved_at) return std::nullopt;
  JitPrologue p{saved_at, mov + len};
  const std::size_t next = mov + len;
  p.keeps_frame_pointer = b.code.size() - next >= 3 && b.at(next) == kRexW &&
                          ((b.at(next + 1) == 0x8b && b.at(next + 2) == 0xec) ||
                           (b.at(next + 1) == 0x89 && b.at(next + 2) == 0xe5));
  return p;
}

}  // namespace

std::optional<JitPrologue> hotspot_prologue(Arch arch, std::span<const std::byte> code,
                                            std::size_t off) {
  if (arch != Arch::X86_64 || off > code.size()) return std::nullopt;
  const Bytes b{code.subspan(off)};
  if (b.code.size() >= 4 && b.at(0) == kRexW) {
    auto p = unbanged(b, 0);
    if (p) p->end += off;
    return p;
  }
  // 89 84 24 disp32: mov %eax,disp32(%rsp) (ModRM mod 2, reg eax, rm SIB; SIB base rsp, no
  // index). The bang touches the stack below sp: disp32 negative.
  if (b.code.size() < 8 || b.at(0) != 0x89 || b.at(1) != 0x84 || b.at(2) != 0x24) {
    return std::nullopt;
  }
  if (static_cast<int32_t>(b.u32(3)) >= 0 || b.at(7) != 0x55) return std::nullopt;  // push %rbp
  auto sub = rsp_arith(b, 8, kSubRsp);
  if (!sub || sub->imm <= 0) return std::nullopt;  // a negative imm8 adds: no frame of HotSpot's
  return JitPrologue{static_cast<uint64_t>(sub->imm), off + 8 + sub->len};
}

namespace {

// Whether the code at `off` (right after an epilogue's pop) is HotSpot's reserved-stack check,
// `cmp disp32(%r15),%rsp; jb` (REX.WB 3b /r, ModRM 0xa7: reg rsp, rm r15 + disp32; jb: 72 rel8
// or 0f 82 rel32), which calls into the VM with the frame gone. The return poll that may
// follow instead compares alike but jumps with ja (77, 0f 87).
bool reserved_stack_check(const Bytes& b, std::size_t off) {
  if (b.code.size() - off < 9 || b.at(off) != 0x49 || b.at(off + 1) != 0x3b ||
      b.at(off + 2) != 0xa7) {
    return false;
  }
  return b.at(off + 7) == 0x72 || (b.at(off + 7) == 0x0f && b.at(off + 8) == 0x82);
}

}  // namespace

bool hotspot_sp_moved(Arch arch, std::span<const std::byte> code, std::size_t pc_off,
                      uint64_t frame_bytes, bool return_address) {
  if (arch != Arch::X86_64 || pc_off >= code.size()) return true;
  const Bytes b{code};
  if (epilogue_at(b, pc_off, frame_bytes) == 0 && writes_rsp(b, pc_off)) return true;
  // An epilogue ending in [pc_off - kEpilogueReach, pc_off + 1]: the last one may be the pop at
  // pc_off itself.
  const std::size_t from = pc_off > kEpilogueReach + 8 ? pc_off - kEpilogueReach - 8 : 0;
  for (std::size_t off = from; off <= pc_off; ++off) {
    const std::size_t len = epilogue_at(b, off, frame_bytes);
    if (len == 0 || off + len > pc_off + 1 || off + len + kEpilogueReach < pc_off) continue;
    if (!return_address || reserved_stack_check(b, off + len)) return true;
  }
  return false;
}

}  // namespace ehbt::arch
