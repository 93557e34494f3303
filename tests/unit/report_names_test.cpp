// SPDX-License-Identifier: Apache-2.0
// Names the reports print: the ehbt-backtrace/1 vocabulary (docs/formats.md), signal codes,
// register names from the psABIs' DWARF register mappings, and debuggers' architecture names.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "arch/arch_ops.hpp"
#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

TEST(ReportNames, StopReasonsAreTheDocumentedOnes) {
  std::set<std::string> names;
  for (auto r : {StopReason::Outermost, StopReason::MaxFrames, StopReason::NoModule,
                 StopReason::NoUnwindInfo, StopReason::MemoryFault, StopReason::BadUnwindInfo,
                 StopReason::Unsupported, StopReason::NoProgress, StopReason::BadPc}) {
    names.insert(std::string(stop_reason_name(r)));
  }
  EXPECT_EQ(names, (std::set<std::string>{"outermost", "max_frames", "no_module", "no_unwind_info",
                                          "memory_fault", "bad_unwind_info", "unsupported",
                                          "no_progress", "bad_pc"}));
}

TEST(ReportNames, FrameSourcesAreTheDocumentedOnes) {
  std::set<std::string> names;
  for (auto s : {FrameSource::Context, FrameSource::EhFrame, FrameSource::DebugFrame,
                 FrameSource::SFrame, FrameSource::Signal, FrameSource::FramePointer,
                 FrameSource::Scan, FrameSource::GoPclntab}) {
    names.insert(std::string(frame_source_name(s)));
  }
  EXPECT_EQ(names, (std::set<std::string>{"context", "eh_frame", "debug_frame", "sframe", "signal",
                                          "frame_pointer", "scan", "go_pclntab"}));
}

TEST(ReportNames, SignalCodes) {
  EXPECT_EQ(signal_code_name(11, 1), "SEGV_MAPERR");
  EXPECT_EQ(signal_code_name(11, 2), "SEGV_ACCERR");
  EXPECT_EQ(signal_code_name(7, 1), "BUS_ADRALN");
  EXPECT_EQ(signal_code_name(4, 1), "ILL_ILLOPC");
  EXPECT_EQ(signal_code_name(8, 1), "FPE_INTDIV");
  EXPECT_EQ(signal_code_name(5, 1), "TRAP_BRKPT");
  EXPECT_EQ(signal_code_name(6, -6), "SI_TKILL");
  EXPECT_EQ(signal_code_name(6, 0), "SI_USER");
  EXPECT_EQ(signal_code_name(11, 0x80), "SI_KERNEL");
  EXPECT_EQ(signal_code_name(11, 99), "");
}

TEST(ReportNames, X86_64Registers) {
  EXPECT_EQ(register_name(Arch::X86_64, 0), "rax");
  EXPECT_EQ(register_name(Arch::X86_64, 1), "rdx");
  EXPECT_EQ(register_name(Arch::X86_64, 3), "rbx");
  EXPECT_EQ(register_name(Arch::X86_64, 6), "rbp");
  EXPECT_EQ(register_name(Arch::X86_64, 7), "rsp");
  EXPECT_EQ(register_name(Arch::X86_64, 15), "r15");
  EXPECT_EQ(register_name(Arch::X86_64, 16), "rip");
  EXPECT_EQ(register_name(Arch::X86_64, 17), "xmm0");
  EXPECT_EQ(register_name(Arch::X86_64, 49), "rflags");
  EXPECT_EQ(register_name(Arch::X86_64, 90), "reg90");
}

TEST(ReportNames, AArch64Registers) {
  EXPECT_EQ(register_name(Arch::AArch64, 0), "x0");
  EXPECT_EQ(register_name(Arch::AArch64, 29), "x29");
  EXPECT_EQ(register_name(Arch::AArch64, 30), "x30");
  EXPECT_EQ(register_name(Arch::AArch64, 31), "sp");
  EXPECT_EQ(register_name(Arch::AArch64, 72), "v8");
}

TEST(ReportNames, S390xRegisters) {
  EXPECT_EQ(register_name(Arch::S390x, 11), "r11");
  EXPECT_EQ(register_name(Arch::S390x, 15), "r15");
  EXPECT_EQ(register_name(Arch::S390x, 16), "f0");
  EXPECT_EQ(register_name(Arch::S390x, 17), "f2");
  EXPECT_EQ(register_name(Arch::S390x, 20), "f1");
  EXPECT_EQ(register_name(Arch::S390x, 31), "f15");
  EXPECT_EQ(register_name(Arch::S390x, 65), "pswa");
}

// i386 psABI, table 2.14 (the numbering GCC's CFI and GDB's i386 DWARF map use).
TEST(ReportNames, I386Registers) {
  EXPECT_EQ(register_name(Arch::I386, 0), "eax");
  EXPECT_EQ(register_name(Arch::I386, 1), "ecx");
  EXPECT_EQ(register_name(Arch::I386, 3), "ebx");
  EXPECT_EQ(register_name(Arch::I386, 4), "esp");
  EXPECT_EQ(register_name(Arch::I386, 5), "ebp");
  EXPECT_EQ(register_name(Arch::I386, 7), "edi");
  EXPECT_EQ(register_name(Arch::I386, 8), "eip");
  EXPECT_EQ(register_name(Arch::I386, 11), "st0");
  EXPECT_EQ(register_name(Arch::I386, 21), "xmm0");
  EXPECT_EQ(register_name(Arch::I386, 41), "cs");
  EXPECT_EQ(register_name(Arch::I386, 10), "reg10");
}

TEST(ReportNames, GeneralRegistersAreTheDebuggersOnes) {
  // What GDB and LLDB call the registers a front end reads and restores (the psABI's DWARF
  // numbers 0..count-1), and their program counter and stack pointer.
  const GeneralRegisters x86 = general_registers(Arch::X86_64);
  EXPECT_EQ(x86.count, 16);
  EXPECT_EQ(x86.pc, "rip");
  EXPECT_EQ(x86.sp, "rsp");
  const GeneralRegisters i386 = general_registers(Arch::I386);
  EXPECT_EQ(i386.count, 8);
  EXPECT_EQ(register_name(Arch::I386, i386.count - 1), "edi");
  EXPECT_EQ(i386.pc, "eip");
  EXPECT_EQ(i386.sp, "esp");
  const GeneralRegisters a64 = general_registers(Arch::AArch64);
  EXPECT_EQ(a64.count, 32);
  EXPECT_EQ(register_name(Arch::AArch64, a64.count - 1), "sp");
  EXPECT_EQ(a64.pc, "pc");
  const GeneralRegisters s390 = general_registers(Arch::S390x);
  EXPECT_EQ(s390.count, 16);
  EXPECT_EQ(s390.pc, "pswa");
  EXPECT_EQ(s390.sp, "r15");
}

TEST(ReportNames, StopDetailsNameRegistersFromTheSameTable) {
  // One table (ArchOps::register_name): the report and the stop details ("CFA needs rbx")
  // print the same name for every register that has one; only a nameless number is spelled
  // differently ("reg90" in a report, "reg 90" in a stop detail).
  for (Arch a : {Arch::X86_64, Arch::AArch64, Arch::S390x, Arch::I386}) {
    for (uint16_t r = 0; r < 200; ++r) {
      const std::string detail = arch::arch_ops(a).reg_name(r);
      const std::string named = register_name(a, r);
      if (named == "reg" + std::to_string(r)) {
        EXPECT_EQ(detail, "reg " + std::to_string(r));
      } else {
        EXPECT_EQ(detail, named) << arch_info(a).name << " " << r;
      }
    }
  }
}

TEST(ReportNames, DebuggersOtherRegisterNames) {
  // LLDB's arm64 register info names x29/x30/sp "fp"/"lr"/"sp" with x29/x30/x31 as the
  // alternative; GDB's s390 "pc" is a pseudo register over pswa.
  auto aliases = [](Arch a, std::string_view name) {
    std::vector<std::string> out;
    for (std::string_view s : register_aliases(a, name)) out.emplace_back(s);
    return out;
  };
  EXPECT_EQ(aliases(Arch::AArch64, "x29"), std::vector<std::string>{"fp"});
  EXPECT_EQ(aliases(Arch::AArch64, "x30"), std::vector<std::string>{"lr"});
  EXPECT_EQ(aliases(Arch::AArch64, "sp"), std::vector<std::string>{"x31"});
  EXPECT_TRUE(aliases(Arch::AArch64, "x0").empty());
  EXPECT_EQ(aliases(Arch::S390x, "pswa"), std::vector<std::string>{"pc"});
  EXPECT_TRUE(aliases(Arch::X86_64, "rip").empty());
  EXPECT_TRUE(aliases(Arch::I386, "eip").empty());
}

TEST(ReportNames, ArchitectureAliasesOfDebuggers) {
  // GDB's `show architecture` names (BFD printable names) and LLDB triples.
  EXPECT_EQ(arch_from_alias("i386:x86-64"), Arch::X86_64);
  EXPECT_EQ(arch_from_alias("i386:x86-64:intel"), Arch::X86_64);
  EXPECT_EQ(arch_from_alias("x86_64"), Arch::X86_64);
  EXPECT_EQ(arch_from_alias("x86_64-pc-linux-gnu"), Arch::X86_64);
  EXPECT_EQ(arch_from_alias("AMD64"), Arch::X86_64);
  EXPECT_EQ(arch_from_alias("i386"), Arch::I386);
  EXPECT_EQ(arch_from_alias("i386:intel"), Arch::I386);
  EXPECT_EQ(arch_from_alias("i686"), Arch::I386);
  EXPECT_EQ(arch_from_alias("aarch64"), Arch::AArch64);
  EXPECT_EQ(arch_from_alias("arm64"), Arch::AArch64);
  EXPECT_EQ(arch_from_alias("aarch64-unknown-linux-gnu"), Arch::AArch64);
  EXPECT_EQ(arch_from_alias("s390:64-bit"), Arch::S390x);
  EXPECT_EQ(arch_from_alias("s390x"), Arch::S390x);
  EXPECT_EQ(arch_from_alias("mips"), std::nullopt);
  EXPECT_EQ(arch_from_alias(""), std::nullopt);
}

TEST(ReportNames, ListsEveryStopReasonAndSourceOnce) {
  std::set<std::string> reasons, sources;
  for (StopReason r : all_stop_reasons()) reasons.insert(std::string(stop_reason_name(r)));
  for (FrameSource f : all_frame_sources()) sources.insert(std::string(frame_source_name(f)));
  EXPECT_EQ(reasons.size(), all_stop_reasons().size());
  EXPECT_EQ(reasons.size(), 9u);
  EXPECT_EQ(sources.size(), all_frame_sources().size());
  EXPECT_EQ(sources.size(), 8u);
  EXPECT_EQ(stop_reason_name(all_stop_reasons().front()), "outermost");
  EXPECT_EQ(frame_source_name(all_frame_sources().front()), "context");
}

}  // namespace
}  // namespace ehbt::report
