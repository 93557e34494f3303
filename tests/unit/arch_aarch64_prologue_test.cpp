// SPDX-License-Identifier: Apache-2.0
// AArch64 prologue analysis (engine/src/arch/aarch64_prologue.hpp) and the frame-pointer step
// that uses it to recover the caller's sp.
//
// The instruction words are encoded by hand from the Arm ARM's field layouts (each constant
// shows its fields); CrossCheckedWithAssembler assembles the same instructions with
// aarch64-linux-gnu-as and compares objdump's words, so a wrong constant cannot pass silently.
// Expected CFA offsets are worked out from what each instruction does to sp, by hand.
// The end-to-end test walks the nounwind fixture core and takes the frame sizes from
// objdump's disassembly of the fixture executable.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "arch/aarch64_prologue.hpp"
#include "arch/arch_ops.hpp"
#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"
#include "support/unwind_toolchain.hpp"

namespace ehbt {
namespace {

namespace a64 = arch::aarch64;
using a64::PrologueError;

// --- Hand-encoded instructions -------------------------------------------------------------
// STP (64-bit): opc=10 101 V=0 mode L=0 imm7 Rt2 Rn Rt, mode 11 pre-index, 10 signed offset.
// 10 101 0 011 0 1111100(-4*8) 11110 11111 11101
constexpr uint32_t kStpFpLrPreM32 = 0xa9be7bfd;  // stp x29, x30, [sp, #-32]!
// 10 101 0 011 0 1111110(-2*8) 11110 11111 11101
constexpr uint32_t kStpFpLrPreM16 = 0xa9bf7bfd;  // stp x29, x30, [sp, #-16]!
// 10 101 0 010 0 0000100(4*8) 11110 11111 11101
constexpr uint32_t kStpFpLrOff32 = 0xa9027bfd;  // stp x29, x30, [sp, #32]
// 10 101 0 010 0 0000010(2*8) 11110 11111 11101
constexpr uint32_t kStpFpLrOff16 = 0xa9017bfd;  // stp x29, x30, [sp, #16]
// 10 101 0 010 0 0000010 10011 11111 10100
constexpr uint32_t kStpX20X19Off16 = 0xa9014ff4;  // stp x20, x19, [sp, #16]
// STP (SIMD&FP, D): opc=01 101 V=1 011 L=0 1111100(-4*8) 01001 11111 01000
constexpr uint32_t kStpD8D9PreM32 = 0x6dbe27e8;  // stp d8, d9, [sp, #-32]!
// STR (immediate, 64-bit, pre-index): 11 111 0 00 00 0 111110000(-16) 11 11111 10101
constexpr uint32_t kStrX21PreM16 = 0xf81f0ff5;  // str x21, [sp, #-16]!
// STR (immediate, 64-bit, unsigned offset): 11 111 0 01 00 000000000001(1*8) 11111 00000
constexpr uint32_t kStrX0Sp8 = 0xf90007e0;  // str x0, [sp, #8]
// The same two forms storing x30, as gcc -fomit-frame-pointer saves the return address:
// 11 111 0 00 00 0 111110000(-16) 11 11111 11110
constexpr uint32_t kStrLrPreM16 = 0xf81f0ffe;  // str x30, [sp, #-16]!
// 11 111 0 01 00 000000000001(1*8) 11111 11110
constexpr uint32_t kStrLrSp8 = 0xf90007fe;  // str x30, [sp, #8]
// STP pre-index with x30 second: 10 101 0 011 0 1111100(-4*8) 11110 11111 10011
constexpr uint32_t kStpX19LrPreM32 = 0xa9be7bf3;  // stp x19, x30, [sp, #-32]!
// B.cond: 0101010 0 imm19=0 0 cond=0001
constexpr uint32_t kBneSelf = 0x54000001;  // b.ne .
// ADD/SUB (immediate, 64-bit): sf=1 op S=0 100010 sh imm12 Rn Rd.
// 1 0 0 100010 0 000000000000 11111 11101
constexpr uint32_t kMovFpSp = 0x910003fd;  // mov x29, sp  (add x29, sp, #0)
// 1 0 0 100010 0 000000010000 11111 11101
constexpr uint32_t kAddFpSp16 = 0x910043fd;  // add x29, sp, #16
// 1 0 0 100010 0 000000100000 11111 11101
constexpr uint32_t kAddFpSp32 = 0x910083fd;  // add x29, sp, #32
// 1 0 0 100010 0 000000010000 11111 00010
constexpr uint32_t kAddX2Sp16 = 0x910043e2;  // add x2, sp, #16
// 1 1 0 100010 0 000000110000 11111 11111
constexpr uint32_t kSubSp48 = 0xd100c3ff;  // sub sp, sp, #48
// 1 1 0 100010 0 000001000000 11111 11111
constexpr uint32_t kSubSp64 = 0xd10103ff;  // sub sp, sp, #64
// 1 1 0 100010 1 000000000001 11111 11111
constexpr uint32_t kSubSp1Lsl12 = 0xd14007ff;  // sub sp, sp, #1, lsl #12
// ADD/SUB (extended register): sf=1 op=1 S=0 01011 00 1 10000 011(UXTX) 000 11111 11111
constexpr uint32_t kSubSpX16 = 0xcb3063ff;  // sub sp, sp, x16
// ORR (shifted register), alias MOV: 0 01 01010 00 0 00000 000000 11111 00001
constexpr uint32_t kMovW1W0 = 0x2a0003e1;  // mov w1, w0
// BL: 1 00101 imm26=0
constexpr uint32_t kBlSelf = 0x94000000;  // bl .
// RET: 1101011 0010 11111 000000 11110 00000
constexpr uint32_t kRet = 0xd65f03c0;  // ret
// HINT space: 1101010100 0 00 011 0010 CRm op2 11111
constexpr uint32_t kNop = 0xd503201f;      // nop      (CRm=0000 op2=000)
constexpr uint32_t kPaciasp = 0xd503233f;  // paciasp  (CRm=0011 op2=001)
constexpr uint32_t kBtiC = 0xd503245f;     // bti c    (CRm=0100 op2=010)

struct Encoded {
  uint32_t word;
  const char* source;
};

constexpr Encoded kAll[] = {
    {kStpFpLrPreM32, "stp x29, x30, [sp, #-32]!"},
    {kStpFpLrPreM16, "stp x29, x30, [sp, #-16]!"},
    {kStpFpLrOff32, "stp x29, x30, [sp, #32]"},
    {kStpFpLrOff16, "stp x29, x30, [sp, #16]"},
    {kStpX20X19Off16, "stp x20, x19, [sp, #16]"},
    {kStpD8D9PreM32, "stp d8, d9, [sp, #-32]!"},
    {kStrX21PreM16, "str x21, [sp, #-16]!"},
    {kStrX0Sp8, "str x0, [sp, #8]"},
    {kStrLrPreM16, "str x30, [sp, #-16]!"},
    {kStrLrSp8, "str x30, [sp, #8]"},
    {kStpX19LrPreM32, "stp x19, x30, [sp, #-32]!"},
    {kBneSelf, "b.ne ."},
    {kMovFpSp, "mov x29, sp"},
    {kAddFpSp16, "add x29, sp, #16"},
    {kAddFpSp32, "add x29, sp, #32"},
    {kAddX2Sp16, "add x2, sp, #16"},
    {kSubSp48, "sub sp, sp, #48"},
    {kSubSp64, "sub sp, sp, #64"},
    {kSubSp1Lsl12, "sub sp, sp, #1, lsl #12"},
    {kSubSpX16, "sub sp, sp, x16"},
    {kMovW1W0, "mov w1, w0"},
    {kBlSelf, "bl ."},
    {kRet, "ret"},
    {kNop, "nop"},
    {kPaciasp, "paciasp"},
    {kBtiC, "bti c"},
};

TEST(ArchAArch64Prologue, CrossCheckedWithAssembler) {
  if (!test::run_capture("command -v aarch64-linux-gnu-as && command -v aarch64-linux-gnu-objdump"))
    GTEST_FAIL() << "aarch64 binutils not installed (scripts/install-deps.sh)";
  const std::string dir = test::make_temp_dir();
  ASSERT_FALSE(dir.empty());
  std::string source;
  for (const Encoded& e : kAll) source += std::string(e.source) + "\n";
  ASSERT_TRUE(test::run_capture("cat > " + dir + "/p.s <<'EOF'\n" + source + "EOF\n"));
  ASSERT_TRUE(test::run_capture("aarch64-linux-gnu-as -march=armv8.5-a -o " + dir + "/p.o " + dir +
                                "/p.s 2>&1"));
  auto dump = test::run_capture("aarch64-linux-gnu-objdump -d " + dir + "/p.o");
  ASSERT_TRUE(dump);
  // "   c:\t6dbe27e8 \tstp\td8, d9, [sp, #-32]!"
  const std::regex line(R"(^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s)");
  std::vector<uint32_t> words;
  std::istringstream in(*dump);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) words.push_back(std::stoul(m[1].str(), nullptr, 16));
  }
  ASSERT_EQ(words.size(), std::size(kAll)) << *dump;
  for (std::size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(words[i], kAll[i].word) << kAll[i].source << ": as gives 0x" << std::hex << words[i];
  }
}

// --- Code in memory ------------------------------------------------------------------------

constexpr uint64_t kCode = 0x400000;

void put_words(BufferMemory& m, uint64_t addr, const std::vector<uint32_t>& words) {
  std::vector<std::byte> bytes;
  for (uint32_t w : words)
    for (int i = 0; i < 4; ++i) bytes.push_back(std::byte((w >> (8 * i)) & 0xff));
  m.add(addr, std::move(bytes));
}

// The function's words at kCode; pc = just after them (all have run).
struct Fn {
  BufferMemory mem;
  uint64_t end = kCode;
  explicit Fn(const std::vector<uint32_t>& words) {
    put_words(mem, kCode, words);
    end = kCode + 4 * words.size();
  }
};

Expected<a64::PrologueFrame, a64::PrologueFailure> analyse(Fn& fn, uint32_t max_insns = 32) {
  return a64::analyse_prologue(fn.mem, kCode, fn.end, max_insns);
}

void expect_cfa_from_fp(const std::vector<uint32_t>& words, uint64_t cfa_from_fp,
                        uint64_t fp_set_index) {
  Fn fn(words);
  auto got = analyse(fn);
  ASSERT_TRUE(got) << got.error().why;
  EXPECT_EQ(got->cfa_from_fp, cfa_from_fp);
  EXPECT_EQ(got->fp_set_at, kCode + 4 * fp_set_index);
}

TEST(ArchAArch64Prologue, GccPreIndexRecord) {
  // sp -= 32, record at sp; x29 = sp  =>  CFA = x29 + 32.
  expect_cfa_from_fp({kStpFpLrPreM32, kMovFpSp, kBlSelf}, 32, 1);
  expect_cfa_from_fp({kStpFpLrPreM16, kMovFpSp}, 16, 1);
}

TEST(ArchAArch64Prologue, GccScheduledBetweenStoreAndFrameSet) {
  // The fixture's fx_nounwind_crash: gcc moved two instructions between stp and mov.
  expect_cfa_from_fp({kStpFpLrPreM32, kMovW1W0, kAddX2Sp16, kMovFpSp, kNop}, 32, 3);
}

TEST(ArchAArch64Prologue, ClangRecordAtTopOfFrame) {
  // sp -= 48; record at sp + 32; x29 = sp + 32  =>  CFA = x29 + 48 - 32.
  expect_cfa_from_fp({kSubSp48, kStpFpLrOff32, kAddFpSp32}, 16, 2);
  // sp -= 4096 (imm12 1, LSL #12); record at sp + 16; x29 = sp + 16  =>  CFA = x29 + 4080.
  expect_cfa_from_fp({kSubSp1Lsl12, kStpFpLrOff16, kAddFpSp16}, 4080, 2);
}

TEST(ArchAArch64Prologue, CombinedFormLaterAllocationDoesNotCount) {
  // sp -= 32, record, x29 = sp, then sp -= 64 for locals  =>  CFA still x29 + 32.
  expect_cfa_from_fp({kStpFpLrPreM32, kMovFpSp, kSubSp64, kStrX0Sp8}, 32, 1);
}

TEST(ArchAArch64Prologue, CalleeSavedStoresAndPointerAuthentication) {
  // paciasp/bti are hints; stp x20, x19 does not move sp  =>  CFA = x29 + 32.
  expect_cfa_from_fp({kBtiC, kPaciasp, kStpFpLrPreM32, kStpX20X19Off16, kMovFpSp}, 32, 4);
  // Pushes before the record: sp -= 16 (str), -= 32 (stp d8, d9), -= 16 (record)
  //   =>  x29 = entry sp - 64, CFA = x29 + 64.
  expect_cfa_from_fp({kStrX21PreM16, kStpD8D9PreM32, kStpFpLrPreM16, kMovFpSp}, 64, 3);
}

// --- Where a function without a frame record saved x30 (analyse_lr_save) ---------------------

void expect_lr_save(const std::vector<uint32_t>& words, uint64_t depth, uint64_t lr_off) {
  Fn fn(words);
  auto got = a64::analyse_lr_save(fn.mem, kCode, fn.end, 32);
  ASSERT_TRUE(got) << got.error().why;
  EXPECT_EQ(got->depth, depth);
  EXPECT_EQ(got->lr_off, lr_off);
}

TEST(ArchAArch64LrSave, GccOmitFramePointerForms) {
  // The scan fixture's main: sp -= 16, x30 at the new sp  =>  CFA = sp + 16, x30 at CFA - 16.
  expect_lr_save({kStrLrPreM16, kMovW1W0, kBlSelf}, 16, 16);
  // stp x19, x30 pre-index: sp -= 32, x19 at sp, x30 at sp + 8  =>  x30 at CFA - 24.
  expect_lr_save({kStpX19LrPreM32, kBlSelf}, 32, 24);
  // sub sp, sp, #48; str x30, [sp, #8]  =>  CFA = sp + 48, x30 at CFA - 40.
  expect_lr_save({kSubSp48, kStrLrSp8, kBlSelf}, 48, 40);
  // A frame record counts too: stp x29, x30, [sp, #-32]!  =>  x30 at CFA - 24.
  expect_lr_save({kStpFpLrPreM32, kMovFpSp, kBlSelf}, 32, 24);
  // Locals allocated after the save move sp further: CFA = sp + 16 + 64.
  expect_lr_save({kStrLrPreM16, kSubSp64, kBlSelf}, 80, 16);
}

TEST(ArchAArch64LrSave, OnlyStraightLineCodeThatSavesX30) {
  for (const std::vector<uint32_t>& words : std::vector<std::vector<uint32_t>>{
           {kSubSp48, kStrX0Sp8, kBlSelf},         // x30 never stored
           {kBneSelf, kStrLrPreM16, kBlSelf},      // a conditional branch first
           {kRet, kStrLrPreM16, kBlSelf},          // the code ends first
           {kStrLrPreM16, kSubSpX16, kBlSelf}}) {  // sp moved by a register
    Fn fn(words);
    auto got = a64::analyse_lr_save(fn.mem, kCode, fn.end, 32);
    EXPECT_FALSE(got) << "depth " << got->depth;
  }
  // Stopped before the store ran: x30 still holds the return address, nothing is saved.
  Fn fn({kStrLrPreM16, kBlSelf});
  EXPECT_FALSE(a64::analyse_lr_save(fn.mem, kCode, kCode, 32));
  // The cap: more words before the pc than max_insns.
  EXPECT_EQ(a64::analyse_lr_save(fn.mem, kCode, fn.end, 1).error().kind, PrologueError::ScanCap);
}

void expect_unrecognised(const std::vector<uint32_t>& words) {
  Fn fn(words);
  auto got = analyse(fn);
  ASSERT_FALSE(got) << "CFA = x29 + " << got->cfa_from_fp;
  EXPECT_EQ(got.error().kind, PrologueError::Unrecognised) << got.error().why;
}

TEST(ArchAArch64Prologue, UnrecognisedPrologues) {
  expect_unrecognised({kSubSp48, kStrX0Sp8, kNop, kNop});      // no frame record at all
  expect_unrecognised({kSubSpX16, kStpFpLrPreM16, kMovFpSp});  // sp moved by a register
  expect_unrecognised({kSubSp48, kMovFpSp, kStpFpLrOff32});    // x29 set before the record
  expect_unrecognised({kSubSp48, kStpFpLrOff32, kAddFpSp16});  // x29 not at the record
  expect_unrecognised({kBlSelf, kStpFpLrPreM32, kMovFpSp});    // a call comes first
  expect_unrecognised({kRet, kStpFpLrPreM32, kMovFpSp});       // the code ends first
}

TEST(ArchAArch64Prologue, OnlyInstructionsBelowThePcCount) {
  Fn fn({kStpFpLrPreM32, kMovFpSp, kNop});
  // Stopped at the mov: it has not run, x29 is still the caller's.
  auto at_mov = a64::analyse_prologue(fn.mem, kCode, kCode + 4, 32);
  ASSERT_FALSE(at_mov);
  EXPECT_EQ(at_mov.error().kind, PrologueError::Unrecognised);
  auto after = a64::analyse_prologue(fn.mem, kCode, kCode + 8, 32);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->cfa_from_fp, 32u);
}

TEST(ArchAArch64Prologue, ForwardDecodeCap) {
  std::vector<uint32_t> words(40, kNop);
  words.push_back(kStpFpLrPreM32);
  words.push_back(kMovFpSp);
  Fn fn(words);
  auto capped = analyse(fn, 32);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().kind, PrologueError::ScanCap);
  auto wide = analyse(fn, 64);
  ASSERT_TRUE(wide) << wide.error().why;
  EXPECT_EQ(wide->cfa_from_fp, 32u);
  EXPECT_EQ(wide->fp_set_at, kCode + 4 * 41);
}

TEST(ArchAArch64Prologue, ForwardDecodeMemoryFault) {
  BufferMemory mem;
  put_words(mem, kCode, {kStpFpLrPreM32, kNop});  // then a hole at kCode + 8
  put_words(mem, kCode + 12, {kMovFpSp, kNop});
  auto got = a64::analyse_prologue(mem, kCode, kCode + 16, 32);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, PrologueError::MemoryFault);
  EXPECT_EQ(got.error().addr, kCode + 8);
}

TEST(ArchAArch64Prologue, FindStartAfterPreviousReturn) {
  BufferMemory mem;
  // Previous function ends in ret; then alignment nops, then ours.
  put_words(mem, kCode - 12, {kRet, kNop, kNop});
  put_words(mem, kCode, {kStpFpLrPreM32, kMovFpSp, kBlSelf, kNop});
  auto start = a64::find_function_start(mem, kCode + 12, 256);  // return address after the bl
  ASSERT_TRUE(start) << start.error().why;
  EXPECT_EQ(*start, kCode - 8);
  auto frame = a64::analyse_prologue(mem, *start, kCode + 12, 32);
  ASSERT_TRUE(frame) << frame.error().why;
  EXPECT_EQ(frame->cfa_from_fp, 32u);
}

TEST(ArchAArch64Prologue, FindStartAfterNoReturnCall) {
  BufferMemory mem;
  // The function before ends in a call that does not return: once the backward walk has
  // passed our `mov x29, sp`, a call marks the boundary.
  put_words(mem, kCode - 4, {kBlSelf});
  put_words(mem, kCode, {kStpFpLrPreM32, kMovFpSp, kBlSelf, kNop});
  auto start = a64::find_function_start(mem, kCode + 12, 256);
  ASSERT_TRUE(start) << start.error().why;
  EXPECT_EQ(*start, kCode);
}

TEST(ArchAArch64Prologue, FindStartCap) {
  BufferMemory mem;
  std::vector<uint32_t> words{kRet};
  words.insert(words.end(), 300, kNop);
  words.push_back(kStpFpLrPreM32);
  words.push_back(kMovFpSp);
  put_words(mem, kCode, words);
  const uint64_t pc = kCode + 4 * words.size();
  auto capped = a64::find_function_start(mem, pc, 256);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().kind, PrologueError::ScanCap);
  auto wide = a64::find_function_start(mem, pc, 400);
  ASSERT_TRUE(wide);
  EXPECT_EQ(*wide, kCode + 4);
}

TEST(ArchAArch64Prologue, FindStartMemoryFault) {
  BufferMemory mem;
  put_words(mem, kCode, {kNop, kStpFpLrPreM32, kMovFpSp, kNop});  // nothing mapped below
  auto got = a64::find_function_start(mem, kCode + 16, 256);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, PrologueError::MemoryFault);
  EXPECT_EQ(got.error().addr, kCode - 4);
}

// --- The frame-pointer step --------------------------------------------------------------

constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kFp = kStack + 0x100;
constexpr uint64_t kCallerFp = kStack + 0x200;
constexpr uint64_t kCallerPc = 0x401000;
constexpr uint16_t kX29 = 29, kX30 = 30, kSp = 31;

struct StepSetup {
  BufferMemory mem;
  RegisterSet regs{Arch::AArch64};
  arch::CodeHint hint;

  // A gcc-style frame stopped at kCode + 8 (after stp/mov), x29 = sp = fp.
  StepSetup(uint64_t fp, const std::vector<uint32_t>& code, uint64_t code_at = kCode) {
    mem.add(kStack, std::vector<std::byte>(0x1000));
    EXPECT_TRUE(mem.write_uint(fp, kCallerFp, 8, false));
    EXPECT_TRUE(mem.write_uint(fp + 8, kCallerPc, 8, false));
    put_words(mem, code_at, code);
    regs.set(kX29, fp);
    regs.set(kSp, fp);
    regs.set(kX30, 0x402000);
    regs.set_pc(kCode + 8);
  }
  arch::RecoverResult step() {
    return arch::arch_ops(Arch::AArch64).frame_pointer_step_at(regs, mem, hint);
  }
};

TEST(ArchAArch64FramePointerStep, SymbolStartGivesCallerSp) {
  StepSetup s(kFp, {kStpFpLrPreM32, kMovFpSp, kBlSelf});
  s.hint.set_function_start(kCode);
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  EXPECT_EQ(rec->regs.pc(), kCallerPc);
  EXPECT_EQ(rec->regs.raw(kX29), kCallerFp);
  ASSERT_TRUE(rec->regs.has(kSp));
  EXPECT_EQ(rec->regs.raw(kSp), kFp + 32);
  EXPECT_EQ(rec->cfa, kFp + 32);
}

TEST(ArchAArch64FramePointerStep, BackwardScanGivesCallerSp) {
  StepSetup s(kFp, {kRet, kSubSp48, kStpFpLrOff32, kAddFpSp32, kBlSelf}, kCode - 8);
  // Code: kCode-8 ret | kCode-4 sub | kCode stp | kCode+4 add | kCode+8 bl (the pc).
  // x29 = entry sp - 16, so x29 = kFp means the caller's sp is kFp + 16.
  s.regs.set(kSp, kFp - 32);
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  ASSERT_TRUE(rec->regs.has(kSp));
  EXPECT_EQ(rec->regs.raw(kSp), kFp + 16);
  EXPECT_EQ(rec->cfa, kFp + 16);
}

TEST(ArchAArch64FramePointerStep, UnrecognisedPrologueLeavesSpUnknown) {
  StepSetup s(kFp, {kNop, kNop, kNop});
  s.hint.set_function_start(kCode);
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  EXPECT_EQ(rec->regs.pc(), kCallerPc);
  EXPECT_FALSE(rec->regs.has(kSp));
  EXPECT_EQ(rec->cfa, kFp + 16);
}

TEST(ArchAArch64FramePointerStep, MisalignedCfaIsRejected) {
  // x29 only 8-aligned: x29 + 32 is no AAPCS64 sp.
  StepSetup s(kFp + 8, {kStpFpLrPreM32, kMovFpSp, kBlSelf});
  s.hint.set_function_start(kCode);
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  EXPECT_FALSE(rec->regs.has(kSp));
}

TEST(ArchAArch64FramePointerStep, ScanCapLeavesSpUnknown) {
  StepSetup s(kFp, {kRet, kNop, kNop, kNop, kStpFpLrPreM32, kMovFpSp, kBlSelf}, kCode - 16);
  s.hint.limits.max_prologue_scan = 4;  // the ret is 6 words below the pc
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  EXPECT_FALSE(rec->regs.has(kSp));
  s.hint.limits.max_prologue_scan = 6;
  auto wide = s.step();
  ASSERT_TRUE(wide);
  ASSERT_TRUE(wide->regs.has(kSp));
  EXPECT_EQ(wide->regs.raw(kSp), kFp + 32);
}

TEST(ArchAArch64FramePointerStep, MemoryFaultInTheScanLeavesSpUnknown) {
  StepSetup s(kFp, {kStpFpLrPreM32, kMovFpSp, kBlSelf});  // nothing mapped below kCode
  auto rec = s.step();
  ASSERT_TRUE(rec) << rec.error().why;
  EXPECT_EQ(rec->regs.pc(), kCallerPc);
  EXPECT_FALSE(rec->regs.has(kSp));
}

// --- End to end: the nounwind fixture core -------------------------------------------------

std::filesystem::path cores_dir() {
  if (const char* env = std::getenv("EHBT_CORES_DIR")) return env;
  return std::filesystem::path(EHBT_SOURCE_DIR) / "cores" / "out";
}

// N of the `stp x29, x30, [sp, #-N]!` objdump shows in `function` (0 when not found).
uint64_t objdump_frame_size(const std::string& exe, const std::string& function) {
  auto dump =
      test::run_capture("aarch64-linux-gnu-objdump -d --disassemble=" + function + " " + exe);
  if (!dump) return 0;
  std::smatch m;
  const std::regex stp(R"(stp\s+x29, x30, \[sp, #-(\d+)\]!)");
  if (!std::regex_search(*dump, m, stp)) return 0;
  return std::stoull(m[1].str());
}

TEST(ArchAArch64FramePointerStep, NounwindCoreReachesStart) {
  const auto dir = cores_dir() / "aarch64";
  const std::string core = (dir / "nounwind.core").string();
  const std::string exe = (dir / "bin" / "nounwind").string();
  if (!std::filesystem::exists(core))
    GTEST_FAIL() << core << " not built (cores/make-cores.sh aarch64)";
  if (!test::run_capture("command -v aarch64-linux-gnu-objdump"))
    GTEST_FAIL() << "aarch64 binutils not installed (scripts/install-deps.sh)";
  TargetOptions options;
  options.sysroots.push_back("/usr/aarch64-linux-gnu");  // as nounwind.expected.json says
  auto target = open_core(core, options);
  ASSERT_TRUE(target) << target.error();
  Target& t = **target;
  const ThreadState& th = t.threads().at(t.crashing_thread());
  const Backtrace bt = Unwinder().unwind(th.regs, t.memory(), t.modules());
  EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;

  std::vector<std::string> names;
  for (const Frame& f : bt.frames) {
    std::string name;
    if (f.module != nullptr && f.module->image != nullptr) {
      if (auto sym = f.module->image->symbolize(f.module->to_link(f.lookup_pc()))) name = sym->name;
    }
    names.push_back(name);
  }
  // As GDB showed the live process (nounwind.expected.json); frame 4 has no symbol.
  const std::vector<std::string> expected{"fx_nounwind_crash",
                                          "fx_nounwind_outer",
                                          "fx_unwind_caller",
                                          "main",
                                          "",
                                          "__libc_start_main",
                                          "_start"};
  ASSERT_EQ(names, expected);
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.frames[2].source, FrameSource::FramePointer);

  // Neither function moves sp after its `stp x29, x30, [sp, #-N]!` (objdump), so each CFA is
  // the sp it was entered with: frame 0's sp + N(crash), then + N(outer).
  const uint64_t crash = objdump_frame_size(exe, "fx_nounwind_crash");
  const uint64_t outer = objdump_frame_size(exe, "fx_nounwind_outer");
  ASSERT_NE(crash, 0u);
  ASSERT_NE(outer, 0u);
  ASSERT_TRUE(th.regs.has(kSp));
  EXPECT_EQ(bt.frames[0].cfa, th.regs.raw(kSp) + crash);
  EXPECT_EQ(bt.frames[1].cfa, th.regs.raw(kSp) + crash + outer);
  ASSERT_TRUE(bt.frames[2].regs.has(kSp));
  EXPECT_EQ(bt.frames[2].regs.raw(kSp), bt.frames[1].cfa);
}

}  // namespace
}  // namespace ehbt
