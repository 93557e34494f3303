// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/entry.hpp"

#include <string_view>

#include "unwind/describe.hpp"

namespace ehbt::unwind {
namespace {

// Whether link_addr lies in a PLT stub.
bool in_plt_stub(const Image& image, uint64_t link_addr) {
  auto sym = image.symbolize(link_addr);
  constexpr std::string_view kPlt = "@plt";
  return sym && sym->name.size() > kPlt.size() &&
         std::string_view(sym->name).substr(sym->name.size() - kPlt.size()) == kPlt;
}

Attempt entry_step(StepContext& ctx) {
  auto rec = ctx.ops.entry_step(ctx.frame.regs, ctx.mem);
  if (!rec || disprove(ctx, *rec, "function entry")) return std::nullopt;
  auto out = finish(ctx, std::move(*rec), FrameSource::Scan, false);
  if (out) return out;
  return std::nullopt;
}

}  // namespace

Attempt PltStub::attempt(StepContext& ctx) {
  if (!in_plt_stub(*ctx.image, ctx.module->to_link(ctx.frame.pc))) return std::nullopt;
  return entry_step(ctx);
}

Attempt CallThroughBadPointer::attempt(StepContext& ctx) {
  const bool jit = ctx.modules.is_jit_code(ctx.frame.lookup_pc());
  if (ctx.frame.exact_pc && !jit) {
    if (auto out = entry_step(ctx)) return out;
  }
  if (jit) ctx.detail = hex(ctx.frame.pc) + " is JIT code (executable memory in no module)";
  return std::nullopt;
}

}  // namespace ehbt::unwind
