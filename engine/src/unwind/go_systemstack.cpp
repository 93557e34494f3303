// SPDX-License-Identifier: Apache-2.0
// runtime.systemstack's saved state (see go_systemstack.hpp), per architecture, from Go 1.19's
// asm_amd64.s and asm_arm64.s (systemstack and gosave_systemstack_switch):
//
// amd64: `TEXT runtime·systemstack(SB), NOSPLIT, $0-8`: no frame; gosave_systemstack_switch
//   stores its caller's 8(SP), i.e. systemstack's sp, where the call into systemstack left its
//   return address, and BP, which systemstack does not touch: the caller's frame pointer.
//   Then `MOVQ DX, R14` (g0 into the g register) and `CALL DI`. Caller: pc at sched.sp, sp
//   sched.sp + 8, rbp sched.bp.
// arm64: the same function with a 16-byte frame (x30 at 0(sp), x29 at -8(sp)); the NOFRAME
//   gosave_systemstack_switch stores RSP (systemstack's sp) and R29 (systemstack's own frame
//   pointer, sp - 8); then `MOVD R5, g` (g is x28) and `BL (R3)`. Caller: pc at sched.sp, x29
//   at sched.sp - 8, sp sched.sp + 16.
// Both: gobuf.pc = runtime.systemstack_switch (+8 on arm64, past its prologue), a function
//   that only serves as this marker: a goroutine whose sched.pc is elsewhere was switched by
//   something else (mcall, gopark, a morestack) and its sched says nothing of this frame.
#include "unwind/go_systemstack.hpp"

#include <string>
#include <string_view>

#include "elf/go_image.hpp"
#include "lines/go_runtime_layout.hpp"
#include "unwind/describe.hpp"

namespace ehbt::unwind {
namespace {

struct SystemStackLayout {
  uint16_t g;  // the register Go keeps the current g in (DWARF number)
  uint16_t sp;
  uint16_t fp;
  uint64_t frame_size;  // systemstack's frame on the goroutine's stack
  bool fp_saved;        // the caller's frame pointer is at sched.sp - 8 (else sched.bp)
};

constexpr SystemStackLayout kAmd64{14, 7, 6, 8, false};
constexpr SystemStackLayout kArm64{28, 31, 29, 16, true};

const SystemStackLayout* layout(Arch arch) {
  if (arch == Arch::X86_64) return &kAmd64;
  if (arch == Arch::AArch64) return &kArm64;
  return nullptr;
}

// Go's goroutine stacks are at most 1 GiB (runtime.maxstacksize on 64-bit targets); a g0
// stack is the thread's, of the same order.
constexpr uint64_t kMaxGoStack = uint64_t{1} << 30;

constexpr const char* kWhat = "runtime.systemstack's stack switch";

Unexpected<StopInfo> refuse(const std::string& check) {
  return unexpected(StopInfo{StopReason::NoUnwindInfo, std::string(kWhat) + ": " + check, 0});
}

Unexpected<StopInfo> fault(uint64_t addr, const char* what) {
  return unexpected(StopInfo{StopReason::MemoryFault,
                             std::string(kWhat) + ": cannot read " + what + " at " + hex(addr), 0});
}

}  // namespace

std::optional<uint16_t> go_g_register(Arch arch) {
  const SystemStackLayout* a = layout(arch);
  if (a == nullptr) return std::nullopt;
  return a->g;
}

Expected<GoStackSwitch, StopInfo> go_cross_systemstack(const Frame& frame, const Module& module,
                                                       Memory& mem, const Limits& limits) {
  const SystemStackLayout* a = layout(frame.regs.arch());
  if (a == nullptr) return refuse("not an architecture whose switch is known");
  const lines::GoRuntimeLayoutResult found =
      lines::go_runtime_layout(module.image, frame.regs.arch(), limits);
  if (!found.layout) return refuse(found.why_not);
  const elf::GoRuntimeLayout& L = *found.layout;
  if (!frame.regs.has(a->g) || !frame.regs.has(a->sp)) {
    return refuse("the g register of the frame on g0 is not known");
  }
  const uint64_t g0 = frame.regs.raw(a->g);
  const uint64_t sp = frame.regs.raw(a->sp);
  auto read = [&mem](uint64_t addr, uint64_t& out) { return mem.read_uint(addr, 8, false, out); };

  // g must be its thread's g0: g.m.g0 == g, and the frame on g0's stack.
  uint64_t m = 0, m_g0 = 0, lo0 = 0, hi0 = 0;
  if (g0 == 0 || !read(g0 + L.g_m, m)) return fault(g0 + L.g_m, "g.m");
  if (m == 0 || !read(m + L.m_g0, m_g0)) return fault(m + L.m_g0, "m.g0");
  if (m_g0 != g0) {
    return refuse("the g register " + hex(g0) + " is not its m's g0 (m " + hex(m) + ", m.g0 " +
                  hex(m_g0) + ")");
  }
  if (!read(g0 + L.g_stack, lo0)) return fault(g0 + L.g_stack, "g0.stack.lo");
  if (!read(g0 + L.g_stack + 8, hi0)) return fault(g0 + L.g_stack + 8, "g0.stack.hi");
  if (lo0 >= hi0 || sp < lo0 || sp > hi0) {
    return refuse("the frame's sp " + hex(sp) + " is not on g0's stack [" + hex(lo0) + ", " +
                  hex(hi0) + ")");
  }
  // The goroutine it switched from: m.curg, which must be m's.
  uint64_t curg = 0, curg_m = 0;
  if (!read(m + L.m_curg, curg)) return fault(m + L.m_curg, "m.curg");
  if (curg == 0) return refuse("m.curg is nil (no goroutine on this thread)");
  if (curg == g0) return refuse("m.curg is g0 itself");
  if (!read(curg + L.g_m, curg_m)) return fault(curg + L.g_m, "curg.m");
  if (curg_m != m) {
    return refuse("curg " + hex(curg) + " belongs to m " + hex(curg_m) + ", not " + hex(m));
  }
  uint64_t lo = 0, hi = 0, ssp = 0, spc = 0, sbp = 0;
  if (!read(curg + L.g_stack, lo)) return fault(curg + L.g_stack, "curg.stack.lo");
  if (!read(curg + L.g_stack + 8, hi)) return fault(curg + L.g_stack + 8, "curg.stack.hi");
  if (lo >= hi || hi - lo > kMaxGoStack) {
    return refuse("curg.stack [" + hex(lo) + ", " + hex(hi) + ") is no goroutine stack");
  }
  const uint64_t sched = curg + L.g_sched;
  if (!read(sched + L.gobuf_sp, ssp)) return fault(sched + L.gobuf_sp, "curg.sched.sp");
  if (!read(sched + L.gobuf_pc, spc)) return fault(sched + L.gobuf_pc, "curg.sched.pc");
  // systemstack's own marker: the goroutine's state was saved by this switch.
  const Image* image = module.image.get();
  const elf::GoPclntab* go = image != nullptr ? elf::go_pclntab(*image) : nullptr;
  std::string_view marker;
  if (go != nullptr) {
    if (auto func = go->find(module.to_link(spc), limits.max_search_probes)) {
      marker = go->name(*func).value_or(std::string_view());
    }
  }
  if (marker != "runtime.systemstack_switch") {
    return refuse("curg.sched.pc " + hex(spc) +
                  " is not runtime.systemstack_switch (the goroutine was not switched by "
                  "systemstack)");
  }
  if (ssp < lo || ssp + a->frame_size > hi) {
    return refuse("curg.sched.sp " + hex(ssp) + " is outside the goroutine's stack [" + hex(lo) +
                  ", " + hex(hi) + ")");
  }
  GoStackSwitch out;
  out.stack_lo = lo;
  out.stack_hi = hi;
  out.switched_sp = ssp;
  uint64_t ra = 0;
  if (!read(ssp, ra)) return fault(ssp, "systemstack's return address");
  arch::Recovered& rec = out.caller;
  rec.regs = RegisterSet(frame.regs.arch());
  rec.cfa = ssp + a->frame_size;
  rec.regs.set(a->sp, rec.cfa);
  rec.regs.set_pc(ra);
  if (a->fp_saved) {
    uint64_t fp = 0;
    if (!read(ssp - 8, fp)) return fault(ssp - 8, "the caller's frame pointer");
    rec.regs.set(a->fp, fp);
  } else {
    if (!read(sched + L.gobuf_bp, sbp)) return fault(sched + L.gobuf_bp, "curg.sched.bp");
    rec.regs.set(a->fp, sbp);
  }
  // The goroutine's g is the g register of the frames there.
  rec.regs.set(a->g, curg);
  return out;
}

}  // namespace ehbt::unwind
