// SPDX-License-Identifier: Apache-2.0
// The walk: frame 0 from the registers, then one step at a time (unwind/step.cpp) until a
// stop, with the checks that need more than one frame: the CFA must strictly increase (except
// across a signal frame, where the handler may run on another stack), and no (pc, CFA) pair
// may repeat.
#include <algorithm>
#include <array>

#include "ehbt/unwinder.hpp"
#include "unwind/describe.hpp"
#include "unwind/step.hpp"

namespace ehbt {

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::Outermost:
      return "outermost";
    case StopReason::MaxFrames:
      return "max_frames";
    case StopReason::NoModule:
      return "no_module";
    case StopReason::NoUnwindInfo:
      return "no_unwind_info";
    case StopReason::MemoryFault:
      return "memory_fault";
    case StopReason::BadUnwindInfo:
      return "bad_unwind_info";
    case StopReason::Unsupported:
      return "unsupported";
    case StopReason::NoProgress:
      return "no_progress";
    case StopReason::BadPc:
      return "bad_pc";
  }
  return "unknown";
}

std::string_view to_string(FrameSource source) {
  switch (source) {
    case FrameSource::Context:
      return "context";
    case FrameSource::EhFrame:
      return "eh_frame";
    case FrameSource::DebugFrame:
      return "debug_frame";
    case FrameSource::SFrame:
      return "sframe";
    case FrameSource::Signal:
      return "signal";
    case FrameSource::FramePointer:
      return "frame_pointer";
    case FrameSource::Scan:
      return "scan";
    case FrameSource::GoPclntab:
      return "go_pclntab";
  }
  return "unknown";
}

Frame Unwinder::first_frame(const RegisterSet& regs, const ModuleSet& modules) const {
  Frame f;
  f.pc = regs.pc();
  f.source = FrameSource::Context;
  f.exact_pc = true;
  f.module = modules.find(f.pc);
  f.classify_jit(modules);
  f.regs = regs;
  return f;
}

Expected<StepResult, StopInfo> Unwinder::step(const Frame& frame, Memory& mem,
                                              const ModuleSet& modules,
                                              const UnwindOptions& options) const {
  unwind::CfiMemo memo;
  StepResult out;
  auto cfa = unwind::step_frame(frame, mem, modules, options, limits_, memo, out.caller);
  if (!cfa) return unexpected(std::move(cfa.error()));
  out.cfa = *cfa;
  return out;
}

namespace {

// A walk that crossed a module whose file is missing could only guess its way through it (frame
// pointer or scan), and such a step knows few of the caller's registers. When a later table
// then needs one of them, the table is not the cause: the missing file is. Names it once.
void add_lost_by_heuristic(Backtrace& bt) {
  if (bt.stop != StopReason::BadUnwindInfo && bt.stop != StopReason::NoUnwindInfo) return;
  for (std::size_t i = bt.frames.size(); i-- > 1;) {
    const Frame& callee = bt.frames[i - 1];
    const FrameSource how = bt.frames[i].source;
    if (callee.module == nullptr || callee.module->missing.empty()) continue;
    if (how != FrameSource::FramePointer && how != FrameSource::Scan) continue;
    bt.detail += std::string("; the walk crossed a module without its file by ") +
                 (how == FrameSource::Scan ? "stack scan" : "frame pointer") + ": " +
                 callee.module->missing;
    return;
  }
}

// (pc, CFA) pairs of the steps exempt from the increasing-CFA rule; a cycle through signal
// frames must revisit one of them. Bounded: older pairs are forgotten, max_frames ends the
// rest.
class RecentPairs {
 public:
  bool seen(uint64_t pc, uint64_t cfa) const {
    for (std::size_t i = 0; i < std::min(count_, kSize); ++i) {
      if (pairs_[i].pc == pc && pairs_[i].cfa == cfa) return true;
    }
    return false;
  }
  void add(uint64_t pc, uint64_t cfa) { pairs_[count_++ % kSize] = {pc, cfa}; }

 private:
  static constexpr std::size_t kSize = 16;
  struct Pair {
    uint64_t pc, cfa;
  };
  std::array<Pair, kSize> pairs_{};
  std::size_t count_ = 0;
};

}  // namespace

Backtrace Unwinder::unwind(const RegisterSet& regs, Memory& mem, const ModuleSet& modules,
                           const UnwindOptions& options) const {
  Backtrace bt;
  if (limits_.max_frames == 0) {
    bt.stop = StopReason::MaxFrames;
    bt.detail = "max_frames is 0";
    return bt;
  }
  // Two working frames hold the registers the step needs: the frame being stepped from and
  // its caller, built in place; after each step they trade roles (their register sets are
  // allocated once per walk and reused; trading references, not contents, as a swap of the
  // frames would). The backtrace gets compact records, with registers only when asked.
  Frame work[2] = {first_frame(regs, modules), Frame{}};
  work[1].regs.mut();
  Frame* current_ptr = &work[0];
  Frame* caller_ptr = &work[1];
  const bool keep = options.keep_registers;
  // Built in place in the vector: a temporary moved in cost a store-forwarding stall per
  // frame (its one-byte fields stored apart, then read back as one word).
  auto record = [&bt, keep](const Frame& f) {
    Frame& out = bt.frames.emplace_back();
    out.pc = f.pc;
    out.cfa = f.cfa;
    out.source = f.source;
    out.module = f.module;
    out.exact_pc = f.exact_pc;
    out.signal_trampoline = f.signal_trampoline;
    out.planted = f.planted;
    out.jit = f.jit;
    out.jit_entry = f.jit_entry;
    out.stack_switch = f.stack_switch;
    if (keep) out.regs = f.regs;
  };
  bt.frames.reserve(std::min<uint32_t>(limits_.max_frames, 64));
  record(*current_ptr);

  unwind::CfiMemo memo;
  RecentPairs exempt_pairs;
  uint32_t scanned = 0;  // frames found by stack scanning (Limits::max_scan_frames)
  for (;;) {
    Frame& current = *current_ptr;
    Frame& caller = *caller_ptr;
    const std::size_t index = bt.frames.size() - 1;
    auto cfa = unwind::step_frame(current, mem, modules, options, limits_, memo, caller);
    if (!cfa) {
      StopInfo& why = cfa.error();
      if (why.cfa != 0) bt.frames[index].cfa = why.cfa;
      bt.stop = why.reason;
      bt.detail = std::move(why.detail);
      add_lost_by_heuristic(bt);
      break;
    }
    Frame& frame = bt.frames[index];
    frame.cfa = *cfa;
    current.cfa = *cfa;
    // A step that lands on an exact pc went through a signal frame: `frame` is the trampoline.
    const bool signal_step = caller.exact_pc;
    if (signal_step) frame.signal_trampoline = true;
    if (index > 0) {
      const uint64_t prev = bt.frames[index - 1].cfa;
      // Exempt: the trampoline's step (the interrupted stack may lie below a handler on an
      // alternate stack) and the interrupted frame's (its CFA may equal its SP-based start);
      // a runtime's recorded stack switch (Go's cgo call: the goroutine's stack is anywhere).
      if (signal_step || frame.exact_pc || caller.stack_switch) {
        if (exempt_pairs.seen(frame.pc, frame.cfa)) {
          bt.stop = StopReason::NoProgress;
          bt.detail =
              "pc " + unwind::hex(frame.pc) + " with CFA " + unwind::hex(frame.cfa) + " repeats";
          break;
        }
        exempt_pairs.add(frame.pc, frame.cfa);
      } else if (frame.cfa <= prev) {
        bt.stop = StopReason::NoProgress;
        bt.detail = "CFA " + unwind::hex(frame.cfa) + " does not increase (previous " +
                    unwind::hex(prev) + ")";
        break;
      }
    }
    if (bt.frames.size() + 1 > limits_.max_frames) {
      bt.stop = StopReason::MaxFrames;
      bt.detail = "limit of " + std::to_string(limits_.max_frames) + " frames";
      break;
    }
    if (caller.source == FrameSource::Scan && ++scanned > limits_.max_scan_frames) {
      bt.stop = StopReason::NoUnwindInfo;
      bt.detail =
          "limit of " + std::to_string(limits_.max_scan_frames) + " frames found by stack scanning";
      break;
    }
    record(caller);
    std::swap(current_ptr, caller_ptr);
  }
  return bt;
}

}  // namespace ehbt
