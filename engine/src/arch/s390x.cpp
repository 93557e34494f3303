// SPDX-License-Identifier: Apache-2.0
// s390x (zSeries ELF ABI, Linux, big-endian): the registers and their names, callee-saved
// registers, the core's register block, the sigreturn and rt_sigreturn trampolines and the
// kernel's two signal frames, the optional backchain.
#include <elf.h>

#include <array>

#include "arch/arch_data.hpp"
#include "arch/arch_ops.hpp"

namespace ehbt::arch {

// s390x ELF ABI: r0-r15 0-15 (r15 stack pointer, r11 frame pointer, r14 return address),
// f0-f15 16-31; the CFA is the caller's r15 + 160 (the register save area).
const ArchInfo kS390xInfo{Arch::S390x, "s390x", EM_S390, true, 8, 15, 11, 14, 66, 160, 8};

namespace {

constexpr uint16_t kR14 = 14, kR15 = 15, kPswa = 65;
constexpr std::array<std::string_view, 16> kGprNames = {"r0",  "r1",  "r2",  "r3", "r4",  "r5",
                                                        "r6",  "r7",  "r8",  "r9", "r10", "r11",
                                                        "r12", "r13", "r14", "r15"};
constexpr std::string_view kPswaName = "pswa";

// The trampolines are a single `svc` instruction: 0a NN with NN the syscall number
// (173 = __NR_rt_sigreturn, 119 = __NR_sigreturn).
constexpr uint8_t kSvcOpcode = 0x0a;
constexpr uint8_t kNrRtSigreturn = 173;
constexpr uint8_t kNrSigreturn = 119;

// Every frame starts with the 160-byte register save area the callee may use
// (__SIGNAL_FRAMESIZE); r15 points at the signal frame when the handler returns.
constexpr uint64_t kSignalFramesize = 160;

// struct rt_sigframe (arch/s390/kernel/signal.c): callee_used_stack[160], __u16 svc_insn,
// struct siginfo info (8-aligned: offset 168, 128 bytes), struct ucontext_extended uc
// (offset 296). ucontext_extended (uapi/asm/ucontext.h): uc_flags (8), uc_link (8),
// uc_stack (24), then uc_mcontext (_sigregs) at +40.
constexpr uint64_t kRtSigregsOffset = kSignalFramesize + 8 + 128 + 40;

// sigframe (non-RT): callee_used_stack[160], then struct sigcontext { unsigned long
// oldmask[1]; _sigregs *sregs; } (uapi/asm/sigcontext.h, 64-bit: _SIGCONTEXT_NSIG_WORDS = 1).
constexpr uint64_t kSigcontextSregsOffset = kSignalFramesize + 8;

// _sigregs (uapi/asm/sigcontext.h) begins with _s390_regs_common: psw {mask, addr}, gprs[16].
constexpr unsigned kSigregsWords = 18;
constexpr unsigned kSigregsPswAddr = 1, kSigregsGpr0 = 2;

// The register save area of a frame holds r6..r15 at 48..127: r14 at 112.
constexpr uint64_t kSaveAreaR14 = 14 * 8;

// elf_gregset_t is s390_regs (uapi/asm/ptrace.h): psw {mask, addr}, gprs[16], acrs[16] (4
// bytes each), orig_gpr2.
constexpr std::array<GregSlot, 16> kGregs = [] {
  std::array<GregSlot, 16> slots{};
  for (uint16_t r = 0; r <= kR15; ++r) slots[r] = {r, static_cast<uint16_t>(16 + 8 * r)};
  return slots;
}();
constexpr GregsetLayout kGregset{16 + 16 * 8 + 16 * 4 + 8, 8, kGregs, 8};

// SFRAME_ABI_S390X_ENDIAN_BIG; default FRE words: CFA, RA (0: not saved), FP.
constexpr SFrameRules kSFrame{.abi_big = 4,
                              .ra_padding = true,
                              .scaled_cfa = true,
                              .v2_register_words = true,
                              .sp_copy_in_register = true};

class S390xOps final : public ArchOps {
 public:
  S390xOps() : ArchOps(kS390xInfo, kGregset, kSFrame) {
    for (uint16_t r = 6; r <= kR15; ++r) add_callee_saved(r);  // r6-r13, r14 (ra), r15 (sp)
    for (uint16_t r = 24; r <= 31; ++r) add_callee_saved(r);   // f8-f15
  }

  // s390x ELF ABI DWARF numbering: 0-15 r0-r15, 16-31 the floating-point registers in the
  // ABI's interleaved order, 32-47 cr0-cr15, 48-63 a0-a15, 64 pswm, 65 pswa.
  std::string register_name(uint16_t reg) const override {
    static constexpr std::array<int, 16> kFpr{0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    if (reg <= kR15) return std::string(kGprNames[reg]);
    if (reg <= 31) return "f" + std::to_string(kFpr[reg - 16]);
    if (reg <= 47) return "cr" + std::to_string(reg - 32);
    if (reg <= 63) return "a" + std::to_string(reg - 48);
    if (reg == 64) return "pswm";
    if (reg == kPswa) return std::string(kPswaName);
    return "";
  }

  DebuggerRegisters debugger_registers() const override {
    return {kR15 + 1, kPswaName, kGprNames[kR15]};  // r0..r15
  }

  std::span<const std::string_view> register_aliases(std::string_view name) const override {
    // GDB's s390 unwinds a caller's pc through its pseudo register "pc" (pswa's address bits).
    static constexpr std::array<std::string_view, 1> kPc{"pc"};
    return name == kPswaName ? std::span<const std::string_view>(kPc)
                             : std::span<const std::string_view>();
  }

  bool plausible_pc(uint64_t pc) const override { return pc % 2 == 0; }

  Sigreturn sigreturn_at(Memory& mem, uint64_t pc) const override {
    std::array<std::byte, 2> code;
    if (!mem.read_exact(pc, code)) return Sigreturn::None;
    if (std::to_integer<uint8_t>(code[0]) != kSvcOpcode) return Sigreturn::None;
    const uint8_t nr = std::to_integer<uint8_t>(code[1]);
    if (nr == kNrRtSigreturn) return Sigreturn::Rt;
    if (nr == kNrSigreturn) return Sigreturn::NonRt;
    return Sigreturn::None;
  }

  RecoverResult recover_signal(const RegisterSet& regs, Sigreturn kind,
                               Memory& mem) const override {
    if (kind == Sigreturn::None) return unexpected(not_applicable("not a sigreturn frame"));
    if (!regs.has(kR15)) return unexpected(not_applicable("r15 unknown at the trampoline"));
    const uint64_t frame = regs.raw(kR15);
    uint64_t sigregs = frame + kRtSigregsOffset;
    if (kind == Sigreturn::NonRt) {
      const uint64_t at = frame + kSigcontextSregsOffset;
      if (!read_word(mem, at, sigregs)) return unexpected(fault(at, 8));
    }
    std::array<std::byte, kSigregsWords * 8> block;
    if (!mem.read_exact(sigregs, block)) return unexpected(fault(sigregs, block.size()));
    Recovered out;
    out.regs = RegisterSet(Arch::S390x);
    for (unsigned i = 0; i < 16; ++i)
      out.regs.set(static_cast<uint16_t>(i), word_at(block.data(), kSigregsGpr0 + i));
    out.regs.set_pc(word_at(block.data(), kSigregsPswAddr));
    out.cfa = out.regs.raw(kR15) + kSignalFramesize;
    return out;
  }

  // With -mbackchain, word 0 of each frame points at the caller's frame, whose register save
  // area holds the r14 this function was called with. Accepted only when the chain goes up.
  RecoverResult frame_pointer_step(const RegisterSet& regs, Memory& mem) const override {
    if (!regs.has(kR15)) return unexpected(not_applicable("r15 unknown"));
    const uint64_t sp = regs.raw(kR15);
    uint64_t chain = 0;
    if (!read_word(mem, sp, chain)) return unexpected(fault(sp, 8));
    if (chain <= sp) return unexpected(not_applicable("backchain does not point up the stack"));
    if (chain % 8 != 0) return unexpected(not_applicable("backchain is misaligned"));
    if (chain > UINT64_MAX - kSignalFramesize)
      return unexpected(not_applicable("backchain at the top of memory"));
    uint64_t ra = 0;
    if (!read_word(mem, chain + kSaveAreaR14, ra))
      return unexpected(fault(chain + kSaveAreaR14, 8));
    Recovered out;
    out.regs = RegisterSet(Arch::S390x);
    out.regs.set(kR15, chain);
    out.regs.set(kR14, ra);
    out.regs.set_pc(ra);
    out.cfa = chain + kSignalFramesize;
    return out;
  }

  // At a function's first instruction the return address is still in r14 and r15 is the
  // caller's.
  RecoverResult entry_step(const RegisterSet& regs, Memory&) const override {
    if (!regs.has(kR15) || !regs.has(kR14)) return unexpected(not_applicable("r15 or r14 unknown"));
    Recovered out;
    out.regs = keep_callee_saved(regs);
    out.regs.set_pc(regs.raw(kR14));
    out.cfa = regs.raw(kR15) + kSignalFramesize;
    return out;
  }
};

}  // namespace

const ArchOps& s390x_ops() {
  static const S390xOps ops;
  return ops;
}

}  // namespace ehbt::arch
