// SPDX-License-Identifier: Apache-2.0
// What the engine needs to know about one architecture beyond the table-driven facts in
// ArchInfo: which registers survive a call, what a plausible code address looks like, how a
// return address is cleaned (aarch64 pointer authentication), how to recognise a sigreturn
// trampoline and read the registers the kernel saved below it, the heuristic steps used
// where no unwind table covers a pc (frame-pointer / backchain chain, function entry), and,
// for the rest of the engine, the register names, where a core's elf_gregset_t keeps each
// register and what the SFrame format defines for the architecture.
//
// One implementation per architecture lives next to this file (x86_64.cpp, aarch64.cpp,
// s390x.cpp, i386.cpp; their ArchInfo too); arch_ops() hands out a static instance. Nothing
// the step loop calls here allocates or throws.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"

namespace ehbt::arch {

// The registers of the caller found by a heuristic or signal-frame step, and the CFA of the
// frame stepped from.
struct Recovered {
  uint64_t cfa = 0;
  RegisterSet regs;  // pc() is the caller's pc
};

enum class RecoverError : uint8_t {
  NotApplicable,  // the heuristic's preconditions do not hold (e.g. no frame pointer)
  MemoryFault,    // a read of target memory failed at `addr`
};

struct RecoverFailure {
  RecoverError kind = RecoverError::NotApplicable;
  uint64_t addr = 0;     // faulting address (MemoryFault)
  unsigned size = 0;     // bytes asked (MemoryFault)
  const char* why = "";  // static text for NotApplicable
};

using RecoverResult = Expected<Recovered, RecoverFailure>;

// What the step loop knows about the code of the frame a frame-pointer step starts from. An
// architecture whose frame record does not locate the caller's sp (aarch64) reads the
// function's prologue from its first instruction up to the frame's pc.
class CodeHint {
 public:
  Limits limits;  // caps on the prologue scan

  // Target address of the start of the symbol covering the pc. Finding it can take a pass
  // over a large symbol table (node's holds 109k entries) and most steps never ask, so the
  // step loop leaves it to a finder that runs on the first call.
  std::optional<uint64_t> function_start() const {
    if (finder_) {
      start_ = finder_();
      finder_ = nullptr;
    }
    return start_;
  }
  void set_function_start(std::optional<uint64_t> start) {
    start_ = start;
    finder_ = nullptr;
  }
  void find_function_start_with(std::function<std::optional<uint64_t>()> finder) {
    finder_ = std::move(finder);
  }

 private:
  mutable std::function<std::optional<uint64_t>()> finder_;
  mutable std::optional<uint64_t> start_;
};

enum class Sigreturn : uint8_t {
  None,
  Rt,     // rt_sigreturn: the frame holds siginfo + ucontext
  NonRt,  // sigreturn (s390x, i386): the frame holds a sigcontext (s390x: pointing at
          // _sigregs; i386: the registers themselves, right above the signal number)
};

// Where elf_gregset_t (a core's NT_PRSTATUS pr_reg, PTRACE_GETREGSET NT_PRSTATUS) keeps the
// registers a walk starts from: each a word of `word_size` bytes at a byte offset.
struct GregSlot {
  uint16_t reg;     // DWARF number
  uint16_t offset;  // bytes from the start of the gregset
};
struct GregsetLayout {
  std::size_t size = 0;  // bytes of elf_gregset_t
  uint8_t word_size = 8;
  std::span<const GregSlot> regs;
  uint16_t pc_offset = 0;
};

// What SFrame (binutils' include/sframe.h, the specification's per-ABI sections) defines for
// the architecture: its ABI ids and the rules of its default FREs.
struct SFrameRules {
  uint8_t abi_little = 0;  // SFRAME_ABI_* id of its little-endian ABI; 0: none
  uint8_t abi_big = 0;     // SFRAME_ABI_* id of its big-endian ABI; 0: none
  // Where the return address is when the FRE words do not say (x86-64: CFA-8, the header's
  // fixed RA offset); 0: an RA word follows the CFA word.
  int8_t fixed_ra_offset = 0;
  // An RA word 0 means "not saved" and pads in front of an FP word (s390x); without it, an FP
  // word needs an RA word in front (aarch64).
  bool ra_padding = false;
  // CFA offsets are stored as (offset - 160) / 8 (s390x).
  bool scaled_cfa = false;
  // V2: an odd RA/FP word of a default FRE names the register holding the value (s390x).
  bool v2_register_words = false;
  // FREs may mark the RA signed, FDEs the pointer-authentication key (aarch64).
  bool pauth = false;
  // The PLT's CFA expression (a function of pc & 15) is a PCMASK function (x86-64).
  bool plt_pcmask = false;
  // A leaf's SP parked in another register still is the CFA minus the ABI offset (s390x).
  bool sp_copy_in_register = false;

  bool defined() const { return abi_little != 0 || abi_big != 0; }
};

class ArchOps {
 public:
  virtual ~ArchOps() = default;

  const ArchInfo& info() const { return *info_; }

  // A register whose value a callee preserves: with no rule, the caller's value is the
  // callee's (DWARF "same value"); every other register without a rule is undefined.
  bool callee_saved(uint16_t reg) const { return reg < kMaxRegs && callee_saved_.test(reg); }
  const std::bitset<kMaxRegs>& callee_saved_set() const { return callee_saved_; }
  // Copies the callee-saved registers of `from` that are valid into `to` (a fresh set).
  void copy_callee_saved(const RegisterSet& from, RegisterSet& to) const {
    to.copy_valid(from, callee_saved_,
                  std::span<const uint16_t>(callee_saved_list_.data(), num_callee_saved_));
  }

  const GregsetLayout& gregset() const { return gregset_; }
  const SFrameRules& sframe() const { return sframe_; }

  // The assembler's name of DWARF register `reg` ("rbx", "x29", "xmm3", "pswa"), which GDB
  // and LLDB use too; "" when the architecture's DWARF mapping names no such register. The
  // one table of register names: stop details (reg_name) and the report layer
  // (report::register_name) both read it.
  virtual std::string register_name(uint16_t reg) const = 0;
  // "rbx", "x29", "r15"; "reg 99" for numbers without a name. For stop details.
  std::string reg_name(uint16_t reg) const {
    std::string name = register_name(reg);
    return name.empty() ? "reg " + std::to_string(reg) : name;
  }

  // The registers a debugger front end reads from frame 0 and restores in a caller: DWARF
  // numbers 0..count-1, and the names debuggers give the program counter and the stack
  // pointer (which need not be DWARF columns of the same name: "rip" is 16, "pswa" 65).
  struct DebuggerRegisters {
    uint16_t count = 0;
    std::string_view pc;
    std::string_view sp;
  };
  virtual DebuggerRegisters debugger_registers() const = 0;
  // Other names a debugger gives the register called `name` here: LLDB names aarch64's x29,
  // x30 and sp "fp", "lr" and "x31"; GDB unwinds s390x's pc through a pseudo register "pc"
  // beside pswa. Empty for most registers.
  virtual std::span<const std::string_view> register_aliases(std::string_view name) const {
    (void)name;
    return {};
  }

  // A return address as stored -> the code address it designates.
  virtual uint64_t strip_return_address(uint64_t ra) const { return ra; }

  // Could `pc` be a user-space instruction address (canonical, aligned)?
  virtual bool plausible_pc(uint64_t pc) const = 0;

  // Reads the instruction bytes at `pc` from target memory and tells whether they are a
  // sigreturn trampoline. A failed read is "no".
  virtual Sigreturn sigreturn_at(Memory& mem, uint64_t pc) const = 0;

  // `regs` are those of a frame stopped at a sigreturn trampoline of kind `kind`: returns
  // the registers of the interrupted frame; cfa = its SP + cfa_sp_offset.
  virtual RecoverResult recover_signal(const RegisterSet& regs, Sigreturn kind,
                                       Memory& mem) const = 0;

  // One step along the frame-pointer chain (s390x: the backchain). Only the registers the
  // chain records are valid in the result; other callee-saved registers are unknown.
  virtual RecoverResult frame_pointer_step(const RegisterSet& regs, Memory& mem) const = 0;
  // The same step, given what is known of the frame's code. By default `code` is unused;
  // aarch64 uses it to recover the caller's sp (see aarch64_prologue.hpp).
  virtual RecoverResult frame_pointer_step_at(const RegisterSet& regs, Memory& mem,
                                              const CodeHint& code) const {
    (void)code;
    return frame_pointer_step(regs, mem);
  }

  // Assumes `regs` stop at the first instruction of a function (a call to a bad pointer):
  // the return address is where the call left it, nothing else has moved.
  virtual RecoverResult entry_step(const RegisterSet& regs, Memory& mem) const = 0;

 protected:
  ArchOps(const ArchInfo& info, const GregsetLayout& gregset, const SFrameRules& sframe)
      : info_(&info), gregset_(gregset), sframe_(sframe) {}

  // Reads one address-sized word in the target's byte order.
  bool read_word(Memory& mem, uint64_t addr, uint64_t& out) const {
    return mem.read_uint(addr, info_->address_size, info_->big_endian, out);
  }
  // Decodes word `index` of a block read from the target.
  uint64_t word_at(const std::byte* block, unsigned index) const;

  // True when the target's bytes at `pc` are exactly `code` (at most 16 bytes): how a
  // sigreturn trampoline is recognised, independent of any unwind table.
  static bool code_at(Memory& mem, uint64_t pc, std::span<const uint8_t> code);

  // A frame record {saved frame pointer, return address} at the address in `fp_reg` (x86-64
  // rbp, aarch64 x29), validated the same way on every arch: known, non-zero, aligned, not
  // below the stack pointer, not at the top of memory.
  struct FrameRecord {
    uint64_t at = 0;  // where the record is (the callee's frame pointer)
    uint64_t saved_fp = 0;
    uint64_t return_address = 0;
  };
  Expected<FrameRecord, RecoverFailure> read_frame_record(const RegisterSet& regs, Memory& mem,
                                                          uint16_t fp_reg) const;
  // Starts a caller register set holding the callee-saved registers of `regs` that are valid.
  RegisterSet keep_callee_saved(const RegisterSet& regs) const;
  // Declares `reg` callee-saved (constructors only).
  void add_callee_saved(uint16_t reg) {
    if (reg >= kMaxRegs || callee_saved_.test(reg) || num_callee_saved_ >= kMaxCalleeSaved) return;
    callee_saved_.set(reg);
    callee_saved_list_[num_callee_saved_++] = reg;
  }

  static RecoverFailure fault(uint64_t addr, unsigned size) {
    return {RecoverError::MemoryFault, addr, size, ""};
  }
  static RecoverFailure not_applicable(const char* why) {
    return {RecoverError::NotApplicable, 0, 0, why};
  }

  const ArchInfo* info_;

 private:
  GregsetLayout gregset_;
  SFrameRules sframe_;
  static constexpr uint8_t kMaxCalleeSaved = 32;
  std::bitset<kMaxRegs> callee_saved_;
  std::array<uint16_t, kMaxCalleeSaved> callee_saved_list_{};
  uint8_t num_callee_saved_ = 0;
};

const ArchOps& arch_ops(Arch arch);

// Per-architecture instances (defined in x86_64.cpp, aarch64.cpp, s390x.cpp, i386.cpp).
const ArchOps& x86_64_ops();
const ArchOps& aarch64_ops();
const ArchOps& s390x_ops();
const ArchOps& i386_ops();

}  // namespace ehbt::arch
