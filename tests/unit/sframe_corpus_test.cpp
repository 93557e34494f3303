// SPDX-License-Identifier: Apache-2.0
// The fuzz target's hand-made seed sections (tests/fuzz/corpus/fuzz_sframe) must stay valid:
// each parses and every function in it decodes, so the fuzzer starts from the reader's good
// paths. The inputs merge-corpus.sh adds from a campaign are named by their SHA-1 (libFuzzer's
// names) and are mostly malformed on purpose: they reach the reader's error paths.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sframe/sframe.hpp"

namespace ehbt::sframe {
namespace {

bool named_by_content(const std::string& name) {
  return name.size() == 40 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(SframeCorpus, SeedsAreValidSections) {
  const auto dir = std::filesystem::path(EHBT_SOURCE_DIR) / "tests/fuzz/corpus/fuzz_sframe";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (named_by_content(entry.path().filename().string())) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) bytes[i] = static_cast<std::byte>(raw[i]);
    // The fuzz target places sections at 0x10000.
    auto t = Table::parse(bytes, 0x10000, Limits{});
    ASSERT_TRUE(t.has_value()) << entry.path() << ": " << to_string(t.error().code);
    EXPECT_GT(t->num_functions(), 0u) << entry.path();
    for (uint32_t i = 0; i < t->num_functions(); ++i) {
      auto fn = t->function(i);
      ASSERT_TRUE(fn.has_value()) << entry.path() << " function " << i << ": "
                                  << to_string(fn.error().code);
      EXPECT_TRUE(t->find_row(fn->start).has_value()) << entry.path() << " function " << i;
    }
    ++seeds;
  }
  EXPECT_GE(seeds, 6);
}

}  // namespace
}  // namespace ehbt::sframe
