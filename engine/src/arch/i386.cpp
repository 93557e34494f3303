// SPDX-License-Identifier: Apache-2.0
// i386 (System V i386 psABI, Linux): the registers and their names, callee-saved registers,
// the core's register block, the two sigreturn trampolines and the kernel's two signal frames
// (old `sigframe` and `rt_sigframe`), the ebp chain.
#include <elf.h>

#include <array>

#include "arch/arch_data.hpp"
#include "arch/arch_ops.hpp"

namespace ehbt::arch {

// i386 SysV psABI (and GCC/GDB): eax 0, ecx 1, edx 2, ebx 3, esp 4, ebp 5, esi 6, edi 7,
// eip 8 (the return-address column), eflags 9. Linux keeps the stack 16-byte aligned at calls
// since gcc 4.5, but code built for the old 4-byte ABI still runs: frames keep 4.
const ArchInfo kI386Info{Arch::I386, "i386", EM_386, false, 4, 4, 5, 8, 10, 0, 4};

namespace {

// DWARF numbers (i386 psABI; GCC and GDB agree): eax ecx edx ebx esp ebp esi edi.
constexpr uint16_t kEax = 0, kEcx = 1, kEdx = 2, kEbx = 3, kEsp = 4, kEbp = 5, kEsi = 6, kEdi = 7;
constexpr uint16_t kEflags = 9;
constexpr uint64_t kWord = 4;

// The vDSO's __kernel_sigreturn, glibc's __restore and the retcode the kernel (and qemu-user)
// writes into a sigframe when no SA_RESTORER was given: `pop %eax; mov $119,%eax; int $0x80`
// (119 = __NR_sigreturn). The pop drops the signal number the handler was called with.
constexpr std::array<uint8_t, 8> kSigreturnCode = {0x58, 0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80};
// __kernel_rt_sigreturn and glibc's __restore_rt: `mov $173,%eax; int $0x80`.
constexpr std::array<uint8_t, 7> kRtSigreturnCode = {0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80};

// Both frames (arch/x86/include/asm/sigframe.h, 32-bit) start with `pretcode`, which the
// handler's `ret` pops: at the trampoline esp points at the next field, `int sig`.
// struct sigframe: pretcode, sig, struct sigcontext sc, ... -> sc at esp + 4.
constexpr uint64_t kSigframeSc = 4;
// struct rt_sigframe: pretcode, sig, siginfo* pinfo, void* puc, siginfo info, ucontext uc...
// puc (at esp + 8) points at uc; in struct ucontext (uc_flags, uc_link, stack_t uc_stack of
// 3 words) uc_mcontext, the sigcontext, is at +20.
constexpr uint64_t kRtSigframePuc = 8;
constexpr uint64_t kUcMcontextOffset = 20;

// struct sigcontext (uapi/asm/sigcontext.h, __i386__), u32 each: gs fs es ds edi esi ebp esp
// ebx edx ecx eax trapno err eip cs eflags esp_at_signal ss.
constexpr unsigned kScWords = 17;  // through eflags
constexpr std::array<uint16_t, 8> kScDwarf = {kEdi, kEsi, kEbp, kEsp, kEbx, kEdx, kEcx, kEax};
constexpr unsigned kScEdi = 4, kScEip = 14, kScEflags = 16;

// elf_gregset_t is struct user_regs_struct (/usr/i686-linux-gnu/include/sys/user.h), 17 u32:
// ebx ecx edx esi edi ebp eax xds xes xfs xgs orig_eax eip xcs eflags esp xss.
constexpr std::array<GregSlot, 9> kGregs = {{{kEax, 4 * 6},
                                             {kEcx, 4 * 1},
                                             {kEdx, 4 * 2},
                                             {kEbx, 4 * 0},
                                             {kEsp, 4 * 15},
                                             {kEbp, 4 * 5},
                                             {kEsi, 4 * 3},
                                             {kEdi, 4 * 4},
                                             {kEflags, 4 * 14}}};
constexpr GregsetLayout kGregset{17 * 4, 4, kGregs, 4 * 12};

// i386 psABI numbering (GCC and GDB agree): 0-7 the general registers, 8 eip, 9 eflags,
// 11-18 st0-st7, 21-28 xmm0-xmm7, 29-36 mm0-mm7, 40-45 es cs ss ds fs gs.
constexpr std::array<std::string_view, 10> kRegNames = {"eax", "ecx", "edx", "ebx", "esp",
                                                        "ebp", "esi", "edi", "eip", "eflags"};
constexpr uint16_t kEip = 8;
constexpr std::array<std::string_view, 6> kSegNames = {"es", "cs", "ss", "ds", "fs", "gs"};

class I386Ops final : public ArchOps {
 public:
  // SFrame defines no i386 ABI: empty SFrameRules.
  I386Ops() : ArchOps(kI386Info, kGregset, SFrameRules{}) {
    for (uint16_t r : {kEbx, kEsi, kEdi, kEbp, kEsp}) add_callee_saved(r);
  }

  std::string register_name(uint16_t reg) const override {
    if (reg < kRegNames.size()) return std::string(kRegNames[reg]);
    if (reg >= 11 && reg <= 18) return "st" + std::to_string(reg - 11);
    if (reg >= 21 && reg <= 28) return "xmm" + std::to_string(reg - 21);
    if (reg >= 29 && reg <= 36) return "mm" + std::to_string(reg - 29);
    if (reg >= 40 && reg <= 45) return std::string(kSegNames[reg - 40]);
    return "";
  }

  DebuggerRegisters debugger_registers() const override {
    return {kEip, kRegNames[kEip], kRegNames[kEsp]};  // eax..edi
  }

  // Every 32-bit address can hold user code (a compat task on a 64-bit kernel has all 4 GiB).
  bool plausible_pc(uint64_t pc) const override { return pc <= UINT32_MAX; }

  // Also at the `mov` of __kernel_sigreturn (a thread stopped right after its `pop`): the
  // sigcontext is then at esp itself (see recover_signal).
  Sigreturn sigreturn_at(Memory& mem, uint64_t pc) const override {
    if (code_at(mem, pc, kRtSigreturnCode)) return Sigreturn::Rt;
    if (code_at(mem, pc, kSigreturnCode)) return Sigreturn::NonRt;
    if (pc > 0 && code_at(mem, pc - 1, kSigreturnCode)) return Sigreturn::NonRt;
    return Sigreturn::None;
  }

  RecoverResult recover_signal(const RegisterSet& regs, Sigreturn kind,
                               Memory& mem) const override {
    if (kind == Sigreturn::None) return unexpected(not_applicable("not a sigreturn frame"));
    if (!regs.has(kEsp)) return unexpected(not_applicable("esp unknown at the trampoline"));
    const uint64_t sp = regs.raw(kEsp);
    uint64_t sc = sp + kSigframeSc;
    // Past the `pop %eax`, the signal number is gone and esp is at the sigcontext.
    if (kind == Sigreturn::NonRt && !code_at(mem, regs.pc(), kSigreturnCode)) sc = sp;
    if (kind == Sigreturn::Rt) {
      uint64_t puc = 0;
      if (!read_word(mem, sp + kRtSigframePuc, puc))
        return unexpected(fault(sp + kRtSigframePuc, kWord));
      sc = puc + kUcMcontextOffset;
    }
    std::array<std::byte, kScWords * kWord> block;
    if (!mem.read_exact(sc, block)) return unexpected(fault(sc, block.size()));
    Recovered out;
    out.regs = RegisterSet(Arch::I386);
    for (unsigned i = 0; i < kScDwarf.size(); ++i)
      out.regs.set(kScDwarf[i], word_at(block.data(), kScEdi + i));
    out.regs.set(kEflags, word_at(block.data(), kScEflags));
    out.regs.set_pc(word_at(block.data(), kScEip));
    out.cfa = out.regs.raw(kEsp);
    return out;
  }

  // push %ebp; mov %esp,%ebp: [ebp] = caller's ebp, [ebp+4] = return address, CFA = ebp+8.
  RecoverResult frame_pointer_step(const RegisterSet& regs, Memory& mem) const override {
    auto rec = read_frame_record(regs, mem, kEbp);
    if (!rec) return unexpected(rec.error());
    const uint64_t cfa = rec->at + 2 * kWord;
    Recovered out;
    out.regs = RegisterSet(Arch::I386);
    out.regs.set(kEbp, rec->saved_fp);
    out.regs.set(kEsp, cfa);
    out.regs.set_pc(rec->return_address);
    out.cfa = cfa;
    return out;
  }

  // At a function's first instruction the call has just pushed the return address.
  RecoverResult entry_step(const RegisterSet& regs, Memory& mem) const override {
    if (!regs.has(kEsp)) return unexpected(not_applicable("esp unknown"));
    const uint64_t sp = regs.raw(kEsp);
    if (sp % kWord != 0) return unexpected(not_applicable("esp is misaligned"));
    uint64_t ra = 0;
    if (!read_word(mem, sp, ra)) return unexpected(fault(sp, kWord));
    Recovered out;
    out.regs = keep_callee_saved(regs);
    out.regs.set(kEsp, sp + kWord);
    out.regs.set_pc(ra);
    out.cfa = sp + kWord;
    return out;
  }
};

}  // namespace

const ArchOps& i386_ops() {
  static const I386Ops ops;
  return ops;
}

}  // namespace ehbt::arch
