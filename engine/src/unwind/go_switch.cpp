// SPDX-License-Identifier: Apache-2.0
// runtime.asmcgocall's saved state, per architecture (Go 1.19's asm_amd64.s, asm_arm64.s,
// asm_s390x.s; the layout has been the same since Go 1.5's stack copying made the depth necessary):
//
// amd64: after the switch, sp is lowered by 64 and aligned to 16; the old g is stored at
//   48(sp), the depth at 40(sp), then `CALL AX` calls C. The C function's CFA is that sp.
//   asmcgocall has no frame of its own on the goroutine's stack (frame size 0): its return
//   address is at the goroutine sp, cgocall's sp is 8 above, and rbp is cgocall's (the C code
//   preserves it; asmcgocall does not touch it).
// arm64: the prologue stores x30 at 0(sp) and x29 at -8(sp) of a 16-byte frame, then the
//   goroutine sp is taken (`MOVD RSP, R2`); after the switch sp is lowered by 16, the old g
//   stored at 0(sp), the depth at 8(sp), then `BL (R1)`. cgocall's pc is at the goroutine sp,
//   its x29 at 8 below it, its sp 16 above.
// Both: `nosave` (already on a system stack) stores 0 for g and the original sp itself for the
//   depth. g.stack {lo, hi} is the first field of runtime.g (runtime2.go).
// s390x (asm_s390x.s, big-endian): asmcgocall is declared $0 but calls, so Go's assembler
//   gives it the 8-byte frame that holds r14 at 0(r15) (cmd/internal/obj/s390x); the goroutine
//   sp is taken after that prologue (`MOVD R15, R2`). On g0 it lowers r15 by 176 (160 bytes of
//   the C callee's register save area and two words), aligns it to 8, stores the old g at
//   168(r15) and the depth at 160(r15), then `BL R3`. The slots are at the r15 of that call,
//   which is the C callee's CFA less 160 (the s390x CFA convention). cgocall's pc is at the
//   goroutine sp, its sp 8 above; Go keeps no frame pointer there. There is no nosave path:
//   already on g0 or gsignal, the g stored is that one and the depth is from its stack.
#include "unwind/go_switch.hpp"

#include <optional>
#include <string_view>

#include "elf/go_image.hpp"

namespace ehbt::unwind {
namespace {

struct CgoSwitchLayout {
  Arch arch;
  uint16_t sp;
  std::optional<uint16_t> fp;  // the frame pointer register Go keeps (s390x: none)
  uint64_t g_slot;             // offset of the saved g from asmcgocall's sp at its call into C
  uint64_t depth_slot;         // offset of the saved depth
  uint64_t frame_size;  // asmcgocall's frame on the goroutine stack (cgocall's sp - goroutine sp)
  bool fp_saved;        // the caller's frame pointer is at goroutine sp - 8 (else unchanged)
  bool big_endian;      // byte order of the saved words
  bool nosave;          // a saved g of 0 means `nosave` (s390x has no such path: 0 is no g)
};

constexpr CgoSwitchLayout kAmd64{Arch::X86_64, 7, 6, 48, 40, 8, false, false, true};
constexpr CgoSwitchLayout kArm64{Arch::AArch64, 31, 29, 0, 8, 16, true, false, true};
constexpr CgoSwitchLayout kS390x{Arch::S390x, 15, std::nullopt, 168, 160, 8, false, true, false};

// Go's goroutine stacks are at most 1 GiB (runtime.maxstacksize on 64-bit targets): a larger
// depth is no depth the runtime stored.
constexpr uint64_t kMaxGoStack = uint64_t{1} << 30;

const CgoSwitchLayout* layout(Arch arch) {
  if (arch == Arch::X86_64) return &kAmd64;
  if (arch == Arch::AArch64) return &kArm64;
  if (arch == Arch::S390x) return &kS390x;
  return nullptr;
}

arch::RecoverFailure failure(arch::RecoverError kind, uint64_t addr, const char* why) {
  return arch::RecoverFailure{kind, addr, kind == arch::RecoverError::MemoryFault ? 8u : 0u, why};
}

}  // namespace

GoSwitch go_switch_at(const Frame& frame, const Module& module, const Limits& limits) {
  // Only a return address: the frame was left by the call on the other stack. (Frame 0 or a
  // frame a signal interrupted inside the switch may be before or after it.)
  if (frame.exact_pc || frame.planted || layout(frame.regs.arch()) == nullptr) {
    return GoSwitch::None;
  }
  const Image* image = module.image.get();
  const elf::GoPclntab* go = image != nullptr ? elf::go_pclntab(*image) : nullptr;
  if (go == nullptr) return GoSwitch::None;
  auto func = go->find(module.to_link(frame.lookup_pc()), limits.max_search_probes);
  if (!func) return GoSwitch::None;
  const std::string_view name = go->name(*func).value_or(std::string_view());
  if (name == "runtime.asmcgocall") return GoSwitch::CgoCall;
  if (name == "runtime.systemstack") return GoSwitch::SystemStack;
  if (name == "runtime.mcall") return GoSwitch::MCall;
  return GoSwitch::None;
}

Expected<GoStackSwitch, arch::RecoverFailure> go_cross_cgo_switch(const Frame& frame, Memory& mem) {
  const CgoSwitchLayout* a = layout(frame.regs.arch());
  if (a == nullptr) {
    return unexpected(failure(arch::RecoverError::NotApplicable, 0, "not a cgo architecture"));
  }
  if (!frame.regs.has(a->sp)) {
    return unexpected(failure(arch::RecoverError::NotApplicable, 0, "sp unknown"));
  }
  const uint64_t sp = frame.regs.raw(a->sp);  // where the slots are (the sp of the call into C)
  uint64_t g = 0, depth = 0;
  if (!mem.read_uint(sp + a->g_slot, 8, a->big_endian, g)) {
    return unexpected(failure(arch::RecoverError::MemoryFault, sp + a->g_slot, ""));
  }
  if (!mem.read_uint(sp + a->depth_slot, 8, a->big_endian, depth)) {
    return unexpected(failure(arch::RecoverError::MemoryFault, sp + a->depth_slot, ""));
  }
  GoStackSwitch out;
  if (g == 0 && !a->nosave) {
    return unexpected(failure(arch::RecoverError::NotApplicable, sp + a->g_slot,
                              "asmcgocall saved no g (this architecture always saves one)"));
  }
  if (g == 0) {
    // nosave: called on a system stack already; the saved word is the original sp, on the
    // stack the C frames are on.
    out.switched_sp = depth;
  } else {
    uint64_t lo = 0, hi = 0;
    if (!mem.read_uint(g, 8, a->big_endian, lo)) {
      return unexpected(failure(arch::RecoverError::MemoryFault, g, ""));
    }
    if (!mem.read_uint(g + 8, 8, a->big_endian, hi)) {
      return unexpected(failure(arch::RecoverError::MemoryFault, g + 8, ""));
    }
    if (lo >= hi || hi - lo > kMaxGoStack || depth == 0 || depth > hi - lo) {
      return unexpected(failure(arch::RecoverError::NotApplicable, sp,
                                "the g and depth asmcgocall saved do not give a sp inside "
                                "the goroutine's stack"));
    }
    out.stack_lo = lo;
    out.stack_hi = hi;
    out.switched_sp = hi - depth;
  }
  const uint64_t gsp = out.switched_sp;
  uint64_t ra = 0;
  if (!mem.read_uint(gsp, 8, a->big_endian, ra)) {
    return unexpected(failure(arch::RecoverError::MemoryFault, gsp, ""));
  }
  arch::Recovered& rec = out.caller;
  rec.regs = RegisterSet(frame.regs.arch());
  rec.cfa = gsp + a->frame_size;
  rec.regs.set(a->sp, rec.cfa);
  rec.regs.set_pc(ra);
  if (a->fp && a->fp_saved) {
    uint64_t fp = 0;
    if (!mem.read_uint(gsp - 8, 8, a->big_endian, fp)) {
      return unexpected(failure(arch::RecoverError::MemoryFault, gsp - 8, ""));
    }
    rec.regs.set(*a->fp, fp);
  } else if (a->fp && frame.regs.has(*a->fp)) {
    rec.regs.set(*a->fp, frame.regs.raw(*a->fp));
  }
  return out;
}

}  // namespace ehbt::unwind
