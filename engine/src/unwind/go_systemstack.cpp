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
constexpr const char* kMcall = "runtime.mcall's stack switch";

Unexpected<StopInfo> refuse(const char* what, const std::string& check) {
  return unexpected(StopInfo{StopReason::NoUnwindInfo, std::string(what) + ": " + check, 0});
}

Unexpected<StopInfo> fault(const char* what, uint64_t addr, const char* word) {
  return unexpected(StopInfo{StopReason::MemoryFault,
                             std::string(what) + ": cannot read " + word + " at " + hex(addr), 0});
}

bool read(Memory& mem, uint64_t addr, uint64_t& out) {
  return mem.read_uint(addr, 8, false, out);
}

}  // namespace

std::optional<uint16_t> go_g_register(Arch arch) {
  const SystemStackLayout* a = layout(arch);
  if (a == nullptr) return std::nullopt;
  return a->g;
}

namespace {

// What both switches share: g0 from the g register, proven to be its m's g0 with the frame on
// its stack; then m.curg, which may be nil (mcall's function detaches it).
struct G0State {
  const SystemStackLayout* a = nullptr;
  elf::GoRuntimeLayout L;
  uint64_t g0 = 0, m = 0, sp = 0, curg = 0;
};

Expected<G0State, StopInfo> read_g0(const Frame& frame, const Module& module, Memory& mem,
                                    const Limits& limits, const char* what) {
  G0State st;
  st.a = layout(frame.regs.arch());
  if (st.a == nullptr) return refuse(what, "not an architecture whose switch is known");
  const lines::GoRuntimeLayoutResult found =
      lines::go_runtime_layout(module.image, frame.regs.arch(), limits);
  if (!found.layout) return refuse(what, found.why_not);
  st.L = *found.layout;
  const elf::GoRuntimeLayout& L = st.L;
  if (!frame.regs.has(st.a->g) || !frame.regs.has(st.a->sp)) {
    return refuse(what, "the g register of the frame on g0 is not known");
  }
  st.g0 = frame.regs.raw(st.a->g);
  st.sp = frame.regs.raw(st.a->sp);
  if (st.g0 == 0) return refuse(what, "the g register of the frame on g0 is 0");
  uint64_t m_g0 = 0, lo0 = 0, hi0 = 0;
  if (!read(mem, st.g0 + L.g_m, st.m)) return fault(what, st.g0 + L.g_m, "g.m");
  if (st.m == 0 || !read(mem, st.m + L.m_g0, m_g0)) return fault(what, st.m + L.m_g0, "m.g0");
  if (m_g0 != st.g0) {
    return refuse(what, "the g register " + hex(st.g0) + " is not its m's g0 (m " + hex(st.m) +
                            ", m.g0 " + hex(m_g0) + ")");
  }
  if (!read(mem, st.g0 + L.g_stack, lo0)) return fault(what, st.g0 + L.g_stack, "g0.stack.lo");
  if (!read(mem, st.g0 + L.g_stack + 8, hi0)) {
    return fault(what, st.g0 + L.g_stack + 8, "g0.stack.hi");
  }
  if (lo0 >= hi0 || st.sp < lo0 || st.sp > hi0) {
    return refuse(what, "the frame's sp " + hex(st.sp) + " is not on g0's stack [" + hex(lo0) +
                            ", " + hex(hi0) + ")");
  }
  if (!read(mem, st.m + L.m_curg, st.curg)) return fault(what, st.m + L.m_curg, "m.curg");
  return st;
}

// curg, attached to m, and its saved state: stack bounds, sched.sp (in the stack), sched.pc,
// sched.bp.
struct Saved {
  uint64_t lo = 0, hi = 0, sp = 0, pc = 0, bp = 0;
};

Expected<Saved, StopInfo> read_curg(const G0State& st, Memory& mem, const char* what) {
  const elf::GoRuntimeLayout& L = st.L;
  Saved out;
  uint64_t curg_m = 0;
  if (st.curg == st.g0) return refuse(what, "m.curg is g0 itself");
  if (!read(mem, st.curg + L.g_m, curg_m)) return fault(what, st.curg + L.g_m, "curg.m");
  if (curg_m != st.m) {
    return refuse(what,
                  "curg " + hex(st.curg) + " belongs to m " + hex(curg_m) + ", not " + hex(st.m));
  }
  if (!read(mem, st.curg + L.g_stack, out.lo)) {
    return fault(what, st.curg + L.g_stack, "curg.stack.lo");
  }
  if (!read(mem, st.curg + L.g_stack + 8, out.hi)) {
    return fault(what, st.curg + L.g_stack + 8, "curg.stack.hi");
  }
  if (out.lo >= out.hi || out.hi - out.lo > kMaxGoStack) {
    return refuse(what,
                  "curg.stack [" + hex(out.lo) + ", " + hex(out.hi) + ") is no goroutine stack");
  }
  const uint64_t sched = st.curg + L.g_sched;
  if (!read(mem, sched + L.gobuf_sp, out.sp))
    return fault(what, sched + L.gobuf_sp, "curg.sched.sp");
  if (!read(mem, sched + L.gobuf_pc, out.pc))
    return fault(what, sched + L.gobuf_pc, "curg.sched.pc");
  if (!read(mem, sched + L.gobuf_bp, out.bp))
    return fault(what, sched + L.gobuf_bp, "curg.sched.bp");
  if (out.sp < out.lo || out.sp + st.a->frame_size > out.hi) {
    return refuse(what, "curg.sched.sp " + hex(out.sp) + " is outside the goroutine's stack [" +
                            hex(out.lo) + ", " + hex(out.hi) + ")");
  }
  return out;
}

std::string_view go_name(const Module& module, uint64_t pc, const Limits& limits) {
  const Image* image = module.image.get();
  const elf::GoPclntab* go = image != nullptr ? elf::go_pclntab(*image) : nullptr;
  if (go == nullptr) return {};
  auto func = go->find(module.to_link(pc), limits.max_search_probes);
  if (!func) return {};
  return go->name(*func).value_or(std::string_view());
}

}  // namespace

Expected<GoStackSwitch, StopInfo> go_cross_systemstack(const Frame& frame, const Module& module,
                                                       Memory& mem, const Limits& limits) {
  auto st = read_g0(frame, module, mem, limits, kWhat);
  if (!st) return unexpected(std::move(st.error()));
  if (st->curg == 0) return refuse(kWhat, "m.curg is nil (no goroutine on this thread)");
  auto saved = read_curg(*st, mem, kWhat);
  if (!saved) return unexpected(std::move(saved.error()));
  // systemstack's own marker: the goroutine's state was saved by this switch.
  if (go_name(module, saved->pc, limits) != "runtime.systemstack_switch") {
    return refuse(kWhat, "curg.sched.pc " + hex(saved->pc) +
                             " is not runtime.systemstack_switch (the goroutine was not "
                             "switched by systemstack)");
  }
  const SystemStackLayout* a = st->a;
  GoStackSwitch out;
  out.stack_lo = saved->lo;
  out.stack_hi = saved->hi;
  out.switched_sp = saved->sp;
  uint64_t ra = 0;
  if (!read(mem, saved->sp, ra)) return fault(kWhat, saved->sp, "systemstack's return address");
  arch::Recovered& rec = out.caller;
  rec.regs = RegisterSet(frame.regs.arch());
  rec.cfa = saved->sp + a->frame_size;
  rec.regs.set(a->sp, rec.cfa);
  rec.regs.set_pc(ra);
  if (a->fp_saved) {
    uint64_t fp = 0;
    if (!read(mem, saved->sp - 8, fp))
      return fault(kWhat, saved->sp - 8, "the caller's frame pointer");
    rec.regs.set(a->fp, fp);
  } else {
    rec.regs.set(a->fp, saved->bp);
  }
  // The goroutine's g is the g register of the frames there.
  rec.regs.set(a->g, st->curg);
  return out;
}

Expected<GoStackSwitch, StopInfo> go_cross_mcall(const Frame& frame, const Module& module,
                                                 Memory& mem, const Limits& limits) {
  auto st = read_g0(frame, module, mem, limits, kMcall);
  if (!st) return unexpected(std::move(st.error()));
  if (st->curg == 0) {
    // The function mcall ran detached the goroutine (park_m, gosched_m, goexit0: dropg sets
    // m.curg = nil, g.m = nil) and went on to schedule(): nothing on this thread says which
    // goroutine it was any more (the goroutine may since run elsewhere). g0's stack starts
    // here, where Go's own traceback ends it (topofstack).
    return unexpected(StopInfo{StopReason::Outermost,
                               std::string(kMcall) +
                                   ": the goroutine it switched from was detached from this "
                                   "thread (m.curg is nil); g0's stack starts here",
                               0});
  }
  auto saved = read_curg(*st, mem, kMcall);
  if (!saved) return unexpected(std::move(saved.error()));
  // mcall saved its caller's own state: pc its return address, sp the caller's sp after the
  // return (amd64: fn+0(FP); arm64, NOFRAME: RSP), bp the caller's frame pointer. The caller
  // is proven by the strategy (a call of mcall before that pc).
  GoStackSwitch out;
  out.stack_lo = saved->lo;
  out.stack_hi = saved->hi;
  out.switched_sp = saved->sp;
  arch::Recovered& rec = out.caller;
  rec.regs = RegisterSet(frame.regs.arch());
  rec.cfa = saved->sp;
  rec.regs.set(st->a->sp, rec.cfa);
  rec.regs.set_pc(saved->pc);
  rec.regs.set(st->a->fp, saved->bp);
  rec.regs.set(st->a->g, st->curg);
  return out;
}

}  // namespace ehbt::unwind
