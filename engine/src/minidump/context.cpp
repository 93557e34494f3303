// SPDX-License-Identifier: Apache-2.0
// Thread contexts and the CPU they belong to. Only what a walk starts from is read: the
// general registers, the stack pointer and the pc (floating-point state is not unwound).
#include <array>

#include "core/byte_order.hpp"
#include "minidump/format.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {
namespace {

struct Slot {
  uint16_t reg;     // DWARF number
  uint16_t offset;  // in the context
};

// CONTEXT_AMD64: P1Home..P6Home, ContextFlags (0x30), MxCsr, segments, EFlags, Dr0-3/6/7,
// then Rax, Rcx, Rdx, Rbx, Rsp, Rbp, Rsi, Rdi, R8..R15 from 0x78, Rip at 0xf8.
constexpr std::array<Slot, 16> kAmd64 = {{{0, 0x78},
                                          {2, 0x80},
                                          {1, 0x88},
                                          {3, 0x90},
                                          {7, 0x98},
                                          {6, 0xa0},
                                          {4, 0xa8},
                                          {5, 0xb0},
                                          {8, 0xb8},
                                          {9, 0xc0},
                                          {10, 0xc8},
                                          {11, 0xd0},
                                          {12, 0xd8},
                                          {13, 0xe0},
                                          {14, 0xe8},
                                          {15, 0xf0}}};
constexpr uint16_t kAmd64Rip = 0xf8;
constexpr uint16_t kAmd64Flags = 0x30;

// CONTEXT_X86: ContextFlags, Dr0-3/6/7, FloatSave (112 bytes), Gs, Fs, Es, Ds, then Edi, Esi,
// Ebx, Edx, Ecx, Eax, Ebp from 0x9c, Eip 0xb8, SegCs, EFlags, Esp 0xc4, SegSs.
constexpr std::array<Slot, 8> kX86 = {
    {{7, 0x9c}, {6, 0xa0}, {3, 0xa4}, {2, 0xa8}, {1, 0xac}, {0, 0xb0}, {5, 0xb4}, {4, 0xc4}}};
constexpr uint16_t kX86Eip = 0xb8;
constexpr uint16_t kX86End = 0xc8;

// ARM64: Windows' CONTEXT_ARM64 (Crashpad, current Breakpad) starts with ContextFlags and
// Cpsr (4 bytes each), Breakpad's older one and LLDB's with an 8-byte context_flags; in all
// of them x0..x30 follow at 8, sp at 0x100 and pc at 0x108.
constexpr uint16_t kArm64X0 = 8;
constexpr uint16_t kArm64Sp = 0x100;
constexpr uint16_t kArm64Pc = 0x108;

// ContextFlags' CPU bits.
constexpr uint32_t kFlagsX86 = 0x00010000;
constexpr uint32_t kFlagsAmd64 = 0x00100000;
constexpr uint32_t kFlagsArm64 = 0x00400000;
constexpr uint32_t kFlagsArm64Old = 0x80000000;  // Breakpad's and LLDB's
constexpr uint32_t kCpuMask = 0xffff0000;

template <std::size_t N>
std::optional<RegisterSet> decode(Arch arch, std::span<const std::byte> ctx,
                                  const std::array<Slot, N>& slots, uint16_t pc, unsigned word,
                                  uint16_t end) {
  if (ctx.size() < end) return std::nullopt;
  core::ByteView v(ctx, false);
  RegisterSet regs(arch);
  for (const Slot& s : slots) regs.set(s.reg, v.u(s.offset, word));
  regs.set_pc(v.u(pc, word));
  if (!v.ok()) return std::nullopt;
  return regs;
}

}  // namespace

Expected<Arch, std::string> system_info_arch(std::span<const std::byte> stream) {
  uint64_t cpu = 0;
  if (!core::load_uint(stream, 0, 2, false, cpu)) {
    return unexpected(std::string("the minidump's system info is cut short"));
  }
  switch (cpu) {
    case kCpuAmd64:
      return Arch::X86_64;
    case kCpuArm64:
    case kCpuArm64Breakpad:
      return Arch::AArch64;
    case kCpuX86:
      return Arch::I386;
    case kCpuArm:
      return unexpected(std::string("the minidump is of a 32-bit ARM process (not supported)"));
    default:
      return unexpected("the minidump's CPU " + std::to_string(cpu) + " is not supported");
  }
}

std::optional<Arch> context_arch(std::span<const std::byte> context) {
  uint64_t flags = 0;
  // CONTEXT_AMD64 keeps its flags at 0x30; the others start with them.
  if (core::load_uint(context, kAmd64Flags, 4, false, flags) && (flags & kCpuMask) == kFlagsAmd64) {
    return Arch::X86_64;
  }
  if (!core::load_uint(context, 0, 4, false, flags)) return std::nullopt;
  if ((flags & kCpuMask) == kFlagsX86) return Arch::I386;
  if ((flags & kCpuMask) == kFlagsArm64 || (flags & kFlagsArm64Old) != 0) return Arch::AArch64;
  return std::nullopt;
}

std::optional<RegisterSet> decode_context(Arch arch, std::span<const std::byte> context) {
  switch (arch) {
    case Arch::X86_64:
      return decode(arch, context, kAmd64, kAmd64Rip, 8, kAmd64Rip + 8);
    case Arch::I386:
      return decode(arch, context, kX86, kX86Eip, 4, kX86End);
    case Arch::AArch64: {
      if (context.size() < kArm64Pc + 8) return std::nullopt;
      core::ByteView v(context, false);
      RegisterSet regs(arch);
      for (uint16_t r = 0; r <= 30; ++r) regs.set(r, v.u64(kArm64X0 + 8 * r));
      regs.set(31, v.u64(kArm64Sp));
      regs.set_pc(v.u64(kArm64Pc));
      if (!v.ok()) return std::nullopt;
      return regs;
    }
    case Arch::S390x:
      return std::nullopt;  // no minidump writer records s390x
  }
  return std::nullopt;
}

}  // namespace ehbt::minidump
