// SPDX-License-Identifier: Apache-2.0
#include "unwind/scan_step.hpp"

#include <cstddef>
#include <span>
#include <string_view>

#include "arch/aarch64_prologue.hpp"
#include "arch/call_site.hpp"
#include "unwind/code_bytes.hpp"
#include "unwind/validate.hpp"
#include "util/hex.hpp"

namespace ehbt::unwind {
namespace {

// Bytes after the entry point still taken as the entry stub when no symbol says where it
// ends (a stripped `_start` is a dozen instructions on every architecture).
constexpr uint64_t kEntryStubBytes = 64;

std::optional<arch::CallSite> call_in_module(const ScanContext& ctx, const Module& m, uint64_t ra) {
  CodeBytes code(ctx.mem, m);
  return arch::call_before(ctx.ops.info().arch, code, ra);
}

bool code_readable(const ScanContext& ctx, const Module& m, uint64_t addr) {
  CodeBytes code(ctx.mem, m);
  uint64_t probe = 0;
  return code.read_uint(addr, 1, false, probe);
}

bool is_plt_symbol(const std::string& name) {
  constexpr std::string_view kPlt = "@plt";
  return name.size() > kPlt.size() &&
         std::string_view(name).substr(name.size() - kPlt.size()) == kPlt;
}

// A direct call's target is compatible with the frame's function when it is its start, or a
// place that leads elsewhere (a PLT stub; code no symbol names, in the function's own module:
// a direct call reaches another module only through a PLT stub, so unnamed code elsewhere is
// some other function, as libc's local __libc_start_call_main is to a program's main).
bool compatible_target(const ScanContext& ctx, uint64_t target,
                       std::optional<uint64_t> function_start) {
  if (!function_start || target == *function_start) return true;
  const Module* m = ctx.modules.find(target);
  if (m == nullptr || !m->image) return true;
  auto sym = m->image->symbolize(m->to_link(target));
  if (!sym) return ctx.modules.find(*function_start) == m;
  return is_plt_symbol(sym->name);
}

// A return address into executable code of a known module (the link-time check uses ra - 1:
// the call may be the last instruction of its function) right after a compatible call.
bool valid_return_address(const ScanContext& ctx, uint64_t ra,
                          std::optional<uint64_t> function_start, bool need_proof) {
  if (ra == 0 || !ctx.ops.plausible_pc(ra)) return false;
  const Module* m = ctx.modules.find(ra - 1);
  if (m == nullptr || !m->image || !m->image->is_executable(m->to_link(ra - 1))) return false;
  auto call = call_in_module(ctx, *m, ra);
  if (!call) return false;
  if (need_proof) return call->target && function_start && *call->target == *function_start;
  return !call->target || compatible_target(ctx, *call->target, function_start);
}

// s390x: a prologue saves r14 together with r15 (`stmg %rN,%r15,D(%r15)`: r15 is the last
// register, so at least r14 and r15), and r15 at entry is the caller's sp, the address of the
// very save area it is stored in. A saved r14 whose neighbour is not that address is stale: a
// word left by an earlier call (qemu's and ld.so's leftovers in main's frame), not this one.
bool saved_sp_matches(const ScanContext& ctx, const arch::ScanLayout& at) {
  constexpr uint64_t kR15AfterR14 = 8;
  uint64_t saved = 0;
  return ctx.mem.read_uint(at.caller_sp + 112 + kR15AfterR14, 8, true, saved) &&
         saved == at.caller_sp;
}

arch::Recovered caller_at(const ScanContext& ctx, const Frame& frame, uint64_t ra, uint64_t sp,
                          uint64_t cfa) {
  arch::Recovered out;
  out.regs = RegisterSet(frame.regs.arch());
  // Registers the callee saves are assumed untouched: what a heuristic cannot know better.
  ctx.ops.copy_callee_saved(frame.regs, out.regs);
  out.regs.set(ctx.ops.info().sp_reg, sp);
  out.regs.set_pc(ra);
  out.cfa = cfa;
  return out;
}

}  // namespace

// One pass of the scan. What it passed over, for the stop detail: `region_end` where it
// stopped at the end of the stack's mapping, `rejected` why the last candidate failed its
// proof.
struct ScanNotes {
  std::string undecidable;
  uint64_t region_end = 0;
  std::string rejected;
  uint64_t target = 0;  // the direct call's target that proved the last candidate (0: none)
};
static std::optional<arch::Recovered> scan_pass(const ScanContext& ctx, const Frame& frame,
                                                std::optional<uint64_t> function_start, bool strict,
                                                const ScanCheck& accept, ScanNotes& notes);

bool in_entry_function(const Frame& frame, const Module* module,
                       std::optional<uint64_t> function_start) {
  if (module == nullptr || !module->image) return false;
  const uint64_t entry = module->image->entry();
  if (entry == 0) return false;
  if (function_start) return *function_start == entry + module->bias;
  const uint64_t link = module->to_link(frame.lookup_pc());
  return link >= entry && link - entry < kEntryStubBytes;
}

std::optional<arch::Recovered> infer_leaf(const ScanContext& ctx, const Frame& frame,
                                          const arch::CodeHint& code) {
  if (!frame.exact_pc) return std::nullopt;
  const std::optional<uint64_t> function_start = code.function_start();
  if (!function_start) return std::nullopt;
  const ArchInfo& info = ctx.ops.info();
  if (!frame.regs.has(info.sp_reg)) return std::nullopt;
  const uint64_t sp = frame.regs.raw(info.sp_reg);
  if (info.arch == Arch::X86_64 || info.arch == Arch::I386) {
    // The call pushed the return address at the stack pointer.
    const unsigned size = info.address_size;
    uint64_t word = 0;
    if (sp % size != 0 || !ctx.mem.read_uint(sp, size, false, word)) return std::nullopt;
    if (!valid_return_address(ctx, word, function_start, true)) return std::nullopt;
    return caller_at(ctx, frame, word, sp + size, sp + size);
  }
  if (!frame.regs.has(info.ra_reg)) return std::nullopt;
  const uint64_t ra = ctx.ops.strip_return_address(frame.regs.raw(info.ra_reg));
  if (!valid_return_address(ctx, ra, function_start, true)) return std::nullopt;
  return caller_at(ctx, frame, ra, sp, sp + static_cast<uint64_t>(info.cfa_sp_offset));
}

// aarch64: where the frame's function saved x30 and how far it lowered sp, from its code (see
// aarch64::analyse_lr_save), when that code is followed exactly: the one stack slot to take
// the return address from, and the caller's sp, which no scanned slot alone tells (gcc stores
// x30 at the bottom of a frame, `str x30, [sp, #-16]!`, so the caller's sp is not the slot's
// next word).
static std::optional<arch::Recovered> from_saved_lr(const ScanContext& ctx, const Frame& frame,
                                                    uint64_t function_start, uint64_t sp) {
  const Module* m = ctx.modules.find(function_start);
  if (m == nullptr || !m->image) return std::nullopt;
  CodeBytes code(ctx.mem, *m);
  auto saved =
      arch::aarch64::analyse_lr_save(code, function_start, frame.pc, ctx.limits.max_prologue_insns);
  if (!saved) return std::nullopt;
  const uint64_t cfa = sp + saved->depth;
  uint64_t value = 0;
  if (!ctx.mem.read_uint(cfa - saved->lr_off, 8, false, value)) return std::nullopt;
  const uint64_t ra = ctx.ops.strip_return_address(value);
  if (!valid_return_address(ctx, ra, function_start, false)) return std::nullopt;
  return caller_at(ctx, frame, ra, cfa, cfa);
}

Expected<arch::Recovered, std::string> scan_stack(const ScanContext& ctx, const Frame& frame,
                                                  std::optional<uint64_t> function_start,
                                                  const ScanCheck& accept, ScanProof* proof) {
  if (proof != nullptr) *proof = ScanProof{};
  const ArchInfo& info = ctx.ops.info();
  if (!frame.regs.has(info.sp_reg)) return unexpected(std::string("the stack pointer is unknown"));
  const uint64_t sp = frame.regs.raw(info.sp_reg);
  if (info.arch == Arch::AArch64 && function_start) {
    if (auto found = from_saved_lr(ctx, frame, *function_start, sp)) return *found;
  }
  const unsigned word = info.address_size;
  if (sp % word != 0) return unexpected(std::string("the stack pointer is misaligned"));
  // Return addresses lie at or above sp (s390x: in the caller's register save area).
  // Two passes: first only calls compatible with the frame's function; then, where none is,
  // any call (a sibling call hides the real callee: musl's _start_c jumps on to
  // __libc_start_main, which jumps to libc_start_main_stage2).
  ScanNotes notes;
  for (int pass = 0; pass < 2; ++pass) {
    const bool strict = pass == 0;
    if (!strict && !function_start) break;  // without a function, pass 0 accepted any call
    notes.undecidable.clear();
    if (auto found = scan_pass(ctx, frame, function_start, strict, accept, notes)) {
      if (proof != nullptr) *proof = ScanProof{true, notes.target};
      return *found;
    }
    if (!notes.undecidable.empty()) return unexpected(std::move(notes.undecidable));
  }
  std::string why =
      notes.region_end != 0
          ? "no return address between sp " + util::hex(sp) +
                " and the end of its stack mapping at " + util::hex(notes.region_end)
          : "no return address in " + std::to_string(ctx.limits.max_scan_words) + " stack words";
  if (!notes.rejected.empty()) why += " (the last candidate: " + notes.rejected + ")";
  return unexpected(std::move(why));
}

static std::optional<arch::Recovered> scan_pass(const ScanContext& ctx, const Frame& frame,
                                                std::optional<uint64_t> function_start, bool strict,
                                                const ScanCheck& accept, ScanNotes& notes) {
  const ArchInfo& info = ctx.ops.info();
  const uint64_t sp = frame.regs.raw(info.sp_reg);
  const unsigned word = info.address_size;
  // The stack the frame is on: the mapping that holds its sp (a thread's stack, an altstack, a
  // coroutine's array). What lies past its end is another mapping, never this frame's caller.
  const std::optional<MemoryRegion> stack = ctx.mem.region_of(sp);
  for (uint32_t i = 0; i < ctx.limits.max_scan_words; ++i) {
    const uint64_t slot = sp + uint64_t{i} * word;
    if (slot < sp) break;
    if (stack && (slot >= stack->end || stack->end - slot < word)) {
      notes.region_end = stack->end;
      break;
    }
    uint64_t value = 0;
    if (!ctx.mem.read_uint(slot, word, info.big_endian, value)) break;  // the stack's end
    const uint64_t ra = ctx.ops.strip_return_address(value);
    // A word pointing into a module whose file is missing may be a return address nobody
    // can check (the core holds no code there); passing over it would drop frames silently
    // and hand a later, checkable one to the wrong caller. The scan stops instead.
    if (const Module* m = ra != 0 ? ctx.modules.find(ra - 1) : nullptr;
        m != nullptr && !m->missing.empty() && !code_readable(ctx, *m, ra - 1)) {
      notes.undecidable = "cannot check " + util::hex(ra) + " on the stack: " + m->missing;
      return std::nullopt;
    }
    if (!valid_return_address(ctx, ra, strict ? function_start : std::nullopt, false)) continue;
    const arch::ScanLayout at = arch::scan_layout(info.arch, slot);
    // The caller's frame must lie above this one's stack pointer.
    if (at.caller_sp <= sp || at.cfa <= sp) continue;
    if (info.arch == Arch::S390x && !saved_sp_matches(ctx, at)) continue;
    // The proof every fallback's caller must pass (validate.hpp), here for each candidate: a
    // word that fails it is a stale return address of an earlier call, and the scan goes on
    // past it to the real one above.
    const Callee callee{sp, frame.lookup_pc(), function_start};
    auto no = disprove_caller(ctx, callee, ra, at.cfa, &notes.target);
    if (no && no->failure != ProofFailure::IndirectCall) {
      notes.rejected = std::move(no->detail);
      continue;
    }
    arch::Recovered found = caller_at(ctx, frame, ra, at.caller_sp, at.cfa);
    // After a call through a register to a callee whose start nothing says: the caller, or a
    // stale word of an earlier call. Unless the frame above it proves it, that is undecidable,
    // and passing over it would give the frame to whatever word above it nothing disproves.
    if (no && (!ctx.confirm_indirect || !ctx.confirm_indirect(found))) {
      notes.undecidable = "cannot prove " + util::hex(ra) + " on the stack: " + no->detail;
      return std::nullopt;
    }
    if (accept) {
      if (auto why = accept(found)) {
        notes.rejected = std::move(*why);
        continue;
      }
    }
    return found;
  }
  return std::nullopt;
}

}  // namespace ehbt::unwind
