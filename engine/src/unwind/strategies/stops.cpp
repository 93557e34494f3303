// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/stops.hpp"

namespace ehbt::unwind {

Attempt StopWithoutFallbacks::attempt(StepContext& ctx) {
  return stop(ctx.reason, std::move(ctx.detail));
}

Attempt GiveUp::attempt(StepContext& ctx) {
  return stop(ctx.reason, ctx.detail + "; " + ctx.fp_why + "; scan: " + ctx.scan_why);
}

}  // namespace ehbt::unwind
