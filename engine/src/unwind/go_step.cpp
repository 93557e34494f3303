// SPDX-License-Identifier: Apache-2.0
// Go's amd64 frame (cmd/internal/obj/x86 prologue): the call pushed the return address, the
// function then lowers sp by its frame size; a function with a frame saves the caller's rbp
// just below the return address and points rbp at that slot. The pcsp value at a pc is how far
// sp is below its value at entry, so the return address is at sp + delta and the caller's sp
// (the CFA) is sp + delta + 8. rbp is the saved one only where it points at the slot (the
// frame is set up and not yet torn down); elsewhere the function has not touched it.
#include "unwind/go_step.hpp"

#include <array>
#include <string_view>

#include "elf/go_image.hpp"

namespace ehbt::unwind {
namespace {

constexpr uint16_t kRbp = 6, kRsp = 7;

arch::RecoverFailure not_applicable(const char* why) {
  return arch::RecoverFailure{arch::RecoverError::NotApplicable, 0, 0, why};
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

bool read_u64le(Memory& mem, uint64_t addr, uint64_t& out) {
  std::array<std::byte, 8> b;
  if (!mem.read_exact(addr, b)) return false;
  out = 0;
  for (unsigned i = 8; i-- > 0;) out = (out << 8) | std::to_integer<uint64_t>(b[i]);
  return true;
}

}  // namespace

arch::RecoverResult go_step(const Frame& frame, const Module& module, Memory& mem,
                            const Limits& limits) {
  if (frame.regs.arch() != Arch::X86_64) return unexpected(not_applicable("not amd64"));
  const Image* image = module.image.get();
  const elf::GoPclntab* go = image != nullptr ? elf::go_pclntab(*image) : nullptr;
  if (go == nullptr) return unexpected(not_applicable("no Go function table"));
  const uint64_t pc = module.to_link(frame.lookup_pc());
  auto func = go->find(pc, limits.max_search_probes);
  if (!func) return unexpected(not_applicable("pc in no Go function"));
  if (!frame.regs.has(kRsp)) return unexpected(not_applicable("rsp unknown"));
  auto delta = go->sp_delta(*func, pc, limits.max_go_pcvalue_steps);
  if (auto name = go->name(*func); name && top_of_stack(*name)) {
    // Outermost: no caller (pc 0), as Go's traceback ends here; the frame's CFA is still
    // where its return-address slot ends.
    arch::Recovered out;
    out.regs = RegisterSet(Arch::X86_64);
    out.cfa = frame.regs.raw(kRsp) + (delta && *delta >= 0 ? *delta : 0) + 8;
    out.regs.set_pc(0);
    return out;
  }
  if (!delta || *delta < 0) return unexpected(not_applicable("no Go frame size for the pc"));

  const uint64_t sp = frame.regs.raw(kRsp);
  const uint64_t ra_at = sp + static_cast<uint64_t>(*delta);
  uint64_t ra = 0;
  if (!read_u64le(mem, ra_at, ra)) {
    return unexpected(arch::RecoverFailure{arch::RecoverError::MemoryFault, ra_at, 8, ""});
  }
  arch::Recovered out;
  out.regs = RegisterSet(Arch::X86_64);
  out.cfa = ra_at + 8;
  out.regs.set(kRsp, out.cfa);
  out.regs.set_pc(ra);
  if (frame.regs.has(kRbp)) {
    const uint64_t rbp = frame.regs.raw(kRbp);
    uint64_t saved = rbp;
    if (rbp == ra_at - 8 && !read_u64le(mem, rbp, saved)) {
      return unexpected(arch::RecoverFailure{arch::RecoverError::MemoryFault, rbp, 8, ""});
    }
    out.regs.set(kRbp, saved);
  }
  return out;
}

}  // namespace ehbt::unwind
