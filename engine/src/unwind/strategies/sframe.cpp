// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/sframe.hpp"

#include <string>

#include "unwind/describe.hpp"
#include "unwind/strategies/signal.hpp"
#include "unwind/strategies/table.hpp"

namespace ehbt::unwind {
namespace {

// The SFrame row covering the frame's lookup pc, applied; nothing when there is none.
// `sframe` and `found` say what the lookup saw, for the stop when nothing else may follow.
Attempt sframe_row(StepContext& ctx, ImageSFrame*& sframe, SFrameLookup& found) {
  if (ctx.image == nullptr) return std::nullopt;
  sframe = &ctx.memo.get_cache(*ctx.image, ctx.limits).sframe();
  found = sframe->find_row(ctx.module->to_link(ctx.frame.lookup_pc()),
                           ctx.options.sframe_from_eh_frame, ctx.options.sframe_version);
  if (found.status != SFrameLookup::Status::Found) return std::nullopt;
  return row_step(ctx, *found.row, FrameSource::SFrame);
}

// "0x7f..1234 (libc.so.6+0x1234) in __restore_rt": the pc, its module and its function.
std::string describe_function(uint64_t pc, const Module* module) {
  std::string out = describe_pc(pc, module);
  const Image* image = module != nullptr ? module->image.get() : nullptr;
  if (image == nullptr) return out;
  if (auto sym = image->symbolize(module->to_link(pc))) out += " in " + sym->name;
  return out;
}

// SourcePreference::SFrame and no SFrame row for the frame.
StepOutcome sframe_miss(StepContext& ctx, ImageSFrame* sframe, const SFrameLookup& found) {
  const arch::Sigreturn kind = ctx.ops.sigreturn_at(ctx.mem, ctx.frame.pc);
  if (kind != arch::Sigreturn::None) return signal_step(ctx, kind);

  const Module* module = ctx.module;
  const uint64_t pc = ctx.frame.lookup_pc();
  std::string detail = "no SFrame row for " + describe_function(pc, module);
  if (module == nullptr) return stop(StopReason::NoModule, detail + ": in no module");
  if (sframe == nullptr) return stop(StopReason::NoUnwindInfo, detail + ": no file for the module");
  const bool converted = ctx.options.sframe_from_eh_frame;
  const uint8_t version = ctx.options.sframe_version;
  if (found.status == SFrameLookup::Status::Unsupported) {
    return stop(StopReason::Unsupported, detail + ": its SFrame function uses what this reader " +
                                             "does not evaluate (at " + hex(found.error.where) +
                                             ")");
  }
  if (found.status == SFrameLookup::Status::NotCovered) {
    if (converted) {
      if (auto why = sframe->inexpressible_reason(module->to_link(pc), version)) {
        detail += ": not expressible in SFrame V" + std::to_string(version) + ": " + *why;
      } else {
        detail += ": no .eh_frame FDE to convert";
      }
    } else {
      detail += ": no function of its .sframe covers the pc";
    }
    return stop(StopReason::NoUnwindInfo, std::move(detail));
  }
  // No table: absent, or dropped as corrupt (now or by an earlier lookup).
  detail += ": " + sframe->why_no_table(converted, version);
  const bool corrupt = sframe->drop_error(converted, version).has_value();
  return stop(corrupt ? StopReason::BadUnwindInfo : StopReason::NoUnwindInfo, std::move(detail));
}

}  // namespace

Attempt SFrameRowFirst::attempt(StepContext& ctx) {
  ImageSFrame* sframe = nullptr;
  SFrameLookup found;
  if (auto out = sframe_row(ctx, sframe, found)) return out;
  if (!ctx.auto_mode()) return sframe_miss(ctx, sframe, found);
  return std::nullopt;
}

Attempt OwnSFrameRow::attempt(StepContext& ctx) {
  ImageSFrame* sframe = nullptr;
  SFrameLookup found;
  return sframe_row(ctx, sframe, found);
}

}  // namespace ehbt::unwind
