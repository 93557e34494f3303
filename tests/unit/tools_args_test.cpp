// SPDX-License-Identifier: Apache-2.0
// The CLI's option and number parsing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_args.hpp"

namespace ehbt::cli {
namespace {

constexpr OptionSpec kSpecs[] = {
    {"--sysroot", true, true}, {"--json", false, false}, {"--thread", true, false}};

Expected<ParsedArgs, std::string> parse(std::vector<std::string> args) {
  return parse_args(args, kSpecs);
}

TEST(ToolsArgs, ParsesPositionalsFlagsAndValues) {
  auto a = parse({"core.1", "--json", "--thread", "42", "--sysroot=/a", "--sysroot", "/b"});
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->positionals, std::vector<std::string>{"core.1"});
  EXPECT_TRUE(a->has("--json"));
  EXPECT_EQ(a->value("--thread"), "42");
  EXPECT_EQ(a->values("--sysroot"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_FALSE(a->has("--missing"));
}

TEST(ToolsArgs, DoubleDashEndsOptions) {
  auto a = parse({"--", "--json", "-"});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->positionals, (std::vector<std::string>{"--json", "-"}));
  EXPECT_FALSE(a->has("--json"));
}

TEST(ToolsArgs, RejectsMisuse) {
  EXPECT_FALSE(parse({"--bogus"}));
  EXPECT_FALSE(parse({"--thread"}));                     // value missing
  EXPECT_FALSE(parse({"--json=1"}));                     // flag with a value
  EXPECT_FALSE(parse({"--thread", "1", "--thread=2"}));  // not repeatable
  EXPECT_NE(parse({"--bogus"}).error().find("--bogus"), std::string::npos);
}

TEST(ToolsArgs, ParsesDecimal) {
  EXPECT_EQ(parse_decimal("0"), 0u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_decimal("18446744073709551616"));
  EXPECT_FALSE(parse_decimal(""));
  EXPECT_FALSE(parse_decimal("-1"));
  EXPECT_FALSE(parse_decimal("12a"));
  EXPECT_FALSE(parse_decimal("0x10"));
}

TEST(ToolsArgs, ParsesHexWithOrWithoutPrefix) {
  EXPECT_EQ(parse_hex("0x1F"), 0x1fu);
  EXPECT_EQ(parse_hex("1f"), 0x1fu);
  EXPECT_EQ(parse_hex("0000000000027280"), 0x27280u);
  EXPECT_EQ(parse_hex("ffffffffffffffff"), UINT64_MAX);
  EXPECT_FALSE(parse_hex("1ffffffffffffffff"));
  EXPECT_FALSE(parse_hex("0x"));
  EXPECT_FALSE(parse_hex("g"));
}

TEST(ToolsArgs, ParsesHexLists) {
  EXPECT_EQ(parse_hex_list("10,0x20,ff"), (std::vector<uint64_t>{0x10, 0x20, 0xff}));
  EXPECT_EQ(parse_hex_list("7"), (std::vector<uint64_t>{7}));
  EXPECT_FALSE(parse_hex_list("10,,20"));
  EXPECT_FALSE(parse_hex_list("10,"));
  EXPECT_FALSE(parse_hex_list(""));
}

}  // namespace
}  // namespace ehbt::cli
