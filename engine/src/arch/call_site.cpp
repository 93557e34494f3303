// SPDX-License-Identifier: Apache-2.0
#include "arch/call_site.hpp"

#include <array>
#include <cstddef>

namespace ehbt::arch {
namespace {

// x86-64 and i386: `call rel32` is e8 + 4 bytes; `call r/m` is ff /2 (x86-64: with an
// optional REX prefix) and a ModRM (+ SIB + disp) of 2 to 7 bytes in all. Each length is
// tried: the bytes must decode to exactly that length ending at the return address. The
// ModRM forms are the same in 32-bit code, where mod 0 rm 5 is an absolute disp32 instead of
// rip-relative; a direct call's target wraps at 4 GiB there (`wide` false).
std::optional<CallSite> x86_call(Memory& mem, uint64_t ra, bool wide) {
  if (ra < 8) return std::nullopt;
  std::array<std::byte, 8> raw;
  if (!mem.read_exact(ra - raw.size(), raw)) return std::nullopt;
  auto b = [&](std::size_t back) { return static_cast<uint8_t>(raw[raw.size() - back]); };
  if (b(5) == 0xe8) {
    const uint32_t rel = static_cast<uint32_t>(b(4)) | static_cast<uint32_t>(b(3)) << 8 |
                         static_cast<uint32_t>(b(2)) << 16 | static_cast<uint32_t>(b(1)) << 24;
    const int64_t disp = static_cast<int32_t>(rel);
    const uint64_t target = ra + static_cast<uint64_t>(disp);
    return CallSite{ra - 5, wide ? target : target & UINT32_MAX};
  }
  // ff /2: ModRM reg field 2. Length of ModRM + SIB + displacement from mod and rm.
  for (std::size_t len = 2; len <= 7; ++len) {
    if (b(len) != 0xff) continue;
    const uint8_t modrm = b(len - 1);
    if (((modrm >> 3) & 7) != 2) continue;
    const uint8_t mod = modrm >> 6, rm = modrm & 7;
    std::size_t want = 2;             // opcode + ModRM
    if (mod != 3 && rm == 4) ++want;  // SIB
    if (mod == 1) want += 1;
    if (mod == 2) want += 4;
    if (mod == 0 && rm == 5) want += 4;  // rip-relative (i386: absolute)
    if (mod == 0 && rm == 4 && len >= 3 && (b(len - 2) & 7) == 5) want += 4;  // SIB, no base
    if (want == len) return CallSite{ra - len, std::nullopt};
  }
  return std::nullopt;
}

// aarch64: fixed 4-byte words, little-endian. bl imm26: 100101 imm26. blr Xn: d63f0000 | n<<5;
// blraa/blrab/blraaz/blrabz: d63f08xx/d73f08xx families (mask the register fields).
std::optional<CallSite> aarch64_call(Memory& mem, uint64_t ra) {
  if (ra < 4 || ra % 4 != 0) return std::nullopt;
  uint64_t word = 0;
  if (!mem.read_uint(ra - 4, 4, false, word)) return std::nullopt;
  const uint32_t insn = static_cast<uint32_t>(word);
  if ((insn & 0xfc000000u) == 0x94000000u) {
    int64_t imm = insn & 0x03ffffffu;
    if (imm & 0x02000000) imm -= 0x04000000;
    return CallSite{ra - 4, ra - 4 + static_cast<uint64_t>(imm * 4)};
  }
  if ((insn & 0xfffffc1fu) == 0xd63f0000u) return CallSite{ra - 4, std::nullopt};
  if ((insn & 0xfefff800u) == 0xd63f0800u) return CallSite{ra - 4, std::nullopt};
  return std::nullopt;
}

// s390x: big-endian halfwords. brasl r,ri (c0 r5 + imm32, 6 bytes, offset in halfwords);
// bras r,ri (a7 r5 + imm16, 4 bytes); basr r1,r2 (0d, 2 bytes; r2 = 0 is no branch);
// bas r,d(x,b) (4d, 4 bytes).
std::optional<CallSite> s390x_call(Memory& mem, uint64_t ra) {
  if (ra < 6 || ra % 2 != 0) return std::nullopt;
  std::array<std::byte, 6> raw;
  if (!mem.read_exact(ra - raw.size(), raw)) return std::nullopt;
  auto b = [&](std::size_t back) { return static_cast<uint8_t>(raw[raw.size() - back]); };
  if (b(6) == 0xc0 && (b(5) & 0x0f) == 0x05) {
    const uint32_t rel = static_cast<uint32_t>(b(4)) << 24 | static_cast<uint32_t>(b(3)) << 16 |
                         static_cast<uint32_t>(b(2)) << 8 | b(1);
    const int64_t disp = static_cast<int64_t>(static_cast<int32_t>(rel)) * 2;
    return CallSite{ra - 6, ra - 6 + static_cast<uint64_t>(disp)};
  }
  if (b(4) == 0xa7 && (b(3) & 0x0f) == 0x05) {
    const int64_t disp = static_cast<int16_t>(static_cast<uint16_t>(b(2) << 8 | b(1))) * 2;
    return CallSite{ra - 4, ra - 4 + static_cast<uint64_t>(disp)};
  }
  if (b(2) == 0x0d && (b(1) & 0x0f) != 0) return CallSite{ra - 2, std::nullopt};
  if (b(4) == 0x4d) return CallSite{ra - 4, std::nullopt};
  return std::nullopt;
}

}  // namespace

std::optional<CallSite> call_before(Arch arch, Memory& mem, uint64_t return_address) {
  switch (arch) {
    case Arch::X86_64:
      return x86_call(mem, return_address, true);
    case Arch::I386:
      return x86_call(mem, return_address, false);
    case Arch::AArch64:
      return aarch64_call(mem, return_address);
    case Arch::S390x:
      return s390x_call(mem, return_address);
  }
  return std::nullopt;
}

std::optional<uint64_t> call_slot(Arch arch, Memory& code, const CallSite& call) {
  if (arch != Arch::X86_64) return std::nullopt;
  std::array<std::byte, 6> raw;
  if (!code.read_exact(call.at, raw)) return std::nullopt;
  auto b = [&](std::size_t i) { return static_cast<uint8_t>(raw[i]); };
  if (b(0) != 0xff || b(1) != 0x15) return std::nullopt;  // ff /2, mod 0, rm 5
  const uint32_t rel = static_cast<uint32_t>(b(2)) | static_cast<uint32_t>(b(3)) << 8 |
                       static_cast<uint32_t>(b(4)) << 16 | static_cast<uint32_t>(b(5)) << 24;
  return call.at + raw.size() +
         static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(rel)));
}

std::optional<uint64_t> direct_jump(Arch arch, std::span<const std::byte> code, std::size_t off,
                                    uint64_t addr) {
  auto b = [&](std::size_t i) { return static_cast<uint8_t>(code[off + i]); };
  const std::size_t left = off < code.size() ? code.size() - off : 0;
  switch (arch) {
    case Arch::X86_64:
    case Arch::I386: {
      const bool wide = arch == Arch::X86_64;
      uint64_t to = 0;
      if (left >= 5 && b(0) == 0xe9) {
        const uint32_t rel = static_cast<uint32_t>(b(1)) | static_cast<uint32_t>(b(2)) << 8 |
                             static_cast<uint32_t>(b(3)) << 16 | static_cast<uint32_t>(b(4)) << 24;
        to = addr + 5 + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(rel)));
      } else if (left >= 2 && b(0) == 0xeb) {
        to = addr + 2 + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(b(1))));
      } else {
        return std::nullopt;
      }
      return wide ? to : to & UINT32_MAX;
    }
    case Arch::AArch64: {
      if (left < 4) return std::nullopt;
      const uint32_t insn = static_cast<uint32_t>(b(0)) | static_cast<uint32_t>(b(1)) << 8 |
                            static_cast<uint32_t>(b(2)) << 16 | static_cast<uint32_t>(b(3)) << 24;
      if ((insn & 0xfc000000u) != 0x14000000u) return std::nullopt;  // b imm26
      int64_t imm = insn & 0x03ffffffu;
      if (imm & 0x02000000) imm -= 0x04000000;
      return addr + static_cast<uint64_t>(imm * 4);
    }
    case Arch::S390x: {
      if (left >= 6 && b(0) == 0xc0 && b(1) == 0xf4) {  // brcl 15,ri
        const uint32_t rel = static_cast<uint32_t>(b(2)) << 24 | static_cast<uint32_t>(b(3)) << 16 |
                             static_cast<uint32_t>(b(4)) << 8 | b(5);
        return addr + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(rel)) * 2);
      }
      if (left >= 4 && b(0) == 0xa7 && b(1) == 0xf4) {  // j ri (brc 15)
        const int64_t disp = static_cast<int16_t>(static_cast<uint16_t>(b(2) << 8 | b(3)));
        return addr + static_cast<uint64_t>(disp * 2);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool register_jump(Arch arch, std::span<const std::byte> code, std::size_t off) {
  const std::size_t left = off < code.size() ? code.size() - off : 0;
  auto b = [&](std::size_t i) { return static_cast<uint8_t>(code[off + i]); };
  switch (arch) {
    case Arch::X86_64:
    case Arch::I386:
      return left >= 2 && b(0) == 0xff && (b(1) & 0xf8) == 0xe0;  // ff /4, mod 3
    case Arch::AArch64:
      return left >= 4 && (b(0) & 0x1f) == 0 && (b(1) & 0xfc) == 0 && b(2) == 0x1f &&
             b(3) == 0xd6;  // br xN: d61f0000 | n << 5
    case Arch::S390x:
      // bcr 15,rN (`br %rN`); not rN = 0 (no branch) and not r14, the return address
      // register: `br %r14` is the ordinary return, in almost every function, and taken as a
      // jump that may go anywhere it made every tail-jump search succeed.
      return left >= 2 && b(0) == 0x07 && (b(1) & 0xf0) == 0xf0 && (b(1) & 0x0f) != 0 &&
             (b(1) & 0x0f) != 14;
  }
  return false;
}

bool indirect_jump(Arch arch, std::span<const std::byte> code, std::size_t off) {
  if (arch == Arch::X86_64 || arch == Arch::I386) {
    const std::size_t left = off < code.size() ? code.size() - off : 0;
    return left >= 2 && static_cast<uint8_t>(code[off]) == 0xff &&
           ((static_cast<uint8_t>(code[off + 1]) >> 3) & 7) == 4;  // ff /4
  }
  return register_jump(arch, code, off);  // no memory-indirect jumps elsewhere
}

unsigned jump_alignment(Arch arch) {
  switch (arch) {
    case Arch::AArch64:
      return 4;
    case Arch::S390x:
      return 2;
    default:
      return 1;
  }
}

ScanLayout scan_layout(Arch arch, uint64_t slot) {
  switch (arch) {
    case Arch::X86_64:
      // The call pushed the return address: the caller's rsp is just above it.
      return {slot + 8, slot + 8};
    case Arch::AArch64:
      // A saved x30 lies in a frame record {x29, x30} near the top of the callee's frame;
      // the caller's sp is at least above it (Breakpad makes the same approximation).
      return {slot + 8, slot + 8};
    case Arch::S390x:
      // The callee saved r14 in the caller's register save area: caller sp + 112; the CFA
      // is the caller's sp + 160.
      return {slot - 112, slot - 112 + 160};
    case Arch::I386:
      return {slot + 4, slot + 4};
  }
  return {slot + 8, slot + 8};
}

}  // namespace ehbt::arch
