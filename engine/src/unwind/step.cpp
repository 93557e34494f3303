// SPDX-License-Identifier: Apache-2.0
#include "unwind/step.hpp"

#include <optional>
#include <string>
#include <string_view>

#include "arch/arch_ops.hpp"
#include "unwind/apply_row.hpp"
#include "unwind/describe.hpp"
#include "unwind/go_step.hpp"
#include "unwind/scan_step.hpp"

namespace ehbt::unwind {
namespace {

using StepOutcome = Expected<uint64_t, StopInfo>;

Unexpected<StopInfo> stop(StopReason reason, std::string detail, uint64_t cfa = 0) {
  return unexpected(StopInfo{reason, std::move(detail), cfa});
}

const Module* module_for(const Frame& frame, const ModuleSet& modules) {
  const uint64_t pc = frame.lookup_pc();
  if (frame.module != nullptr && frame.module->contains(pc)) return frame.module;
  return modules.find(pc);
}

// Checks the caller's pc and fills caller.module. `from_signal`: the pc was interrupted, not
// a return address. `hint`: a module the caller is likely in (the callee's), which spares the
// module search when ModuleSet::find can tell it gives the same answer.
std::optional<StopInfo> validate_caller(const arch::ArchOps& ops, Frame& caller, uint64_t cfa,
                                        Memory& mem, const ModuleSet& modules, bool from_signal,
                                        const Module* hint = nullptr) {
  const uint64_t pc = caller.pc;
  if (pc == 0 && !from_signal) return StopInfo{StopReason::Outermost, "", cfa};
  if (!ops.plausible_pc(pc)) {
    return StopInfo{StopReason::BadPc, "caller pc " + hex(pc) + " is not a code address", cfa};
  }
  const uint64_t lookup = caller.lookup_pc();
  caller.module = modules.find(lookup, hint);
  caller.classify_jit(modules);
  if (from_signal) return std::nullopt;
  if (caller.module != nullptr) {
    const Image* image = caller.module->image.get();
    if (image != nullptr && !image->is_executable(caller.module->to_link(lookup))) {
      return StopInfo{StopReason::BadPc,
                      "caller pc " + describe_pc(pc, caller.module) + " is not executable", cfa};
    }
    return std::nullopt;
  }
  if (modules.modules().empty()) return std::nullopt;
  if (caller.jit) return std::nullopt;  // JIT code: code, though in no module
  if (ops.sigreturn_at(mem, pc) != arch::Sigreturn::None) return std::nullopt;
  return StopInfo{StopReason::BadPc, "caller pc " + hex(pc) + " is in no module", cfa};
}

StopInfo recover_failure(const arch::RecoverFailure& f, const char* what) {
  if (f.kind == arch::RecoverError::MemoryFault) {
    return StopInfo{StopReason::MemoryFault, read_failed(f.addr, f.size) + " (" + what + ")", 0};
  }
  return StopInfo{StopReason::NoUnwindInfo, std::string(what) + ": " + f.why, 0};
}

// Fills `caller` from a heuristic or signal-frame recovery and validates it.
StepOutcome finish(const arch::ArchOps& ops, arch::Recovered&& rec, FrameSource source,
                   bool exact_pc, Memory& mem, const ModuleSet& modules, Frame& caller) {
  caller.pc = rec.regs.pc();
  caller.source = source;
  caller.exact_pc = exact_pc;
  caller.signal_trampoline = false;
  caller.cfa = 0;
  caller.regs = std::move(rec.regs);
  if (auto bad = validate_caller(ops, caller, rec.cfa, mem, modules, exact_pc)) {
    return unexpected(std::move(*bad));
  }
  return rec.cfa;
}

StepOutcome signal_step(const arch::ArchOps& ops, const Frame& frame, arch::Sigreturn kind,
                        Memory& mem, const ModuleSet& modules, Frame& caller) {
  auto rec = ops.recover_signal(frame.regs, kind, mem);
  if (!rec) return unexpected(recover_failure(rec.error(), "signal frame"));
  return finish(ops, std::move(*rec), FrameSource::Signal, true, mem, modules, caller);
}

// Where the frame's function starts, from the symbol covering its lookup pc (none: the arch
// layer may look for the start in the code itself), looked up when first asked: a
// frame-pointer step whose caller called from within the same module or from JIT code never
// asks, and for a large table the lookup is a pass over all of it.
arch::CodeHint code_hint(const Frame& frame, const Module* module, const Limits& limits) {
  arch::CodeHint hint;
  hint.limits = limits;
  const Image* image = module != nullptr ? module->image.get() : nullptr;
  if (image == nullptr) return hint;
  hint.find_function_start_with([&frame, module, image]() -> std::optional<uint64_t> {
    if (auto sym = image->symbolize(module->to_link(frame.lookup_pc())))
      return sym->start + module->bias;
    return std::nullopt;
  });
  return hint;
}

// A table row (CFI or SFrame) applied to the frame. A row of a signal frame ('S' FDE, SFrame
// signal function) at a real sigreturn trampoline reads the kernel's signal frame instead:
// that does not depend on the table being right.
StepOutcome row_step(const arch::ArchOps& ops, const Frame& frame, const dwarf::Row& row,
                     FrameSource source, Memory& mem, const ModuleSet& modules,
                     const Limits& limits, Frame& caller) {
  if (row.signal_frame) {
    const arch::Sigreturn kind = ops.sigreturn_at(mem, frame.pc);
    if (kind != arch::Sigreturn::None) return signal_step(ops, frame, kind, mem, modules, caller);
  }
  auto cfa = apply_row(ops, row, frame.regs, mem, limits, caller.regs.mut());
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
  if (auto bad = validate_caller(ops, caller, *cfa, mem, modules, row.signal_frame, frame.module)) {
    return unexpected(std::move(*bad));
  }
  return *cfa;
}

// "0x7f..1234 (libc.so.6+0x1234) in __restore_rt": the pc, its module and its function.
std::string describe_function(uint64_t pc, const Module* module) {
  std::string out = describe_pc(pc, module);
  const Image* image = module != nullptr ? module->image.get() : nullptr;
  if (image == nullptr) return out;
  if (auto sym = image->symbolize(module->to_link(pc))) out += " in " + sym->name;
  return out;
}

// SourcePreference::SFrame and no SFrame row for the frame: a sigreturn trampoline is still
// stepped by its bytes (SFrame cannot describe one; the kernel's unwinder does the same),
// anything else stops with the most precise reason known.
StepOutcome sframe_miss(const arch::ArchOps& ops, const Frame& frame, const Module* module,
                        ImageSFrame* sframe, const SFrameLookup& found,
                        const UnwindOptions& options, Memory& mem, const ModuleSet& modules,
                        Frame& caller) {
  const arch::Sigreturn kind = ops.sigreturn_at(mem, frame.pc);
  if (kind != arch::Sigreturn::None) return signal_step(ops, frame, kind, mem, modules, caller);

  const uint64_t pc = frame.lookup_pc();
  std::string detail = "no SFrame row for " + describe_function(pc, module);
  if (module == nullptr) return stop(StopReason::NoModule, detail + ": in no module");
  if (sframe == nullptr) return stop(StopReason::NoUnwindInfo, detail + ": no file for the module");
  const bool converted = options.sframe_from_eh_frame;
  const uint8_t version = options.sframe_version;
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

// Whether link_addr lies in a PLT stub (the NAME@plt symbols plt_symbols.cpp synthesises).
bool in_plt_stub(const Image& image, uint64_t link_addr) {
  auto sym = image.symbolize(link_addr);
  constexpr std::string_view kPlt = "@plt";
  return sym && sym->name.size() > kPlt.size() &&
         std::string_view(sym->name).substr(sym->name.size() - kPlt.size()) == kPlt;
}

StepOutcome frame_pointer_only(const arch::ArchOps& ops, const Frame& frame, Memory& mem,
                               const ModuleSet& modules, const Limits& limits, Frame& caller) {
  const arch::CodeHint hint = code_hint(frame, module_for(frame, modules), limits);
  auto rec = ops.frame_pointer_step_at(frame.regs, mem, hint);
  if (!rec) return unexpected(recover_failure(rec.error(), "frame pointer"));
  return finish(ops, std::move(*rec), FrameSource::FramePointer, false, mem, modules, caller);
}

// No table covers the frame: a provable leaf, then the frame-pointer chain (its caller pc
// must follow a call, which code that keeps no frame pointer rarely fakes), then the ELF entry
// point's function as the outermost frame, then a stack scan. `reason`/`detail` say why no
// table applied; the stop detail adds why each heuristic failed.
StepOutcome no_table_step(const arch::ArchOps& ops, const Frame& frame, const Module* module,
                          Memory& mem, const ModuleSet& modules, const Limits& limits,
                          Frame& caller, StopReason reason, const std::string& detail) {
  const arch::CodeHint hint = code_hint(frame, module, limits);
  const ScanContext ctx{ops, mem, modules, limits};
  if (auto leaf = infer_leaf(ctx, frame, hint)) {
    auto out = finish(ops, std::move(*leaf), FrameSource::Scan, false, mem, modules, caller);
    if (out) return out;
  }
  std::string fp_why;
  auto rec = ops.frame_pointer_step_at(frame.regs, mem, hint);
  if (!rec) {
    fp_why = recover_failure(rec.error(), "frame pointer").detail;
  } else if (const uint64_t ra = rec->regs.pc(); ra != 0 && !follows_call(ctx, ra, module, hint)) {
    fp_why =
        "frame pointer: caller pc " + hex(ra) + " follows no call that may lead to this function";
  } else {
    auto out = finish(ops, std::move(*rec), FrameSource::FramePointer, false, mem, modules, caller);
    if (out) return out;
    fp_why = "frame pointer: " + (out.error().detail.empty()
                                      ? std::string("the return address in the frame record is 0")
                                      : out.error().detail);
  }
  if (in_entry_function(frame, module, hint.function_start())) {
    return stop(StopReason::Outermost, "");  // _start: nothing called it
  }
  std::string scan_why;
  auto found = scan_stack(ctx, frame, hint.function_start());
  if (found) {
    auto out = finish(ops, std::move(*found), FrameSource::Scan, false, mem, modules, caller);
    if (out) return out;
    scan_why = out.error().detail;
  } else {
    scan_why = std::move(found.error());
  }
  return stop(reason, detail + "; " + fp_why + "; scan: " + scan_why);
}

}  // namespace

StepOutcome step_frame(const Frame& frame, Memory& mem, const ModuleSet& modules,
                       const UnwindOptions& options, const Limits& limits, CfiMemo& memo,
                       Frame& caller) {
  const arch::ArchOps& ops = memo.get_ops(frame.regs.arch());
  const Module* module = module_for(frame, modules);

  if (options.source == SourcePreference::FramePointer) {
    return frame_pointer_only(ops, frame, mem, modules, limits, caller);
  }

  // 1. The SFrame row first -- the module's own .sframe, or the table converted from its
  //    .eh_frame -- when only SFrame is wanted, or when the converted tables were asked for
  //    (Auto then falls back to CFI where they lack a function).
  const Image* image = module != nullptr ? module->image.get() : nullptr;
  auto sframe_row = [&](ImageSFrame*& sframe, SFrameLookup& found) -> std::optional<StepOutcome> {
    if (image == nullptr) return std::nullopt;
    sframe = &memo.get_cache(*image, limits).sframe();
    found = sframe->find_row(module->to_link(frame.lookup_pc()), options.sframe_from_eh_frame,
                             options.sframe_version);
    if (found.status != SFrameLookup::Status::Found) return std::nullopt;
    return row_step(ops, frame, *found.row, FrameSource::SFrame, mem, modules, limits, caller);
  };
  const bool auto_mode = options.source == SourcePreference::Auto;
  // 0. Go runtime frames whose DWARF is wrong (go_step.hpp): Go's own table steps them.
  if (auto_mode && module != nullptr && go_cfi_may_be_wrong(frame.regs.arch())) {
    if (auto rec = go_step_over_cfi(ops, frame, *module, mem, limits)) {
      return finish(ops, std::move(*rec), FrameSource::GoPclntab, false, mem, modules, caller);
    }
  }
  if (options.source == SourcePreference::SFrame || (auto_mode && options.sframe_from_eh_frame)) {
    ImageSFrame* sframe = nullptr;
    SFrameLookup found;
    if (auto out = sframe_row(sframe, found)) return std::move(*out);
    if (!auto_mode) {
      return sframe_miss(ops, frame, module, sframe, found, options, mem, modules, caller);
    }
  }

  // 2. The CFI row (.eh_frame, .debug_frame): more precise than a module's own .sframe,
  //    which cannot say everything CFI does and is sometimes written wrong (GNU ld's
  //    .plt.got rows), so Auto takes it first.
  StopReason reason = StopReason::NoModule;
  std::string detail;
  if (image != nullptr) {
    dwarf::ImageCfi& cfi = memo.get(*image, limits);
    dwarf::SectionKind from = dwarf::SectionKind::EhFrame;
    // By reference into the CFI row cache (a Row is ~2 KB): valid until the next lookup.
    auto found =
        cfi.find_row_ref(module->to_link(frame.lookup_pc()), &from, options.use_debug_frame);
    if (found) {
      return row_step(
          ops, frame, **found,
          from == dwarf::SectionKind::DebugFrame ? FrameSource::DebugFrame : FrameSource::EhFrame,
          mem, modules, limits, caller);
    }
    const dwarf::ErrorCode code = found.error().code;
    if (code != dwarf::ErrorCode::NoEntry && code != dwarf::ErrorCode::NotCovered) {
      return stop(dwarf::to_stop_reason(code), std::string(dwarf::to_string(code)) + " for " +
                                                   describe_pc(frame.lookup_pc(), module) +
                                                   " (at " + hex(found.error().where) + ")");
    }
    reason = StopReason::NoUnwindInfo;
    detail = "no FDE for " + describe_pc(frame.lookup_pc(), module);
    // 2b. Auto: the module's own .sframe where no CFI covers the pc.
    if (auto_mode && !options.sframe_from_eh_frame) {
      ImageSFrame* sframe = nullptr;
      SFrameLookup found;
      if (auto out = sframe_row(sframe, found)) return std::move(*out);
    }
  } else if (module != nullptr) {
    reason = StopReason::NoUnwindInfo;
    detail = "no file for " + describe_pc(frame.lookup_pc(), module);
  } else {
    detail = hex(frame.pc) + " is in no module";
  }
  if (module != nullptr && !module->missing.empty()) {
    // The module's file is missing or another build: that, not the table, is the cause.
    reason = StopReason::NoModule;
    detail = module->missing + "; at " + describe_pc(frame.lookup_pc(), module);
  }

  // 3. A sigreturn trampoline nobody described.
  const arch::Sigreturn kind = ops.sigreturn_at(mem, frame.pc);
  if (kind != arch::Sigreturn::None) return signal_step(ops, frame, kind, mem, modules, caller);

  // 4. Go's frame-size table: exact for a Go function, where the frame-pointer walk would skip
  //    the caller of a function that sets up no frame.
  if (options.source == SourcePreference::Auto && module != nullptr) {
    auto rec = go_step(frame, *module, mem, limits);
    if (rec) {
      auto out = finish(ops, std::move(*rec), FrameSource::GoPclntab, false, mem, modules, caller);
      // Outermost: a function Go's own traceback ends at, or a zero return address.
      if (out || out.error().reason == StopReason::Outermost) return out;
    }
  }

  // 5. Heuristics.
  if (!options.frame_pointer_fallback || options.source != SourcePreference::Auto) {
    return stop(reason, std::move(detail));
  }
  if (image != nullptr && frame.exact_pc && in_plt_stub(*image, module->to_link(frame.pc))) {
    // A PLT stub sets up no frame and (on aarch64 and s390x) has no CFI; it moves neither the
    // stack pointer nor the return address, so the caller is where the call left it, as at
    // a function's first instruction. GDB's PLT stub unwinders reason the same way.
    auto rec = ops.entry_step(frame.regs, mem);
    if (rec) {
      auto out = finish(ops, std::move(*rec), FrameSource::Scan, false, mem, modules, caller);
      if (out) return out;
    }
  }
  const bool jit = module == nullptr && modules.is_jit_code(frame.lookup_pc());
  // Not for JIT code: a pc there is no evidence of a call through a bad pointer.
  if (module == nullptr && frame.exact_pc && !jit) {
    auto rec = ops.entry_step(frame.regs, mem);
    if (rec) {
      auto out = finish(ops, std::move(*rec), FrameSource::Scan, false, mem, modules, caller);
      if (out) return out;
    }
  }
  if (jit) detail = hex(frame.pc) + " is JIT code (executable memory in no module)";
  return no_table_step(ops, frame, module, mem, modules, limits, caller, reason, detail);
}

}  // namespace ehbt::unwind
