// SPDX-License-Identifier: Apache-2.0
// readelf's frames-interp rule notation as `ehbt cfi` prints it, and the dry run's verdicts.
#include <gtest/gtest.h>

#include <string>

#include "cli_cfi_render.hpp"

namespace ehbt::cli {
namespace {

TEST(ToolsCfiNames, ReadelfRuleNotation) {
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

TEST(ToolsCfiNames, DryRunVerdicts) {
  EXPECT_EQ(classify(dwarf::ErrorCode::Unsupported), Verdict::Unsupported);
  EXPECT_EQ(classify(dwarf::ErrorCode::DivideByZero), Verdict::Ok);
  EXPECT_EQ(classify(dwarf::ErrorCode::MemoryFault), Verdict::Ok);
  EXPECT_EQ(classify(dwarf::ErrorCode::BadOpcode), Verdict::Malformed);
  EXPECT_EQ(classify(dwarf::ErrorCode::StackUnderflow), Verdict::Malformed);
  EXPECT_EQ(classify(dwarf::ErrorCode::LimitExprSteps), Verdict::Malformed);
}

}  // namespace
}  // namespace ehbt::cli
