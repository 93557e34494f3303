// SPDX-License-Identifier: Apache-2.0
// What the strategies of one step (unwind/step.cpp) share: the frame being stepped and the
// caller it fills, the target, the options, and what earlier strategies learnt on the way
// (why no table applied, why a fallback failed). Plus what every strategy ends with: a
// candidate caller is validated the same way whichever strategy found it.
//
// A strategy is a type with two static functions:
//   bool applies(const StepContext&)  -- inline: the cheap test of options and module that
//                                         decides whether the strategy runs at all;
//   Attempt attempt(StepContext&)     -- nothing: the next strategy tries; a StepOutcome (a
//                                         caller, or a stop): the step ends with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "arch/arch_ops.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"
#include "unwind/image_cfi_cache.hpp"
#include "unwind/scan_step.hpp"

namespace ehbt::unwind {

// The CFA of the frame stepped from (the caller is filled in place), or why the walk stops.
using StepOutcome = Expected<uint64_t, StopInfo>;
// A strategy's answer: std::nullopt lets the next strategy try.
using Attempt = std::optional<StepOutcome>;

struct StepContext {
  StepContext(const Frame& frame_, Frame& caller_, Memory& mem_, const ModuleSet& modules_,
              const UnwindOptions& options_, const Limits& limits_, CfiMemo& memo_,
              const arch::ArchOps& ops_, const Module* module_)
      : frame(frame_),
        caller(caller_),
        mem(mem_),
        modules(modules_),
        options(options_),
        limits(limits_),
        memo(memo_),
        ops(ops_),
        module(module_),
        image(module_ != nullptr ? module_->image.get() : nullptr) {}

  const Frame& frame;
  Frame& caller;  // filled by the strategy that steps (must not be `frame`)
  Memory& mem;
  const ModuleSet& modules;
  const UnwindOptions& options;
  const Limits& limits;
  CfiMemo& memo;
  const arch::ArchOps& ops;
  const Module* module;  // the module covering frame.lookup_pc(), or null
  const Image* image;    // its image; null without a module or without a file

  // Why no table applied (set by CfiRow), for the stop that ends a step nothing else takes.
  StopReason reason = StopReason::NoModule;
  std::string detail;
  // Why the frame-pointer chain and the stack scan failed (set by the fallbacks).
  std::string fp_why;
  std::string scan_why;
  // The last candidate disprove() proved by a direct call: its pc and the call's target. When
  // the step's caller is that candidate, step_frame adds the target to the walk's known
  // function starts (known_starts.hpp).
  uint64_t proven_ra = 0;
  uint64_t proven_target = 0;

  bool auto_mode() const { return options.source == SourcePreference::Auto; }

  // Where the frame's function starts, for the fallbacks: made on first use and shared by
  // them, so that the symbol lookup behind it (a pass over a large table) runs at most once.
  const arch::CodeHint& code_hint();

 private:
  std::optional<arch::CodeHint> hint_;
};

Unexpected<StopInfo> stop(StopReason reason, std::string detail, uint64_t cfa = 0);

// The stop detail of a zero return address read for a frame found by stack scanning (not
// the outermost frame: its sp was a guess).
inline constexpr const char* kScannedZeroReturn =
    "the return address of a frame found by stack scanning is 0 (its stack pointer was a "
    "guess: no proof of the outermost frame)";

// A failed heuristic or signal-frame recovery as a stop; `what` names the recovery.
StopInfo recover_failure(const arch::RecoverFailure& f, const char* what);

// Checks ctx.caller's pc and fills ctx.caller.module. `from_signal`: the pc was interrupted,
// not a return address. `hint`: a module the caller is likely in (the callee's), which spares
// the module search when ModuleSet::find can tell it gives the same answer.
std::optional<StopInfo> validate_caller(StepContext& ctx, uint64_t cfa, bool from_signal,
                                        const Module* hint = nullptr);

// The proof a fallback's candidate must pass (unwind/validate.hpp), against the frame stepped
// from: nothing when proven, else why not (prefixed with `what`, the strategy). A zero return
// address is left to finish(), which ends the walk there. `planted`: the strategy knows the
// caller pc was put where a return address goes without a call (Go's runtime, V8's deoptimiser:
// is_planted_return): only the stack check applies. A sigreturn trampoline (the kernel plants it)
// is recognised here for every strategy. `from_record`: the candidate is the return address of
// the frame record the callee's frame pointer points at. A call through a register before it
// is then taken, as it is wherever the callee's start is known: the record ties the word to
// this frame, where a scanned word after such a call may be a stale one of any earlier call
// (a stripped C++ program's virtual calls chained by frame pointers: Chromium's). A scanned
// word needs the frame above it to prove it (ProofFailure::IndirectCall).
std::optional<std::string> disprove(StepContext& ctx, const arch::Recovered& rec, const char* what,
                                    bool planted = false, bool from_record = false);

// The frame a fallback's candidate caller makes (its pc a return address, looked up at pc - 1,
// tagged scan), for asking its own unwind table about it; nothing where its module has no file.
std::optional<Frame> candidate_frame(const StepContext& ctx, const arch::Recovered& rec);

// The proof's context for this step: the walk's known function starts included.
ScanContext scan_context(StepContext& ctx);

// Whether the recovered return address is one a runtime planted (validate.hpp).
bool planted_return(StepContext& ctx, const arch::Recovered& rec);

// Fills ctx.caller from a heuristic or signal-frame recovery and validates it. `exact_pc`: the
// pc was interrupted (a signal frame); `planted`: a planted return address (Frame::planted).
StepOutcome finish(StepContext& ctx, arch::Recovered&& rec, FrameSource source, bool exact_pc,
                   bool planted = false);

}  // namespace ehbt::unwind
