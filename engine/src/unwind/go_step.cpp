// SPDX-License-Identifier: Apache-2.0
// Go's frames, as its own traceback (runtime/traceback.go) reads them. The pcsp value at a pc is
// how far sp is below its value at function entry.
//
// amd64 (cmd/internal/obj/x86 prologue): the call pushed the return address, the function then
// lowers sp by its frame size; a function with a frame saves the caller's rbp just below the
// return address and points rbp at that slot. So the return address is at sp + delta and the
// caller's sp (the CFA) is sp + delta + 8. rbp is the saved one only where it points at the slot
// (the frame is set up and not yet torn down); elsewhere the function has not touched it.
//
// arm64 (cmd/internal/obj/arm64 prologue): the call leaves the return address in x30; a function
// with a frame stores x30 at 0(sp) of its new frame (in the same instruction that lowers sp, so
// the pcsp table changes with it), stores the caller's x29 just below, at -8(sp), and sets x29 to
// sp - 8. Where delta is 0 (a frameless function, or before the prologue) the return address is
// still in x30. The caller's sp (Go's fp, our CFA) is sp + delta. Go's signal handler makes a
// faulting function look like it called runtime.sigpanic: it pushes x30 on a 16-byte slot below
// the faulting sp, so the caller of sigpanic has sp 16 above sigpanic's CFA, and, where that
// function had no frame, its return address in that slot (traceback.go: `waspanic`).
//
// s390x (cmd/internal/obj/s390x): the same with r14 as the link register and r15 as sp, no
// frame pointer, and an 8-byte sigpanic slot.
#include "unwind/go_step.hpp"

#include <string_view>

#include "elf/go_image.hpp"

namespace ehbt::unwind {
namespace {

// The module's Go function table, or null (no file, or no table in it).
const elf::GoPclntab* go_table(const Module& module) {
  const Image* image = module.image.get();
  return image != nullptr ? elf::go_pclntab(*image) : nullptr;
}

arch::RecoverFailure not_applicable(const char* why) {
  return arch::RecoverFailure{arch::RecoverError::NotApplicable, 0, 0, why};
}

arch::RecoverFailure fault(uint64_t addr) {
  return arch::RecoverFailure{arch::RecoverError::MemoryFault, addr, 8, ""};
}

// The functions Go's own traceback ends at (runtime.topofstack): a goroutine's first frame
// (goexit, which the scheduler makes its entry function return to), a thread's (mstart,
// rt0_go), and the stack switches whose caller is on another stack (mcall, morestack).
bool top_of_stack(std::string_view name) {
  for (std::string_view top : {"runtime.goexit", "runtime.mstart", "runtime.rt0_go",
                               "runtime.mcall", "runtime.morestack"}) {
    if (name == top) return true;
  }
  return false;
}

// Go's signal handler entry (assembly, TOPFRAME: its .debug_frame leaves the return address
// undefined, though it returns to the sigreturn trampoline like any handler).
bool signal_entry(std::string_view name) {
  return name == "runtime.sigtramp" || name == "runtime.cgoSigtramp";
}

bool read_u64le(Memory& mem, uint64_t addr, uint64_t& out) {
  return mem.read_uint(addr, 8, false, out);
}

// One Go function and the frame state at the frame's pc.
struct GoFrame {
  std::string_view name;
  std::optional<int64_t> delta;
};

Expected<GoFrame, arch::RecoverFailure> locate(const Frame& frame, const Module& module,
                                               const Limits& limits) {
  const elf::GoPclntab* go = go_table(module);
  if (go == nullptr) return unexpected(not_applicable("no Go function table"));
  const uint64_t pc = module.to_link(frame.lookup_pc());
  auto func = go->find(pc, limits.max_search_probes);
  if (!func) return unexpected(not_applicable("pc in no Go function"));
  GoFrame out;
  out.name = go->name(*func).value_or(std::string_view());
  out.delta = go->sp_delta(*func, pc, limits.max_go_pcvalue_steps);
  return out;
}

}  // namespace

std::optional<uint64_t> go_function_start(const Frame& frame, const Module& module,
                                          const Limits& limits) {
  const elf::GoPclntab* go = go_table(module);
  if (go == nullptr) return std::nullopt;
  auto func = go->find(module.to_link(frame.lookup_pc()), limits.max_search_probes);
  if (!func) return std::nullopt;
  return func->entry + module.bias;
}

std::optional<uint64_t> go_function_size_at(const ModuleSet& modules, uint64_t addr,
                                            const Limits& limits) {
  const Module* module = modules.find(addr);
  const elf::GoPclntab* go = module != nullptr ? go_table(*module) : nullptr;
  if (go == nullptr) return std::nullopt;
  const uint64_t link = module->to_link(addr);
  auto func = go->find(link, limits.max_search_probes);
  if (!func || func->entry != link) return std::nullopt;
  return func->end - func->entry;
}

namespace {

arch::Recovered outermost(Arch arch, uint64_t cfa) {
  // No caller (pc 0), as Go's traceback ends here; the frame's CFA is still its caller's sp.
  arch::Recovered out;
  out.regs = RegisterSet(arch);
  out.cfa = cfa;
  out.regs.set_pc(0);
  return out;
}

arch::RecoverResult amd64_step(const Frame& frame, const GoFrame& f, Memory& mem) {
  constexpr uint16_t kRbp = 6, kRsp = 7;
  if (!frame.regs.has(kRsp)) return unexpected(not_applicable("rsp unknown"));
  const uint64_t sp = frame.regs.raw(kRsp);
  if (top_of_stack(f.name)) {
    return outermost(Arch::X86_64, sp + (f.delta && *f.delta >= 0 ? *f.delta : 0) + 8);
  }
  if (!f.delta || *f.delta < 0) return unexpected(not_applicable("no Go frame size for the pc"));
  const uint64_t ra_at = sp + static_cast<uint64_t>(*f.delta);
  uint64_t ra = 0;
  if (!read_u64le(mem, ra_at, ra)) return unexpected(fault(ra_at));
  arch::Recovered out;
  out.regs = RegisterSet(Arch::X86_64);
  out.cfa = ra_at + 8;
  out.regs.set(kRsp, out.cfa);
  out.regs.set_pc(ra);
  if (frame.regs.has(kRbp)) {
    const uint64_t rbp = frame.regs.raw(kRbp);
    uint64_t saved = rbp;
    if (rbp == ra_at - 8 && !read_u64le(mem, rbp, saved)) return unexpected(fault(rbp));
    out.regs.set(kRbp, saved);
  }
  return out;
}

// Go's link-register architectures: where the return address, the stack pointer and (arm64)
// the frame pointer live, and how much Go's signal handler pushes below a faulting function.
struct LrLayout {
  Arch arch;
  uint16_t sp, lr;
  std::optional<uint16_t> fp;
  uint64_t sigpanic_slot;
  bool big_endian;
};
constexpr LrLayout kArm64{Arch::AArch64, 31, 30, 29, 16, false};
// s390x (cmd/internal/obj/s390x): r14 is the link register, r15 sp; a frame stores r14 at
// 0(r15) as arm64 does, keeps no frame pointer, and the signal handler pushes 8 bytes.
constexpr LrLayout kS390x{Arch::S390x, 15, 14, std::nullopt, 8, true};

arch::RecoverResult lr_step(const Frame& frame, const GoFrame& f, Memory& mem, const LrLayout& a) {
  if (!frame.regs.has(a.sp)) return unexpected(not_applicable("sp unknown"));
  const uint64_t sp = frame.regs.raw(a.sp);
  if (top_of_stack(f.name)) {
    return outermost(a.arch, sp + (f.delta && *f.delta >= 0 ? *f.delta : 0));
  }
  if (!f.delta || *f.delta < 0) return unexpected(not_applicable("no Go frame size for the pc"));
  arch::Recovered out;
  out.regs = RegisterSet(a.arch);
  out.cfa = sp + static_cast<uint64_t>(*f.delta);
  uint64_t ra = 0;
  if (*f.delta == 0) {
    if (!frame.regs.has(a.lr)) {
      return unexpected(not_applicable("frameless, and the link register is unknown"));
    }
    ra = frame.regs.raw(a.lr);
  } else if (!mem.read_uint(sp, 8, a.big_endian, ra)) {
    return unexpected(fault(sp));
  }
  out.regs.set_pc(ra);
  out.regs.set(a.sp, out.cfa);
  if (f.name == "runtime.sigpanic") {
    // The slot the signal handler pushed: the faulting function's link register, its return
    // address if it had no frame at the fault.
    uint64_t pushed = 0;
    if (!mem.read_uint(out.cfa, 8, a.big_endian, pushed)) return unexpected(fault(out.cfa));
    out.regs.set(a.sp, out.cfa + a.sigpanic_slot);
    out.regs.set(a.lr, pushed);
  }
  if (a.fp && frame.regs.has(*a.fp)) {
    const uint64_t fp = frame.regs.raw(*a.fp);
    uint64_t saved = fp;
    if (*f.delta > 0 && fp == sp - 8 && !mem.read_uint(fp, 8, a.big_endian, saved)) {
      return unexpected(fault(fp));
    }
    out.regs.set(*a.fp, saved);
  }
  return out;
}

const LrLayout* lr_layout(Arch arch) {
  if (arch == Arch::AArch64) return &kArm64;
  if (arch == Arch::S390x) return &kS390x;
  return nullptr;
}

}  // namespace

arch::RecoverResult go_step(const Frame& frame, const Module& module, Memory& mem,
                            const Limits& limits) {
  const Arch arch = frame.regs.arch();
  const LrLayout* lr = lr_layout(arch);
  if (arch != Arch::X86_64 && lr == nullptr) return unexpected(not_applicable("not a Go arch"));
  auto f = locate(frame, module, limits);
  if (!f) return unexpected(f.error());
  return lr == nullptr ? amd64_step(frame, *f, mem) : lr_step(frame, *f, mem, *lr);
}

bool go_sigpanic_frame(const Frame& frame, const Module& module, const Limits& limits) {
  auto f = locate(frame, module, limits);
  return f && f->name == "runtime.sigpanic";
}

bool go_planted_return(const Frame& frame, const Module& module, uint64_t ra,
                       const Limits& limits) {
  if (go_sigpanic_frame(frame, module, limits)) return true;
  const elf::GoPclntab* go = go_table(module);
  if (go == nullptr || !module.contains(ra)) return false;
  auto func = go->find(module.to_link(ra), limits.max_search_probes);
  return func && go->name(*func).value_or(std::string_view()) == "runtime.goexit";
}

std::optional<arch::Recovered> go_step_over_cfi(const arch::ArchOps& ops, const Frame& frame,
                                                const Module& module, Memory& mem,
                                                const Limits& limits) {
  const LrLayout* lr = lr_layout(frame.regs.arch());
  if (lr == nullptr) return std::nullopt;
  auto f = locate(frame, module, limits);
  if (!f || (f->name != "runtime.sigpanic" && !signal_entry(f->name))) return std::nullopt;
  auto rec = lr_step(frame, *f, mem, *lr);
  if (!rec) return std::nullopt;
  if (signal_entry(f->name) && ops.sigreturn_at(mem, rec->regs.pc()) == arch::Sigreturn::None) {
    return std::nullopt;
  }
  return std::move(*rec);
}

}  // namespace ehbt::unwind
