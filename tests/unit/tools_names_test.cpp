// SPDX-License-Identifier: Apache-2.0
// Names the CLI prints: the ehbt-backtrace/1 vocabulary (docs/formats.md), register names from
// the psABIs' DWARF register mappings, and readelf's frames-interp rule notation.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cli_cfi_render.hpp"
#include "cli_names.hpp"

namespace ehbt::cli {
namespace {

TEST(ToolsNames, StopReasonsAreTheDocumentedOnes) {
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

TEST(ToolsNames, FrameSourcesAreTheDocumentedOnes) {
  std::set<std::string> names;
  for (auto s : {FrameSource::Context, FrameSource::EhFrame, FrameSource::DebugFrame,
                 FrameSource::SFrame, FrameSource::Signal, FrameSource::FramePointer,
                 FrameSource::Scan, FrameSource::GoPclntab}) {
    names.insert(std::string(frame_source_name(s)));
  }
  EXPECT_EQ(names, (std::set<std::string>{"context", "eh_frame", "debug_frame", "sframe", "signal",
                                          "frame_pointer", "scan", "go_pclntab"}));
}

TEST(ToolsNames, SignalCodes) {
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

TEST(ToolsNames, X86_64Registers) {
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

TEST(ToolsNames, AArch64Registers) {
  EXPECT_EQ(register_name(Arch::AArch64, 0), "x0");
  EXPECT_EQ(register_name(Arch::AArch64, 29), "x29");
  EXPECT_EQ(register_name(Arch::AArch64, 30), "x30");
  EXPECT_EQ(register_name(Arch::AArch64, 31), "sp");
  EXPECT_EQ(register_name(Arch::AArch64, 72), "v8");
}

TEST(ToolsNames, S390xRegisters) {
  EXPECT_EQ(register_name(Arch::S390x, 11), "r11");
  EXPECT_EQ(register_name(Arch::S390x, 15), "r15");
  EXPECT_EQ(register_name(Arch::S390x, 16), "f0");
  EXPECT_EQ(register_name(Arch::S390x, 17), "f2");
  EXPECT_EQ(register_name(Arch::S390x, 20), "f1");
  EXPECT_EQ(register_name(Arch::S390x, 31), "f15");
  EXPECT_EQ(register_name(Arch::S390x, 65), "pswa");
}

// i386 psABI, table 2.14 (the numbering GCC's CFI and GDB's i386 DWARF map use).
TEST(ToolsNames, I386Registers) {
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

TEST(ToolsNames, ReadelfRuleNotation) {
  dwarf::CfaRule cfa;
  cfa.kind = dwarf::CfaKind::RegOffset;
  cfa.reg = 7;
  cfa.offset = 8;
  EXPECT_EQ(cfa_text(Arch::X86_64, cfa), "rsp+8");
  cfa.reg = 6;
  cfa.offset = -16;
  EXPECT_EQ(cfa_text(Arch::X86_64, cfa), "rbp-16");
  cfa.reg = 15;
  cfa.offset = 160;
  EXPECT_EQ(cfa_text(Arch::S390x, cfa), "r15+160");
  cfa.kind = dwarf::CfaKind::Expression;
  EXPECT_EQ(cfa_text(Arch::X86_64, cfa), "exp");

  dwarf::Rule r;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "u");
  r.kind = dwarf::RuleKind::Undefined;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "u");
  r.kind = dwarf::RuleKind::SameValue;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "s");
  r.kind = dwarf::RuleKind::Offset;
  r.offset = -8;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "c-8");
  r.kind = dwarf::RuleKind::ValOffset;
  r.offset = 16;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "v+16");
  r.kind = dwarf::RuleKind::Register;
  r.reg = 3;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "rbx");
  r.kind = dwarf::RuleKind::Expression;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "exp");
  r.kind = dwarf::RuleKind::ValExpression;
  EXPECT_EQ(rule_text(Arch::X86_64, r), "vexp");
}

TEST(ToolsNames, DryRunVerdicts) {
  EXPECT_EQ(classify(dwarf::ErrorCode::Unsupported), Verdict::Unsupported);
  EXPECT_EQ(classify(dwarf::ErrorCode::DivideByZero), Verdict::Ok);
  EXPECT_EQ(classify(dwarf::ErrorCode::MemoryFault), Verdict::Ok);
  EXPECT_EQ(classify(dwarf::ErrorCode::BadOpcode), Verdict::Malformed);
  EXPECT_EQ(classify(dwarf::ErrorCode::StackUnderflow), Verdict::Malformed);
  EXPECT_EQ(classify(dwarf::ErrorCode::LimitExprSteps), Verdict::Malformed);
}

}  // namespace
}  // namespace ehbt::cli
