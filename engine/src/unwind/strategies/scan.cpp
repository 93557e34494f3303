// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/scan.hpp"

#include "unwind/scan_step.hpp"
#include "unwind/step.hpp"
#include "util/hex.hpp"

namespace ehbt::unwind {

Attempt ProvableLeaf::attempt(StepContext& ctx) {
  const ScanContext scan = scan_context(ctx);
  if (auto leaf = infer_leaf(scan, ctx.frame, ctx.code_hint())) {
    if (disprove(ctx, *leaf, "leaf")) return std::nullopt;
    auto out = finish(ctx, std::move(*leaf), FrameSource::Scan, false);
    if (out) return out;
  }
  return std::nullopt;
}

Attempt EntryFunction::attempt(StepContext& ctx) {
  if (in_entry_function(ctx.frame, ctx.module, ctx.code_hint().function_start())) {
    return stop(StopReason::Outermost, "");  // _start: nothing called it
  }
  return std::nullopt;
}

namespace {

// A scanned caller whose own unwind table, stepped from the sp the scan gives it, reads a
// zero return address is no frame: a function with a table that ends the walk says so
// itself (its return address undefined), and a zero read at that sp means the sp is wrong:
// the word was a saved pc in other data, main's saved context after a coroutine's stack
// (issue #32). Only the tables are asked (fallbacks off): nothing else proves more.
std::optional<std::string> steps_on_by_its_table(StepContext& ctx, const arch::Recovered& rec) {
  auto candidate = candidate_frame(ctx, rec);
  if (!candidate) return std::nullopt;
  const Frame& caller = *candidate;
  UnwindOptions tables = ctx.options;
  tables.frame_pointer_fallback = false;
  Frame next;
  CfiMemo memo;
  memo.nested = true;
  auto step = step_frame(caller, ctx.mem, ctx.modules, tables, ctx.limits, memo, next);
  if (!step && step.error().reason == StopReason::NoUnwindInfo &&
      step.error().detail == kScannedZeroReturn) {
    return "the table of caller pc " + util::hex(caller.pc) +
           " reads a zero return address from the stack the scan gives it";
  }
  return std::nullopt;
}

}  // namespace

// The scan proves each candidate itself (validate.hpp's proof, with the frame above for a call
// through a register, the same ScanContext disprove() builds): proving it again here would
// repeat the decode and the nested table steps. Only a caller the scan took unproven (aarch64's
// saved-x30 slot) goes through disprove().
Attempt StackScan::attempt(StepContext& ctx) {
  const ScanContext scan = scan_context(ctx);
  ScanProof proof;
  auto found = scan_stack(
      scan, ctx.frame, ctx.code_hint().function_start(),
      [&ctx](const arch::Recovered& rec) { return steps_on_by_its_table(ctx, rec); }, &proof);
  if (!found) {
    ctx.scan_why = std::move(found.error());
    return std::nullopt;
  }
  if (!proof.proven) {
    if (auto no = disprove(ctx, *found, "scan")) {
      ctx.scan_why = std::move(*no);
      return std::nullopt;
    }
  } else if (proof.target != 0) {
    ctx.proven_ra = found->regs.pc();
    ctx.proven_target = proof.target;
  }
  auto out = finish(ctx, std::move(*found), FrameSource::Scan, false);
  if (out) return out;
  ctx.scan_why = out.error().detail;
  return std::nullopt;
}

}  // namespace ehbt::unwind
