// SPDX-License-Identifier: Apache-2.0
// AArch64 (AAPCS64, Linux): the registers and their names, callee-saved registers, the core's
// register block, pointer-authentication stripping, the rt_sigreturn trampoline and the
// kernel's signal frame, the x29 frame-record chain (with the caller's sp from the prologue
// when the step loop knows the code).
#include <elf.h>

#include <array>
#include <cstring>
#include <optional>

#include "arch/aarch64_prologue.hpp"
#include "arch/arch_data.hpp"
#include "arch/arch_ops.hpp"

namespace ehbt::arch {

// AAPCS64: x0-x30 0-30 (x29 frame pointer, x30 link register), sp 31, d8-d15 72-79.
const ArchInfo kAArch64Info{Arch::AArch64, "aarch64", EM_AARCH64, false, 8, 31, 29, 30, 96, 0, 16};

namespace {

constexpr uint16_t kX29 = 29, kX30 = 30, kSp = 31, kPc = 32;
constexpr std::string_view kSpName = "sp", kPcName = "pc";

// `mov x8, #139; svc #0` (139 = __NR_rt_sigreturn), the vDSO's __kernel_rt_sigreturn, as
// little-endian instruction words d2801168 d4000001.
constexpr std::array<uint8_t, 8> kRtSigreturnCode = {0x68, 0x11, 0x80, 0xd2,
                                                     0x01, 0x00, 0x00, 0xd4};

// Signal frame (arch/arm64/kernel/signal.c): the kernel points sp at struct rt_sigframe
// { struct siginfo info; struct ucontext uc; } and the handler returns with sp unchanged.
constexpr uint64_t kSiginfoSize = 128;
// struct ucontext (arch/arm64/include/uapi/asm/ucontext.h): uc_flags, uc_link, uc_stack (24),
// uc_sigmask (8), padding to a 1024-bit sigset (120), then uc_mcontext aligned to 16.
constexpr uint64_t kUcMcontextOffset = 176;
// struct sigcontext (uapi/asm/sigcontext.h): fault_address, regs[31], sp, pc, pstate.
constexpr uint64_t kScRegsOffset = 8;
constexpr unsigned kScWords = 33;  // x0..x30, sp, pc
constexpr unsigned kScSp = 31, kScPc = 32;
constexpr uint64_t kSigcontextRegs = kSiginfoSize + kUcMcontextOffset + kScRegsOffset;

// Linux user space uses 48-bit virtual addresses unless a program asks for 52 bits; the bits
// above hold a pointer-authentication code and/or a top-byte tag (TBI).
constexpr unsigned kVaBits = 48;
constexpr uint64_t kVaMask = (1ull << kVaBits) - 1;
constexpr uint64_t kUserLimit = 1ull << 52;

// elf_gregset_t is struct user_pt_regs (uapi/asm/ptrace.h), 34 words: regs[31] (x0-x30), sp,
// pc, pstate.
constexpr std::array<GregSlot, 32> kGregs = [] {
  std::array<GregSlot, 32> slots{};
  for (uint16_t r = 0; r <= kSp; ++r) slots[r] = {r, static_cast<uint16_t>(8 * r)};
  return slots;
}();
constexpr GregsetLayout kGregset{34 * 8, 8, kGregs, 8 * 32};

// SFRAME_ABI_AARCH64_ENDIAN_LITTLE and _BIG; default FRE words: CFA, RA, FP, no padding.
constexpr SFrameRules kSFrame{.abi_little = 2, .abi_big = 1, .pauth = true};

class AArch64Ops final : public ArchOps {
 public:
  AArch64Ops() : ArchOps(kAArch64Info, kGregset, kSFrame) {
    for (uint16_t r = 19; r <= kX30; ++r) add_callee_saved(r);  // x19-x28, fp, lr
    add_callee_saved(kSp);
    for (uint16_t r = 72; r <= 79; ++r) add_callee_saved(r);  // d8-d15
  }

  // AArch64 DWARF (aadwarf64): 0-30 x0-x30, 31 sp, 32 pc, 33 ELR_mode, 34 RA_SIGN_STATE,
  // 46 VG, 64-95 v0-v31.
  std::string register_name(uint16_t reg) const override {
    if (reg < kSp) return "x" + std::to_string(reg);
    if (reg >= 64 && reg < 96) return "v" + std::to_string(reg - 64);
    switch (reg) {
      case kSp:
        return std::string(kSpName);
      case kPc:
        return std::string(kPcName);
      case 33:
        return "elr_mode";
      case 34:
        return "ra_sign_state";
      case 46:
        return "vg";
      default:
        return "";
    }
  }

  DebuggerRegisters debugger_registers() const override {
    return {kPc, kPcName, kSpName};  // x0..x30, sp
  }

  std::span<const std::string_view> register_aliases(std::string_view name) const override {
    // LLDB's primary names of x29, x30 and sp (its register info lists x29/x30/x31 second).
    static constexpr std::array<std::string_view, 1> kFp{"fp"}, kLr{"lr"}, kX31{"x31"};
    if (name == "x29") return kFp;
    if (name == "x30") return kLr;
    if (name == kSpName) return kX31;
    return {};
  }

  uint64_t strip_return_address(uint64_t ra) const override { return ra & kVaMask; }

  bool plausible_pc(uint64_t pc) const override { return pc < kUserLimit && pc % 4 == 0; }

  Sigreturn sigreturn_at(Memory& mem, uint64_t pc) const override {
    return code_at(mem, pc, kRtSigreturnCode) ? Sigreturn::Rt : Sigreturn::None;
  }

  RecoverResult recover_signal(const RegisterSet& regs, Sigreturn kind,
                               Memory& mem) const override {
    if (kind != Sigreturn::Rt) return unexpected(not_applicable("not an rt_sigreturn frame"));
    if (!regs.has(kSp)) return unexpected(not_applicable("sp unknown at the trampoline"));
    const uint64_t at = regs.raw(kSp) + kSigcontextRegs;
    std::array<std::byte, kScWords * 8> block;
    if (!mem.read_exact(at, block)) return unexpected(fault(at, block.size()));
    Recovered out;
    out.regs = RegisterSet(Arch::AArch64);
    for (unsigned i = 0; i <= kX30; ++i)
      out.regs.set(static_cast<uint16_t>(i), word_at(block.data(), i));
    out.regs.set(kSp, word_at(block.data(), kScSp));
    out.regs.set_pc(word_at(block.data(), kScPc));
    out.cfa = out.regs.raw(kSp);
    return out;
  }

  // A frame record {x29, x30} sits where x29 points. The record does not say how far above
  // it the caller's sp is (gcc puts it at the bottom of the frame, clang at the top), so sp
  // stays unknown rather than guessed.
  RecoverResult frame_pointer_step(const RegisterSet& regs, Memory& mem) const override {
    auto rec = read_frame_record(regs, mem, kX29);
    if (!rec) return unexpected(rec.error());
    const uint64_t fp = rec->at;
    Recovered out;
    out.regs = RegisterSet(Arch::AArch64);
    out.regs.set(kX29, rec->saved_fp);
    out.regs.set(kX30, rec->return_address);
    out.regs.set_pc(strip_return_address(rec->return_address));
    out.cfa = fp + 16;
    return out;
  }

  // The record gives the caller's x29 and pc; the prologue of the frame's function gives the
  // caller's sp, its CFA (see aarch64_prologue.hpp). When the prologue is not one the decoder
  // follows, or the CFA fails the checks below, sp stays unknown as in frame_pointer_step.
  RecoverResult frame_pointer_step_at(const RegisterSet& regs, Memory& mem,
                                      const CodeHint& code) const override {
    auto rec = frame_pointer_step(regs, mem);
    if (!rec) return rec;
    if (auto cfa = cfa_from_prologue(regs, mem, code)) {
      rec->cfa = *cfa;
      rec->regs.set(kSp, *cfa);
    }
    return rec;
  }

  // At a function's first instruction the return address is still in x30.
  RecoverResult entry_step(const RegisterSet& regs, Memory&) const override {
    if (!regs.has(kSp) || !regs.has(kX30)) return unexpected(not_applicable("sp or x30 unknown"));
    Recovered out;
    out.regs = keep_callee_saved(regs);
    out.regs.set_pc(strip_return_address(regs.raw(kX30)));
    out.cfa = regs.raw(kSp);
    return out;
  }

 private:
  // The CFA of the frame (the caller's sp) from its function's prologue, or nothing. The start
  // is the symbol's when the step loop found one, else found by scanning back. The result must
  // pass checks that hold for any AArch64 frame: 16-byte aligned (AAPCS64 keeps sp so at
  // calls), above the frame's sp, and at least a whole frame record above x29.
  std::optional<uint64_t> cfa_from_prologue(const RegisterSet& regs, Memory& mem,
                                            const CodeHint& code) const {
    const uint64_t pc = regs.pc();
    const uint64_t fp = regs.raw(kX29);
    uint64_t start = 0;
    if (const std::optional<uint64_t> known = code.function_start()) {
      start = *known;
    } else {
      auto found = aarch64::find_function_start(mem, pc, code.limits.max_prologue_scan);
      if (!found) return std::nullopt;
      start = *found;
    }
    if (start > pc) return std::nullopt;
    auto frame = aarch64::analyse_prologue(mem, start, pc, code.limits.max_prologue_insns);
    if (!frame || fp > UINT64_MAX - frame->cfa_from_fp) return std::nullopt;
    const uint64_t cfa = fp + frame->cfa_from_fp;
    if (cfa % 16 != 0 || cfa - fp < 16) return std::nullopt;
    if (regs.has(kSp) && cfa <= regs.raw(kSp)) return std::nullopt;
    return cfa;
  }
};

}  // namespace

const ArchOps& aarch64_ops() {
  static const AArch64Ops ops;
  return ops;
}

}  // namespace ehbt::arch
