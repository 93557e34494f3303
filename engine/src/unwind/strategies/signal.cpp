// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/signal.hpp"

namespace ehbt::unwind {

StepOutcome signal_step(StepContext& ctx, arch::Sigreturn kind) {
  auto rec = ctx.ops.recover_signal(ctx.frame.regs, kind, ctx.mem);
  if (!rec) return unexpected(recover_failure(rec.error(), "signal frame"));
  return finish(ctx, std::move(*rec), FrameSource::Signal, true);
}

Attempt SigreturnTrampoline::attempt(StepContext& ctx) {
  const arch::Sigreturn kind = ctx.ops.sigreturn_at(ctx.mem, ctx.frame.pc);
  if (kind != arch::Sigreturn::None) return signal_step(ctx, kind);
  return std::nullopt;
}

}  // namespace ehbt::unwind
