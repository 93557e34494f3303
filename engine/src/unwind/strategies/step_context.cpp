// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/step_context.hpp"

#include "unwind/describe.hpp"
#include "unwind/go_step.hpp"
#include "unwind/scan_step.hpp"
#include "unwind/step.hpp"
#include "unwind/validate.hpp"

namespace ehbt::unwind {

// A frame-pointer step whose caller called from within the same module or from JIT code never
// asks for the function's start; where no symbol covers the pc, the arch layer may look for
// the start in the code itself.
const arch::CodeHint& StepContext::code_hint() {
  if (hint_) return *hint_;
  arch::CodeHint& hint = hint_.emplace();
  hint.limits = limits;
  if (image == nullptr) return hint;
  hint.find_function_start_with([&frame = frame, module = module, image = image,
                                 &limits = limits]() -> std::optional<uint64_t> {
    // In a Go function, Go's table says where it starts, as the symbol made from that table
    // would: one search instead of a symbol lookup that may build the image's whole table.
    if (auto start = go_function_start(frame, *module, limits)) return start;
    if (auto sym = image->symbolize(module->to_link(frame.lookup_pc())))
      return sym->start + module->bias;
    return std::nullopt;
  });
  return hint;
}

Unexpected<StopInfo> stop(StopReason reason, std::string detail, uint64_t cfa) {
  return unexpected(StopInfo{reason, std::move(detail), cfa});
}

StopInfo recover_failure(const arch::RecoverFailure& f, const char* what) {
  if (f.kind == arch::RecoverError::MemoryFault) {
    return StopInfo{StopReason::MemoryFault, read_failed(f.addr, f.size) + " (" + what + ")", 0};
  }
  return StopInfo{StopReason::NoUnwindInfo, std::string(what) + ": " + f.why, 0};
}

std::optional<StopInfo> validate_caller(StepContext& ctx, uint64_t cfa, bool from_signal,
                                        const Module* hint) {
  Frame& caller = ctx.caller;
  const uint64_t pc = caller.pc;
  if (pc == 0 && !from_signal) {
    // A zero return address ends a walk only where the frame's stack pointer is known. A frame
    // found by stack scanning has its sp from the word the scan took for its return address: a
    // zero read at that guess proves no outermost frame (past a coroutine's stack, main's
    // saved context, then zeroed data: issue #32).
    if (ctx.frame.source == FrameSource::Scan) {
      return StopInfo{StopReason::NoUnwindInfo, kScannedZeroReturn, cfa};
    }
    return StopInfo{StopReason::Outermost, "", cfa};
  }
  if (!ctx.ops.plausible_pc(pc)) {
    return StopInfo{StopReason::BadPc, "caller pc " + hex(pc) + " is not a code address", cfa};
  }
  const uint64_t lookup = caller.lookup_pc();
  caller.module = ctx.modules.find(lookup, hint);
  caller.classify_jit(ctx.modules);
  if (from_signal) return std::nullopt;
  if (caller.module != nullptr) {
    const Image* image = caller.module->image.get();
    if (image != nullptr && !image->is_executable(caller.module->to_link(lookup))) {
      return StopInfo{StopReason::BadPc,
                      "caller pc " + describe_pc(pc, caller.module) + " is not executable", cfa};
    }
    return std::nullopt;
  }
  if (ctx.modules.modules().empty()) return std::nullopt;
  if (caller.jit) return std::nullopt;  // JIT code: code, though in no module
  if (ctx.ops.sigreturn_at(ctx.mem, pc) != arch::Sigreturn::None) return std::nullopt;
  return StopInfo{StopReason::BadPc, "caller pc " + hex(pc) + " is in no module", cfa};
}

std::optional<Frame> candidate_frame(const StepContext& ctx, const arch::Recovered& rec) {
  Frame caller;
  caller.pc = rec.regs.pc();
  caller.regs = rec.regs;
  caller.source = FrameSource::Scan;
  caller.exact_pc = false;
  caller.module = ctx.modules.find(caller.lookup_pc());
  if (caller.module == nullptr || !caller.module->image) return std::nullopt;
  return caller;
}

namespace {

// The frame's stack pointer, 0 where it is not known (the proof's checks of the stack then
// say so).
uint64_t sp_of(const StepContext& ctx, const Frame& frame) {
  const unsigned sp_reg = ctx.ops.info().sp_reg;
  return frame.regs.has(sp_reg) ? frame.regs.raw(sp_reg) : 0;
}

// A candidate caller after a call through a register, for a callee whose start nothing says, is
// proven by the frame above it: the candidate's own unwind table (its .eh_frame FDE), stepped
// from the stack pointer the candidate gives, reads a return address that a direct call
// precedes, to the candidate's function (its FDE's start), or to a PLT stub or a tail-jump chain
// leading there. A stale word after an indirect call places its frame at a wrong stack pointer,
// where its table reads some other word. (glibc's __libc_start_call_main calls main through a
// register; its caller, __libc_start_main, calls it directly.) Or, where that frame was called
// through a register too, its own table ends the walk right above it. Only the CFI is asked
// (source eh_frame, fallbacks off: nothing else proves more, whatever the walk's --source), and
// never recursively: no strategy of such a step asks for a proof, and the nested memo refuses
// one besides, so a proof costs two table steps at most.
bool proven_by_the_next_frame(StepContext& ctx, const arch::Recovered& rec) {
  if (ctx.memo.nested) return false;
  auto candidate = candidate_frame(ctx, rec);
  if (!candidate) return false;
  const Frame& caller = *candidate;
  const uint64_t link = caller.module->to_link(caller.lookup_pc());
  auto fde =
      ctx.memo.get(*caller.module->image, ctx.limits).find_fde(dwarf::SectionKind::EhFrame, link);
  if (!fde) return false;
  UnwindOptions tables = ctx.options;
  tables.source = SourcePreference::EhFrame;  // the CFI alone: no strategy that asks for a proof
  tables.frame_pointer_fallback = false;
  Frame next;
  CfiMemo memo;
  memo.nested = true;
  auto cfa = step_frame(caller, ctx.mem, ctx.modules, tables, ctx.limits, memo, next);
  if (!cfa || next.pc == 0 || next.exact_pc) return false;
  const Callee callee{sp_of(ctx, caller), caller.lookup_pc(),
                      fde->first.pc_begin + caller.module->bias};
  uint64_t target = 0;
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};  // no nested proof
  if (disprove_caller(scan, callee, next.pc, *cfa, &target)) return false;
  if (target != 0) return true;
  // The frame above was called through a register too (glibc's clone3 calls start_thread so,
  // start_thread the thread's function): proven where that frame's own table ends the walk, its
  // return address undefined (clone3, _start: the first frame of a thread or of the process). A
  // zero read is no such end: stepped as a scanned frame, a zero return address is not outermost.
  next.source = FrameSource::Scan;
  Frame after;
  auto end = step_frame(next, ctx.mem, ctx.modules, tables, ctx.limits, memo, after);
  return !end && end.error().reason == StopReason::Outermost;
}

}  // namespace

ScanContext scan_context(StepContext& ctx) {
  return ScanContext{
      ctx.ops,
      ctx.mem,
      ctx.modules,
      ctx.limits,
      &ctx.memo.known_starts,
      [&ctx](const arch::Recovered& rec) { return proven_by_the_next_frame(ctx, rec); }};
}

bool planted_return(StepContext& ctx, const arch::Recovered& rec) {
  const ScanContext scan{ctx.ops, ctx.mem, ctx.modules, ctx.limits};
  return rec.regs.pc() != 0 && is_planted_return(scan, rec.regs.pc());
}

std::optional<std::string> disprove(StepContext& ctx, const arch::Recovered& rec, const char* what,
                                    bool planted, bool from_record) {
  const uint64_t ra = rec.regs.pc();
  if (ra == 0) return std::nullopt;
  const Callee callee{sp_of(ctx, ctx.frame), ctx.frame.lookup_pc(),
                      ctx.code_hint().function_start()};
  const ScanContext scan = scan_context(ctx);
  planted = planted || ctx.ops.sigreturn_at(ctx.mem, ra) != arch::Sigreturn::None;
  uint64_t target = 0;
  if (auto no = planted ? disprove_stack(scan, callee, rec.cfa)
                        : disprove_caller(scan, callee, ra, rec.cfa, &target)) {
    if (no->failure != ProofFailure::IndirectCall) return std::string(what) + ": " + no->detail;
    if (!from_record && !proven_by_the_next_frame(ctx, rec)) {
      return std::string(what) + ": " + no->detail +
             "; nor does its own table prove it (a direct call to it above)";
    }
  }
  if (target != 0) {
    ctx.proven_ra = ra;
    ctx.proven_target = target;
  }
  return std::nullopt;
}

StepOutcome finish(StepContext& ctx, arch::Recovered&& rec, FrameSource source, bool exact_pc,
                   bool planted) {
  Frame& caller = ctx.caller;
  caller.pc = rec.regs.pc();
  caller.source = source;
  caller.exact_pc = exact_pc;
  caller.planted = planted;
  caller.signal_trampoline = false;
  caller.cfa = 0;
  caller.regs = std::move(rec.regs);
  if (auto bad = validate_caller(ctx, rec.cfa, exact_pc)) return unexpected(std::move(*bad));
  return rec.cfa;
}

}  // namespace ehbt::unwind
