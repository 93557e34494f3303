// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/scan.hpp"

#include "unwind/scan_step.hpp"

namespace ehbt::unwind {

Attempt ProvableLeaf::attempt(StepContext& ctx) {
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
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

Attempt StackScan::attempt(StepContext& ctx) {
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
  auto found = scan_stack(scan, ctx.frame, ctx.code_hint().function_start());
  if (!found) {
    ctx.scan_why = std::move(found.error());
    return std::nullopt;
  }
  if (auto no = disprove(ctx, *found, "scan")) {
    ctx.scan_why = std::move(*no);
    return std::nullopt;
  }
  auto out = finish(ctx, std::move(*found), FrameSource::Scan, false);
  if (out) return out;
  ctx.scan_why = out.error().detail;
  return std::nullopt;
}

}  // namespace ehbt::unwind
