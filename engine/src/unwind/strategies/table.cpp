// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/table.hpp"

#include <string>

#include "unwind/apply_row.hpp"
#include "unwind/describe.hpp"
#include "unwind/scan_step.hpp"
#include "unwind/strategies/signal.hpp"
#include "unwind/validate.hpp"

namespace ehbt::unwind {

StepOutcome row_step(StepContext& ctx, const dwarf::Row& row, FrameSource source) {
  const Frame& frame = ctx.frame;
  Frame& caller = ctx.caller;
  if (row.signal_frame) {
    const arch::Sigreturn kind = ctx.ops.sigreturn_at(ctx.mem, frame.pc);
    if (kind != arch::Sigreturn::None) return signal_step(ctx, kind);
  }
  auto cfa = apply_row(ctx.ops, row, frame.regs, ctx.mem, ctx.limits, caller.regs.mut());
  if (!cfa) {
    // SFrame marks the outermost frame with an FRE that has no data words: the CFA it
    // "computes" is not information, so the frame keeps none.
    if (source == FrameSource::SFrame && cfa.error().reason == StopReason::Outermost) {
      cfa.error().cfa = 0;
    }
    return unexpected(std::move(cfa.error()));
  }
  caller.pc = caller.regs.pc();
  caller.cfa = 0;
  caller.source = source;
  caller.exact_pc = row.signal_frame;
  caller.signal_trampoline = false;
  caller.planted = false;
  if (auto bad = validate_caller(ctx, *cfa, row.signal_frame, frame.module)) {
    return unexpected(std::move(*bad));
  }
  return *cfa;
}

namespace {

// A return address that is a function's first instruction, no call before it: planted, not
// left by a call (makecontext puts __start_context there, whose CFI ends the walk). It is
// looked up at pc, not pc - 1 (which lies before the function: no FDE covers it). Asked only
// where pc - 1 has no row, so a walk the tables cover never pays for it.
Attempt planted_return(StepContext& ctx, dwarf::ImageCfi& cfi, dwarf::ErrorCode code) {
  const Frame& frame = ctx.frame;
  if (frame.lookup_pc() == frame.pc) return std::nullopt;
  if (code != dwarf::ErrorCode::NoEntry && code != dwarf::ErrorCode::NotCovered)
    return std::nullopt;
  // A signal restorer is planted too (sa_restorer; Go's runtime.sigreturn has a row of its
  // own): SigreturnTrampoline reads the kernel's frame there.
  if (ctx.ops.sigreturn_at(ctx.mem, frame.pc) != arch::Sigreturn::None) return std::nullopt;
  const uint64_t link = ctx.module->to_link(frame.pc);
  dwarf::SectionKind from = dwarf::SectionKind::EhFrame;
  auto found = cfi.find_row_ref(link, &from, ctx.options.use_debug_frame);
  if (!found || (*found)->start != link) return std::nullopt;
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
  if (follows_a_call(scan, frame.pc) != std::optional<bool>(false)) return std::nullopt;
  // find_row_ref's reference stays valid: nothing else looks up a row before the step.
  return row_step(
      ctx, **found,
      from == dwarf::SectionKind::DebugFrame ? FrameSource::DebugFrame : FrameSource::EhFrame);
}

}  // namespace

Attempt CfiRow::attempt(StepContext& ctx) {
  const Frame& frame = ctx.frame;
  const Module* module = ctx.module;
  if (ctx.image != nullptr) {
    dwarf::ImageCfi& cfi = ctx.memo.get(*ctx.image, ctx.limits);
    dwarf::SectionKind from = dwarf::SectionKind::EhFrame;
    // By reference into the CFI row cache (a Row is ~2 KB): valid until the next lookup.
    auto found =
        cfi.find_row_ref(module->to_link(frame.lookup_pc()), &from, ctx.options.use_debug_frame);
    if (found) {
      return row_step(
          ctx, **found,
          from == dwarf::SectionKind::DebugFrame ? FrameSource::DebugFrame : FrameSource::EhFrame);
    }
    const dwarf::ErrorCode code = found.error().code;
    if (auto at_pc = planted_return(ctx, cfi, code)) return at_pc;
    if (code != dwarf::ErrorCode::NoEntry && code != dwarf::ErrorCode::NotCovered) {
      return stop(dwarf::to_stop_reason(code), std::string(dwarf::to_string(code)) + " for " +
                                                   describe_pc(frame.lookup_pc(), module) +
                                                   " (at " + hex(found.error().where) + ")");
    }
    ctx.reason = StopReason::NoUnwindInfo;
    ctx.detail = "no FDE for " + describe_pc(frame.lookup_pc(), module);
  } else if (module != nullptr) {
    ctx.reason = StopReason::NoUnwindInfo;
    ctx.detail = "no file for " + describe_pc(frame.lookup_pc(), module);
  } else {
    ctx.detail = hex(frame.pc) + " is in no module";
  }
  if (module != nullptr && !module->missing.empty()) {
    // The module's file is missing or another build: that, not the table, is the cause.
    ctx.reason = StopReason::NoModule;
    ctx.detail = module->missing + "; at " + describe_pc(frame.lookup_pc(), module);
  }
  return std::nullopt;
}

}  // namespace ehbt::unwind
