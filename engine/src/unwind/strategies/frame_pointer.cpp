// SPDX-License-Identifier: Apache-2.0
#include "unwind/strategies/frame_pointer.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "arch/call_site.hpp"
#include "arch/jit_prologue.hpp"
#include "ehbt/perf_map.hpp"
#include "unwind/describe.hpp"

namespace ehbt::unwind {

namespace {

// The proof of a frame-pointer candidate. A frame record's return address may be one a runtime
// planted (V8's deoptimised frames return into the interpreter's entry): asked only when the
// ordinary proof fails, so a walk of ordinary frames never looks up a name for it.
// A return address into JIT code (executable memory no file backs) needs no call before it:
// HotSpot's interpreter pushes its own return entry (after a `jmp` of the previous bytecode's
// dispatch) and jumps to the callee. The record is then proven by the stack alone: the caller's
// CFA above the callee's sp in readable stack (and, as for every frame, increasing).
std::optional<std::string> disprove_record(StepContext& ctx, const arch::Recovered& rec,
                                           bool& planted) {
  planted = false;
  auto no = disprove(ctx, rec, "frame pointer", false, true);
  if (no && planted_return(ctx, rec)) {
    planted = true;
    no = disprove(ctx, rec, "frame pointer", true);
  } else if (no && rec.regs.pc() != 0 && ctx.modules.is_jit_code(rec.regs.pc())) {
    no = disprove(ctx, rec, "frame pointer", true);
  }
  return no;
}

// Bytes of a call's target searched for the indirect jump that makes it a dispatch stub: HotSpot's
// vtable stub is 23 bytes (load the receiver's class, its vtable entry, jump through the
// method's entry), an itable stub under 64.
constexpr std::size_t kStubBytes = 64;

// Whether the direct call's `target` is a dispatch stub in JIT code: code no file backs that jumps
// through a register or memory within its first kStubBytes (HotSpot's vtable and itable stubs,
// which megamorphic virtual calls call instead of the method). Such a call may reach any
// method, the frame being stepped too: its return address may be that frame's caller's.
bool dispatch_stub(StepContext& ctx, uint64_t target) {
  if (!ctx.modules.is_jit_code(target)) return false;
  std::array<std::byte, kStubBytes> code{};
  const std::size_t n = ctx.mem.read(target, code);
  const std::span<const std::byte> bytes(code.data(), n);
  for (std::size_t off = 0; off < n; ++off)
    if (arch::indirect_jump(ctx.ops.info().arch, bytes, off)) return true;
  return false;
}

// How the word `v` found in a JIT frame may be its caller's return address, by the direct call
// before it (see skipped_return), or "" when that call proves nothing: a call to the
// instruction right after it (generated code reads its pc that way), a return address into
// this frame's code between the call's target and the pc (a call the frame made), a call
// through a register, or a call that cannot have come here.
std::string direct_call_here(StepContext& ctx, uint64_t v) {
  auto call = arch::call_before(ctx.ops.info().arch, ctx.mem, v);
  if (!call || !call->target) return {};
  const uint64_t target = *call->target;
  const uint64_t pc = ctx.frame.pc;
  if (target >= v && target - v < 16) return {};
  const bool to_this_code = target <= pc && pc - target < ctx.limits.max_tail_jump_bytes;
  if (to_this_code && v > target && v <= pc) return {};
  if (to_this_code) return "after a call to " + hex(target);
  if (dispatch_stub(ctx, target)) {
    return "after a call to the dispatch stub at " + hex(target) +
           ", which jumps on through memory or a register";
  }
  return {};
}

// JIT code may use the frame-pointer register as any other (HotSpot's C2 without
// -XX:+PreserveFramePointer pushes the caller's rbp and leaves it alone): the record it points
// to is then an older frame's, and following it would silently skip every frame in between.
// The JIT frame's own caller left its return address between the frame's sp and that record:
// a word there that a direct call precedes disproves the record when the call may have come to
// this frame:
//  - the call goes to the code of this frame (its target at most Limits::max_tail_jump_bytes
//    before the frame's pc, the bound used for a function of unknown size);
//  - or it goes to a dispatch stub in JIT code (a megamorphic virtual call: the call names the
//    stub, the stub jumps to the method through memory), which may have jumped here.
//  - or the word is an address in JIT code right above a copy of the frame-pointer register
//    (the record it points to): what a prologue's `push rbp` leaves above the return address
//    of a frame that keeps no frame pointer. HotSpot's interpreter pushes its own return entry
//    (no call precedes it) before it jumps to a compiled method: a compiled frame called from
//    an interpreted one shows only this pair. Whether the pair is live or stale, the word may
//    be the return address of a frame following rbp would skip: the walk stops.
// Stale words the frame's own calls left (a return address from a call the frame made, into the
// VM or a stub) do not count: return addresses into the frame's own code (its perf-map entry;
// else, for a call to this code, between the call's target and the pc) and calls to the next
// instruction; nor does a call through a register, which proves nothing. Words examined: at most
// Limits::max_scan_words, from sp up to the record the frame-pointer register points to (s390x's
// back chain sits at sp: nothing to examine there).
std::optional<std::string> skipped_return(StepContext& ctx) {
  if (!ctx.frame.jit) return std::nullopt;
  const ArchInfo& info = ctx.ops.info();
  const unsigned word = info.address_size;
  if (!ctx.frame.regs.has(info.sp_reg) || !ctx.frame.regs.has(info.fp_reg)) return std::nullopt;
  const uint64_t sp = ctx.frame.regs.raw(info.sp_reg);
  const uint64_t pc = ctx.frame.pc;
  const uint64_t record = ctx.frame.regs.raw(info.fp_reg);  // where the step read its record
  const PerfMapEntry* own = ctx.frame.jit_entry;
  uint64_t below = 0;  // the word under `at` (past sp): a pushed frame pointer when it is `record`
  uint32_t seen = 0;
  for (uint64_t at = sp; at < record && seen < ctx.limits.max_scan_words; at += word, ++seen) {
    uint64_t v = 0;
    if (!ctx.mem.read_uint(at, word, false, v)) break;
    const bool pushed_fp_below = at != sp && below == record;
    below = v;
    if (v == 0 || !ctx.ops.plausible_pc(v)) continue;
    // A return address into this frame's own code is from a call the frame made.
    const bool own_code = own != nullptr && v >= own->start && v - own->start < own->size;
    if (own_code) continue;
    std::string how = direct_call_here(ctx, v);
    if (how.empty() && pushed_fp_below && v != pc && ctx.modules.is_jit_code(v))
      how = "in JIT code, right above a pushed copy of the frame record's address";
    if (how.empty()) continue;
    return "frame pointer: the JIT frame at " + hex(pc) +
           " keeps no frame pointer: return address " + hex(v) + " at " + hex(at) + " (" + how +
           ") lies between its sp " + hex(sp) + " and the frame record at " + hex(record);
  }
  return std::nullopt;
}

// Bytes at the start of a JIT frame's perf-map entry searched for HotSpot's prologue: the
// verified entry follows the inline-cache check of the unverified one (under 32 bytes), and a
// frame larger than a page is banged once per page (7 bytes each) before the `push`.
constexpr std::size_t kPrologueSearch = 64;

// The prologue at the start of the code of a JIT frame's perf-map entry `own` (HotSpot lists
// an nmethod from its first instruction: the unverified entry). Any match will do: HotSpot
// sizes all frames of an nmethod alike (an OSR nmethod's entry and C1's OSR entry build the
// same frame as its verified entry).
std::optional<arch::JitPrologue> entry_prologue(StepContext& ctx, const PerfMapEntry& own) {
  std::array<std::byte, kPrologueSearch + 15> code{};
  const std::size_t n = ctx.mem.read(own.start, code);
  const std::span<const std::byte> bytes(code.data(), std::min<std::size_t>(n, own.size));
  for (std::size_t off = 0; off < kPrologueSearch && off < bytes.size(); ++off)
    if (auto p = arch::hotspot_prologue(ctx.ops.info().arch, bytes, off)) return p;
  return std::nullopt;
}

// Whether the code around `pc` shows rsp elsewhere than the body's (arch::hotspot_sp_moved):
// the bytes from kEpilogueReach + 8 before pc (not before the entry's start) to 16 past it.
bool sp_moved_at(StepContext& ctx, const PerfMapEntry& own, uint64_t pc, uint64_t frame_bytes) {
  constexpr std::size_t kBefore = arch::kEpilogueReach + 8;
  std::array<std::byte, kBefore + 16> code{};
  const uint64_t from = pc - own.start > kBefore ? pc - kBefore : own.start;
  const std::size_t n = ctx.mem.read(from, code);
  return arch::hotspot_sp_moved(ctx.ops.info().arch, std::span<const std::byte>(code.data(), n),
                                pc - from, frame_bytes, !ctx.frame.exact_pc);
}

// A JIT frame of HotSpot's compiled code that keeps no frame pointer, sized by its prologue
// (entry_prologue): its return address S + 8 bytes above its sp, the caller's rbp below it.
// The size holds where the method's body has the frame, which the frame's pc must show:
//  - past the prologue, and rsp not moved at the pc (no epilogue of this frame just before
//    it, for a return address one followed by the reserved-stack check's call; no
//    instruction at it that puts rsp back: arch::hotspot_sp_moved);
//  - a return address (a caller frame) follows a call instruction: a call site of the method,
//    where HotSpot's frame is complete (a deoptimised frame's return address, patched to the
//    deoptimisation handler, follows none and is refused);
//  - an interrupted pc (a signal, the first frame) may be anywhere else the code does not
//    show (a stub of the method, the middle of an intrinsic): the return address read must
//    follow a call.
// Refused otherwise: where the prologue sets no frame pointer, `no_frame_pointer` says why (the
// walk stops: rbp is no record of this frame's, following it would skip the caller); else the
// frame-pointer chain takes over. A sized caller is proven as every frame-pointer caller is
// (disprove_record).
std::optional<arch::Recovered> hotspot_frame(StepContext& ctx, std::string& no_frame_pointer) {
  const PerfMapEntry* own = ctx.frame.jit_entry;
  const ArchInfo& info = ctx.ops.info();
  if (!ctx.frame.jit || own == nullptr || ctx.frame.planted || ctx.frame.signal_trampoline ||
      !ctx.frame.regs.has(info.sp_reg)) {
    return std::nullopt;
  }
  const uint64_t pc = ctx.frame.pc;
  auto prologue = entry_prologue(ctx, *own);
  if (!prologue || pc - own->start >= own->size) return std::nullopt;
  // From here on the method is known to keep no frame pointer (unless its prologue sets one):
  // a refusal is a stop, since rbp is no record of this frame's.
  auto refuse = [&](const char* why) -> std::optional<arch::Recovered> {
    if (!prologue->keeps_frame_pointer) {
      no_frame_pointer = "frame pointer: the JIT frame at " + hex(pc) +
                         " keeps no frame pointer (HotSpot's prologue ending at " +
                         hex(own->start + prologue->end) + " makes a frame of " +
                         std::to_string(prologue->frame_bytes + 2 * info.address_size) +
                         " bytes), and " + why;
    }
    return std::nullopt;
  };
  if (pc < own->start + prologue->end) return refuse("its pc is in that prologue");
  if (sp_moved_at(ctx, *own, pc, prologue->frame_bytes)) {
    return refuse(
        "the code at its pc may run with another sp (an epilogue, a call made with sp "
        "moved)");
  }
  if (!ctx.frame.exact_pc && !arch::call_before(info.arch, ctx.mem, pc)) {
    return refuse(
        "no call precedes its pc (a return address patched to a deoptimisation "
        "handler, or none)");
  }
  const unsigned word = info.address_size;
  const uint64_t sp = ctx.frame.regs.raw(info.sp_reg);
  if (sp % word != 0) return refuse("its sp is misaligned");
  const uint64_t slot = sp + prologue->frame_bytes + word;
  uint64_t ret = 0, saved_fp = 0;
  if (!ctx.mem.read_uint(slot, word, false, ret) ||
      !ctx.mem.read_uint(slot - word, word, false, saved_fp)) {
    return refuse("the stack where that frame keeps its return address cannot be read");
  }
  if (ctx.frame.exact_pc && !arch::call_before(info.arch, ctx.mem, ret)) {
    return refuse("no call precedes the word where that frame keeps its return address");
  }
  // As the frame-pointer step: the caller's pc, sp and rbp are known, no other register (no
  // register but rbp is callee-saved in HotSpot's compiled code).
  arch::Recovered rec;
  rec.cfa = slot + word;
  rec.regs = RegisterSet(info.arch);
  rec.regs.set_pc(ret);
  rec.regs.set(info.sp_reg, slot + word);
  rec.regs.set(info.fp_reg, saved_fp);
  return rec;
}

}  // namespace

Attempt FramePointerOnly::attempt(StepContext& ctx) {
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) return unexpected(recover_failure(rec.error(), "frame pointer"));
  bool planted = false;
  if (auto no = disprove_record(ctx, *rec, planted)) return stop(StopReason::NoUnwindInfo, *no);
  if (auto no = skipped_return(ctx)) return stop(StopReason::NoUnwindInfo, *no);
  return finish(ctx, std::move(*rec), FrameSource::FramePointer, false, planted);
}

Attempt FramePointerChain::attempt(StepContext& ctx) {
  bool planted = false;
  std::string no_frame_pointer;  // a HotSpot frame that keeps none, not sized here: why
  if (auto sized = hotspot_frame(ctx, no_frame_pointer)) {
    auto no = disprove_record(ctx, *sized, planted);
    if (!no) {
      auto out = finish(ctx, std::move(*sized), FrameSource::FramePointer, false, planted);
      if (out) return out;
      no = out.error().detail.empty() ? std::string("its return address is 0") : out.error().detail;
    }
    no_frame_pointer = "frame pointer: the JIT frame at " + hex(ctx.frame.pc) +
                       " keeps no frame pointer, and the caller its prologue's frame size "
                       "gives is disproven: " +
                       *no;
  }
  // rbp is no record of this frame's: following it could skip frames silently.
  if (!no_frame_pointer.empty()) return stop(StopReason::NoUnwindInfo, no_frame_pointer);
  auto rec = ctx.ops.frame_pointer_step_at(ctx.frame.regs, ctx.mem, ctx.code_hint());
  if (!rec) {
    ctx.fp_why = recover_failure(rec.error(), "frame pointer").detail;
  } else if (auto no = disprove_record(ctx, *rec, planted)) {
    ctx.fp_why = std::move(*no);
  } else if (auto skip = skipped_return(ctx)) {
    // No other fallback knows this frame's size: a scan would go on from an older frame's
    // return address as silently. The walk stops here.
    return stop(StopReason::NoUnwindInfo, *skip);
  } else {
    auto out = finish(ctx, std::move(*rec), FrameSource::FramePointer, false, planted);
    if (out) return out;
    ctx.fp_why =
        "frame pointer: " + (out.error().detail.empty()
                                 ? std::string("the return address in the frame record is 0")
                                 : out.error().detail);
  }
  // A JIT frame neither its prologue (hotspot_frame) nor a frame record sizes: JIT code may
  // keep no frame pointer, and a stack scan (nothing tells where the frame's function starts,
  // to check a call against) could go on from any older frame's return address. The walk
  // stops here.
  if (ctx.frame.jit) {
    return stop(StopReason::NoUnwindInfo,
                ctx.fp_why + "; nothing else sizes the JIT frame at " + hex(ctx.frame.pc) +
                    (ctx.frame.jit_entry == nullptr
                         ? " (no perf-map entry names its code)"
                         : " (no HotSpot prologue in its perf-map entry that its pc allows)") +
                    ", and a stack scan could skip its callers");
  }
  return std::nullopt;
}

}  // namespace ehbt::unwind
