// SPDX-License-Identifier: Apache-2.0
// The step loop: registers of frame 0 + target memory + modules -> frames and a stop reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/frame_registers.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"
#include "ehbt/stop_reason.hpp"

namespace ehbt {

enum class FrameSource : uint8_t {
  Context,       // frame 0: the registers we were given
  EhFrame,       // .eh_frame
  DebugFrame,    // .debug_frame
  SFrame,        // .sframe
  Signal,        // recovered from a signal frame (ucontext)
  FramePointer,  // frame-pointer chain
  Scan,          // stack scanning
  GoPclntab,     // Go's frame-size (pcsp) table in .gopclntab
};
std::string_view to_string(FrameSource source);

// A compact record (48 bytes on 64-bit hosts): the registers are held out of line, and only
// when the walk keeps them (UnwindOptions::keep_registers).
// The pointers first and the one-byte fields together at the end: 48 bytes, no padding holes.
struct Frame {
  uint64_t pc = 0;                 // frame 0: the thread's pc; others: the return address
  uint64_t cfa = 0;                // canonical frame address of this frame; 0 when not computed
  const Module* module = nullptr;  // nullptr: no module covers pc
  // JIT code (see `jit`): the perf map's entry naming it, if any (owned by the set).
  const PerfMapEntry* jit_entry = nullptr;
  // The frame's registers as recovered; empty when the walk kept none (keep_registers false).
  // Unwinder::step needs them, so a frame handed to it must come from a walk that kept them
  // (or first_frame / a previous step, which always fill them).
  FrameRegisters regs;
  FrameSource source = FrameSource::Context;
  // The pc is exact (frame 0, or the frame a signal interrupted): look it up as is, not pc-1.
  bool exact_pc = true;
  bool signal_trampoline = false;  // this frame is a sigreturn trampoline
  // The pc is a return address a runtime planted at a function's first instruction (V8's
  // deoptimised frames, makecontext): nothing called from before it, so it is looked up as is.
  bool planted = false;
  // Addition (JIT code): the pc lies in executable memory no module covers
  // (ModuleSet::is_jit_code).
  bool jit = false;
  // Addition (Go/cgo): this frame is on another stack than its callee, reached through a
  // runtime's own record of a stack switch (runtime.asmcgocall's saved g and depth): its CFA
  // need not be above the callee's.
  bool stack_switch = false;

  // Marks the frame as JIT code when `modules` says its pc is (module must be null).
  void classify_jit(const ModuleSet& modules) {
    jit = module == nullptr && modules.is_jit_code(lookup_pc());
    jit_entry = jit ? modules.perf_map_entry(lookup_pc()) : nullptr;
  }

  // The address to look up unwind info and symbols with. A return address is looked up one
  // byte back (the call may be the function's last instruction); a sigreturn trampoline was
  // entered by the kernel at its first byte, so it is looked up as is (glibc's __restore_rt
  // FDE starts one byte early for the unwinders that do subtract).
  uint64_t lookup_pc() const {
    return exact_pc || signal_trampoline || planted || pc == 0 ? pc : pc - 1;
  }
};

struct Backtrace {
  std::vector<Frame> frames;
  StopReason stop = StopReason::Outermost;
  std::string detail;
};

// Auto: per frame, .eh_frame / .debug_frame, else the module's SFrame row where one covers
// the pc, else the heuristics (frame pointer, function entry). EhFrame: DWARF CFI only.
// SFrame: SFrame rows only (frames tagged FrameSource::SFrame; a sigreturn trampoline
// recognised by its bytes is still stepped). FramePointer: the frame-pointer chain only.
enum class SourcePreference : uint8_t { Auto, EhFrame, SFrame, FramePointer };

struct UnwindOptions {
  SourcePreference source = SourcePreference::Auto;
  bool use_debug_frame = true;
  bool frame_pointer_fallback = true;  // where no table covers the pc
  // Additions (SFrame). Convert each module's .eh_frame to an SFrame table in memory (built
  // once per image and version) and use it in place of the module's own .sframe, so that
  // SourcePreference::SFrame can be tried on any target (Auto takes CFI first, so it rarely
  // gets to a converted row).
  // Functions the chosen version cannot express are left out of the converted table.
  bool sframe_from_eh_frame = false;
  // The SFrame version the conversion writes: 2 or 3 (V3's flexible FDEs express DRAP and
  // registers V2 cannot). Any other value: no converted table.
  uint8_t sframe_version = 3;
  // Addition (walk cost). Whether each Frame of the Backtrace keeps its register set. The
  // walk itself needs only the registers of the frame being stepped and of its caller; a
  // caller that prints pcs, CFAs and symbols (the CLI) turns this off and the walk then
  // allocates nothing per frame. Unwinder::step always fills the caller's registers.
  bool keep_registers = true;
};

struct StopInfo {
  StopReason reason = StopReason::Outermost;
  std::string detail;
  uint64_t cfa = 0;  // CFA of the frame that could not be stepped, when known
};

struct StepResult {
  uint64_t cfa = 0;  // CFA of the frame stepped from
  Frame caller;
};

class Unwinder {
 public:
  explicit Unwinder(Limits limits = {}) : limits_(limits) {}

  const Limits& limits() const { return limits_; }

  // Walks from `regs` until a stop; never throws.
  Backtrace unwind(const RegisterSet& regs, Memory& mem, const ModuleSet& modules,
                   const UnwindOptions& options = {}) const;

  // One step from `frame` to its caller (for debugger integrations that go frame by frame).
  Expected<StepResult, StopInfo> step(const Frame& frame, Memory& mem, const ModuleSet& modules,
                                      const UnwindOptions& options = {}) const;

  // Frame 0 for a register set.
  Frame first_frame(const RegisterSet& regs, const ModuleSet& modules) const;

 private:
  Limits limits_;
};

}  // namespace ehbt
