// SPDX-License-Identifier: Apache-2.0
// x86-64 (System V psABI, Linux): the registers and their names, callee-saved registers, the
// core's register block, the rt_sigreturn trampoline and the kernel's signal frame, the rbp
// chain.
#include <elf.h>

#include <array>
#include <cstring>

#include "arch/arch_data.hpp"
#include "arch/arch_ops.hpp"

namespace ehbt::arch {

// x86-64 psABI: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, RA 16.
const ArchInfo kX86_64Info{Arch::X86_64, "x86_64", EM_X86_64, false, 8, 7, 6, 16, 33, 0, 16};

namespace {

// DWARF numbers (psABI figure 3.36).
constexpr uint16_t kRax = 0, kRdx = 1, kRcx = 2, kRbx = 3, kRsi = 4, kRdi = 5, kRbp = 6, kRsp = 7;

// glibc's __restore_rt (and musl's): `mov $0xf,%rax; syscall` (15 = __NR_rt_sigreturn).
constexpr std::array<uint8_t, 9> kRtSigreturnCode = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                     0x00, 0x00, 0x0f, 0x05};

// Signal frame (arch/x86/include/asm/sigframe.h, struct rt_sigframe): the handler is entered
// with rsp at `pretcode`, as if called; its `ret` pops pretcode, so at the trampoline rsp
// points at `uc` (struct ucontext, uapi/asm-generic/ucontext.h).
// ucontext: uc_flags (8), uc_link (8), uc_stack (stack_t: ss_sp 8, ss_flags 4 + pad 4,
// ss_size 8), then uc_mcontext (struct sigcontext, uapi/asm/sigcontext.h, 64-bit).
constexpr uint64_t kUcMcontextOffset = 40;
// struct sigcontext (64-bit) starts with these words, in this order.
constexpr unsigned kScWords = 17;  // r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip
constexpr std::array<uint16_t, 16> kScDwarf = {8,    9,    10,   11,   12,   13,   14,   15,
                                               kRdi, kRsi, kRbp, kRbx, kRdx, kRax, kRcx, kRsp};
constexpr unsigned kScRip = 16;

// elf_gregset_t is struct user_regs_struct (sys/user.h), 27 words: r15 r14 r13 r12 rbp rbx r11
// r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
constexpr std::array<GregSlot, 16> kGregs = {{{kRax, 8 * 10},
                                              {kRdx, 8 * 12},
                                              {kRcx, 8 * 11},
                                              {kRbx, 8 * 5},
                                              {kRsi, 8 * 13},
                                              {kRdi, 8 * 14},
                                              {kRbp, 8 * 4},
                                              {kRsp, 8 * 19},
                                              {8, 8 * 9},
                                              {9, 8 * 8},
                                              {10, 8 * 7},
                                              {11, 8 * 6},
                                              {12, 8 * 3},
                                              {13, 8 * 2},
                                              {14, 8 * 1},
                                              {15, 8 * 0}}};
constexpr GregsetLayout kGregset{27 * 8, 8, kGregs, 8 * 16};

// SFRAME_ABI_AMD64_ENDIAN_LITTLE; the call leaves the RA at CFA-8 in every frame.
constexpr SFrameRules kSFrame{.abi_little = 3, .fixed_ra_offset = -8, .plt_pcmask = true};

// DWARF register names (psABI figure 3.36): 0-15 the general registers, 16 the return
// address column (rip), 17-32 xmm0-15, 33-40 st0-7, 41-48 mm0-7, 49 rflags, 50-55 es cs ss ds
// fs gs, 58/59 fs.base/gs.base.
constexpr std::array<std::string_view, 17> kRegNames = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                                        "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                        "r12", "r13", "r14", "r15", "rip"};
constexpr uint16_t kRip = 16;
constexpr std::array<std::string_view, 6> kSegNames = {"es", "cs", "ss", "ds", "fs", "gs"};

// The legacy vsyscall page is user-executable although it lies in the kernel half.
constexpr uint64_t kVsyscallStart = 0xffffffffff600000ull;
constexpr uint64_t kVsyscallEnd = 0xffffffffff601000ull;
// User addresses are below 2^47 (4-level paging) or 2^56 (5-level paging).
constexpr uint64_t kUserLimit = 1ull << 56;

class X86_64Ops final : public ArchOps {
 public:
  X86_64Ops() : ArchOps(kX86_64Info, kGregset, kSFrame) {
    for (uint16_t r : {kRbx, kRbp, kRsp, uint16_t{12}, uint16_t{13}, uint16_t{14}, uint16_t{15}})
      add_callee_saved(r);
  }

  std::string register_name(uint16_t reg) const override {
    if (reg < kRegNames.size()) return std::string(kRegNames[reg]);
    if (reg <= 32) return "xmm" + std::to_string(reg - 17);
    if (reg <= 40) return "st" + std::to_string(reg - 33);
    if (reg <= 48) return "mm" + std::to_string(reg - 41);
    if (reg == 49) return "rflags";
    if (reg >= 50 && reg <= 55) return std::string(kSegNames[reg - 50]);
    if (reg == 58) return "fs.base";
    if (reg == 59) return "gs.base";
    return "";
  }

  DebuggerRegisters debugger_registers() const override {
    return {kRip, kRegNames[kRip], kRegNames[kRsp]};  // rax..r15
  }

  bool plausible_pc(uint64_t pc) const override {
    return pc < kUserLimit || (pc >= kVsyscallStart && pc < kVsyscallEnd);
  }

  Sigreturn sigreturn_at(Memory& mem, uint64_t pc) const override {
    return code_at(mem, pc, kRtSigreturnCode) ? Sigreturn::Rt : Sigreturn::None;
  }

  RecoverResult recover_signal(const RegisterSet& regs, Sigreturn kind,
                               Memory& mem) const override {
    if (kind != Sigreturn::Rt) return unexpected(not_applicable("not an rt_sigreturn frame"));
    if (!regs.has(kRsp)) return unexpected(not_applicable("rsp unknown at the trampoline"));
    const uint64_t mc = regs.raw(kRsp) + kUcMcontextOffset;
    std::array<std::byte, kScWords * 8> block;
    if (!mem.read_exact(mc, block)) return unexpected(fault(mc, block.size()));
    Recovered out;
    out.regs = RegisterSet(Arch::X86_64);
    for (unsigned i = 0; i < kScDwarf.size(); ++i)
      out.regs.set(kScDwarf[i], word_at(block.data(), i));
    out.regs.set_pc(word_at(block.data(), kScRip));
    out.cfa = out.regs.raw(kRsp);
    return out;
  }

  // push %rbp; mov %rsp,%rbp: [rbp] = caller's rbp, [rbp+8] = return address, CFA = rbp+16.
  RecoverResult frame_pointer_step(const RegisterSet& regs, Memory& mem) const override {
    auto rec = read_frame_record(regs, mem, kRbp);
    if (!rec) return unexpected(rec.error());
    const uint64_t fp = rec->at;
    Recovered out;
    out.regs = RegisterSet(Arch::X86_64);
    out.regs.set(kRbp, rec->saved_fp);
    out.regs.set(kRsp, fp + 16);
    out.regs.set_pc(rec->return_address);
    out.cfa = fp + 16;
    return out;
  }

  // At a function's first instruction the call has just pushed the return address.
  RecoverResult entry_step(const RegisterSet& regs, Memory& mem) const override {
    if (!regs.has(kRsp)) return unexpected(not_applicable("rsp unknown"));
    const uint64_t sp = regs.raw(kRsp);
    if (sp % 8 != 0) return unexpected(not_applicable("rsp is misaligned"));
    uint64_t ra = 0;
    if (!read_word(mem, sp, ra)) return unexpected(fault(sp, 8));
    Recovered out;
    out.regs = keep_callee_saved(regs);
    out.regs.set(kRsp, sp + 8);
    out.regs.set_pc(ra);
    out.cfa = sp + 8;
    return out;
  }
};

}  // namespace

const ArchOps& x86_64_ops() {
  static const X86_64Ops ops;
  return ops;
}

}  // namespace ehbt::arch
