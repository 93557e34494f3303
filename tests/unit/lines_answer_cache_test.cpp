// SPDX-License-Identifier: Apache-2.0
// Persistent line answers (engine/src/lines/answer_cache.hpp, answer_records.hpp): records
// built and damaged byte by byte; then, on the lines fixture program (tests/lines_fixture),
// what a later process (a fresh image: answers are memoised per image) answers from the file
// an earlier one wrote, which must be what the DWARF says, and when the file must not be
// believed: another file behind the same name, other limits, a problem, a dwz file missing or
// changed, damage, another engine. Every test has its own $EHBT_CACHE_DIR.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "lines/answer_records.hpp"
#include "lines/module_lines.hpp"
#include "lines/source_lookup.hpp"
#include "lines_fixture.hpp"
#include "util/own_build_id.hpp"

namespace ehbt {
namespace {

namespace fs = std::filesystem;
using lines_fixture::kFixtures;
using lines_fixture::lookup_pcs;
using lines_fixture::module_of;
using lines_fixture::open_image;

// ---- records --------------------------------------------------------------------------------

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int v : b) out.push_back(static_cast<char>(v));
  return out;
}

SourceInfo sample() {
  SourceInfo info;
  info.location = SourcePosition{"/src/a.c", 40, 5};
  info.inlined.push_back(InlinedCall{"inner", SourcePosition{"/src/a.h", 7, 0}});
  info.inlined.push_back(InlinedCall{"", std::nullopt});
  return info;
}

std::string render(const std::optional<SourceInfo>& info) {
  if (!info) return "none";
  auto pos = [](const std::optional<SourcePosition>& p) {
    return p ? p->file + ":" + std::to_string(p->line) + ":" + std::to_string(p->column)
             : std::string("-");
  };
  std::string out;
  for (const InlinedCall& c : info->inlined) out += "[" + c.function + "@" + pos(c.location) + "]";
  return out + pos(info->location);
}

TEST(AnswerRecords, LayoutIsTheHeadersLittleEndian) {
  SourceInfo info;
  info.location = SourcePosition{"a.c", 7, 2};
  info.inlined.push_back(InlinedCall{"f", std::nullopt});
  std::string out;
  ASSERT_TRUE(lines::append_answer(out, 0x1122334455667788ull, info, 64));
  EXPECT_EQ(out, bytes({0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // pc
                        1,                                               // a SourceInfo
                        1,    3,    0,    0,    0,    'a',  '.',  'c',
                        7,    0,    0,    0,    2,    0,    0,    0,  // its position
                        1,    0,    0,    0,                          // one inlined call
                        1,    0,    0,    0,    'f',  0}));           // "f", no position
  out.clear();
  ASSERT_TRUE(lines::append_answer(out, 5, std::nullopt, 64));
  EXPECT_EQ(out, bytes({5, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(AnswerRecords, RoundTrip) {
  SourceInfo no_position;
  no_position.inlined.push_back(InlinedCall{"only", SourcePosition{"x", 1, 1}});
  const std::vector<std::optional<SourceInfo>> answers = {std::nullopt, SourceInfo{}, sample(),
                                                          no_position};
  for (const auto& answer : answers) {
    std::string out;
    ASSERT_TRUE(lines::append_answer(out, 0xfedcba9876543210ull, answer, 64));
    uint64_t pc = 0, first = 0;
    std::optional<SourceInfo> back;
    ASSERT_TRUE(lines::read_answer(out, 64, pc, back)) << render(answer);
    EXPECT_EQ(pc, 0xfedcba9876543210ull);
    EXPECT_EQ(render(back), render(answer));
    ASSERT_TRUE(lines::answer_pc(out, first));
    EXPECT_EQ(first, pc);
  }
}

TEST(AnswerRecords, EveryTruncationAndAnExtraByteAreMalformed) {
  std::string whole;
  ASSERT_TRUE(lines::append_answer(whole, 0x401000, sample(), 64));
  uint64_t pc = 0;
  std::optional<SourceInfo> info;
  for (std::size_t n = 0; n < whole.size(); ++n) {
    EXPECT_FALSE(lines::read_answer(whole.substr(0, n), 64, pc, info)) << n;
  }
  EXPECT_FALSE(lines::read_answer(whole + '\0', 64, pc, info));
  EXPECT_FALSE(lines::answer_pc(whole.substr(0, 7), pc));
}

TEST(AnswerRecords, BadKindsLengthsAndCountsAreMalformed) {
  const std::string pc8 = bytes({1, 0, 0, 0, 0, 0, 0, 0});
  uint64_t pc = 0;
  std::optional<SourceInfo> info;
  auto malformed = [&](const std::string& rest) {
    return !lines::read_answer(pc8 + rest, 4, pc, info);
  };
  EXPECT_TRUE(malformed(bytes({2})));                      // kind 2
  EXPECT_TRUE(malformed(bytes({1, 2})));                   // position flag 2
  EXPECT_TRUE(malformed(bytes({1, 1, 9, 0, 0, 0, 'a'})));  // a string past the end
  // A string longer than kMaxRecordString, whatever follows.
  EXPECT_TRUE(malformed(bytes({1, 1, 1, 0, 1, 0}) + std::string(70000, 'a')));
  EXPECT_TRUE(malformed(bytes({1, 0, 5, 0, 0, 0})));  // 5 inlined calls, cap 4
  // A count the remaining bytes cannot hold is refused before anything is made for it.
  EXPECT_TRUE(
      !lines::read_answer(pc8 + bytes({1, 0, 0xff, 0xff, 0xff, 0xff}), UINT32_MAX, pc, info));
  EXPECT_FALSE(malformed(bytes({1, 0, 0, 0, 0, 0})));  // no position, no calls: well formed
}

TEST(AnswerRecords, AnswersOverTheCapsAreNotWritten) {
  std::string out = "kept";
  SourceInfo long_name;
  long_name.inlined.push_back(InlinedCall{std::string(lines::kMaxRecordString + 1, 'n'), {}});
  EXPECT_FALSE(lines::append_answer(out, 1, long_name, 64));
  EXPECT_EQ(out, "kept");
  EXPECT_FALSE(lines::append_answer(out, 1, sample(), 1));  // two inlined calls, cap 1
  EXPECT_EQ(out, "kept");
}

// The key's engine part: the build-id note of the loaded program (this test, which links the
// engine statically), as the file on disk has it.
TEST(OwnBuildId, IsTheProgramFilesBuildId) {
  auto self = Image::open("/proc/self/exe");
  ASSERT_TRUE(self.has_value());
  ASSERT_FALSE((*self)->build_id().empty()) << "tests are linked with --build-id";
  EXPECT_EQ(util::own_build_id(), (*self)->build_id());
}

// ---- the cache on the fixture program ---------------------------------------------------------

Limits dwarf_only() {
  Limits l;
  l.max_line_answers_bytes = 0;
  return l;
}

// Both pcs' answers and each lookup's problem, as one text.
std::string answers(const Module& m, const std::vector<uint64_t>& pcs, const Limits& limits) {
  std::string out;
  for (uint64_t pc : pcs) {
    std::string problem;
    out += render(lines::lookup_source(m, pc, limits, &problem));
    out += " {" + problem + "}\n";
  }
  return out;
}

lines::ModuleLines& index_of(const Module& m) {
  return *lines::module_lines(*m.image);
}

class AnswerCache : public lines_fixture::CacheDirTest {
 protected:
  fs::path dir() const { return fs::path(root_) / "lines"; }

  // The answer files: name -> size.
  std::map<std::string, uintmax_t> files() const { return list(dir()); }

  // `name` of the fixture copied into this test's own directory (mode and times kept).
  std::string copy_in(const std::string& name, const std::string& sub = "src") {
    const fs::path to = fs::path(root_) / sub / fs::path(name).filename();
    fs::create_directories(to.parent_path());
    fs::copy_file(kFixtures + "/" + name, to, fs::copy_options::overwrite_existing);
    return to.string();
  }
};

TEST_F(AnswerCache, ALaterProcessAnswersWithoutOpeningTheDwarf) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string truth = answers(module_of("dw5"), pcs, dwarf_only());
  ASSERT_NE(truth.find("inline_chain.c"), std::string::npos) << truth;
  EXPECT_TRUE(files().empty()) << "max_line_answers_bytes 0 writes nothing";

  const Module first = module_of("dw5");
  EXPECT_EQ(answers(first, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(first).persisted_answers(), 0u);
  EXPECT_TRUE(index_of(first).dwarf_opened());
  const auto written = files();
  ASSERT_EQ(written.size(), 1u);
  const std::string name = written.begin()->first;
  // "<build-id>.<16 hex digits>.lines"
  EXPECT_TRUE(std::regex_match(name, std::regex("[0-9a-f]{40}\\.[0-9a-f]{16}\\.lines"))) << name;
  EXPECT_EQ(name.substr(0, 40), module_of("dw5").image->build_id());

  // Told first (as the report does), then asked: the DWARF is never opened.
  const Module later = module_of("dw5");
  lines::prepare_sources(later, pcs, Limits{});
  EXPECT_EQ(answers(later, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(later).persisted_answers(), 2u);
  EXPECT_FALSE(index_of(later).dwarf_opened());
  EXPECT_EQ(files(), written) << "nothing added for answers that were there";
}

TEST_F(AnswerCache, ASeparateDebugFileIsTheKey) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5.stripped");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string truth = answers(module_of("dw5.stripped", "dw5.debug"), pcs, dwarf_only());
  EXPECT_EQ(answers(module_of("dw5.stripped", "dw5.debug"), pcs, Limits{}), truth);
  ASSERT_EQ(files().size(), 1u);
  EXPECT_EQ(files().begin()->first.substr(0, 40), open_image("dw5.debug")->build_id());
  const Module later = module_of("dw5.stripped", "dw5.debug");
  EXPECT_EQ(answers(later, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(later).persisted_answers(), 2u);
  // Without its debug file the program has no lines: nothing is read for it.
  EXPECT_EQ(answers(module_of("dw5.stripped"), pcs, Limits{}), "none {}\nnone {}\n");
}

TEST_F(AnswerCache, AChangedFileIsAskedAgain) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string path = copy_in("dw5");
  const std::string truth = answers(module_of(path), pcs, dwarf_only());
  EXPECT_EQ(answers(module_of(path), pcs, Limits{}), truth);
  EXPECT_EQ(index_of(module_of(path)).persisted_answers(), 0u);
  // Same path, same build-id, another modification time: another file for all the cache
  // knows (a rebuilt or reinstalled one), so its answers are the DWARF's again.
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  const Module after = module_of(path);
  EXPECT_EQ(answers(after, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(after).persisted_answers(), 0u);
  EXPECT_TRUE(index_of(after).dwarf_opened());
  EXPECT_EQ(files().size(), 2u);
  const Module again = module_of(path);
  EXPECT_EQ(answers(again, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(again).persisted_answers(), 2u);
}

TEST_F(AnswerCache, LimitsAreOfTheKeyAndProblemsAreNeverKept) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw4");
  ASSERT_EQ(pcs.size(), 2u);
  Limits tight;
  tight.max_inline_depth = 1;  // pcs[0] is three levels deep: a problem
  const std::string truth = answers(module_of("dw4"), pcs, dwarf_only());
  Limits tight_dwarf = tight;
  tight_dwarf.max_line_answers_bytes = 0;
  const std::string tight_truth = answers(module_of("dw4"), pcs, tight_dwarf);
  ASSERT_NE(tight_truth.find("inlined at one pc"), std::string::npos) << tight_truth;
  for (int run = 0; run < 2; ++run) {
    const Module m = module_of("dw4");
    EXPECT_EQ(answers(m, pcs, tight), tight_truth) << run;
    EXPECT_EQ(index_of(m).persisted_answers(), 0u) << run;
  }
  EXPECT_TRUE(files().empty()) << "answers of a file with a problem are not kept";
  EXPECT_EQ(answers(module_of("dw4"), pcs, Limits{}), truth);
  EXPECT_EQ(files().size(), 1u);
  const Module m = module_of("dw4");
  EXPECT_EQ(answers(m, pcs, tight), tight_truth) << "not the answers kept under other limits";
  EXPECT_EQ(index_of(m).persisted_answers(), 0u);
}

TEST_F(AnswerCache, EitherCapAtZeroKeepsNothing) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  Limits no_debug_cache;
  no_debug_cache.max_debug_cache_bytes = 0;
  const std::string truth = answers(module_of("dw5"), pcs, dwarf_only());
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(answers(module_of("dw5"), pcs, no_debug_cache), truth);
    EXPECT_EQ(answers(module_of("dw5"), pcs, dwarf_only()), truth);
  }
  EXPECT_FALSE(fs::exists(dir()) && !fs::is_empty(dir()));
}

TEST_F(AnswerCache, DamageIsAskedAgainAndTheFileMadeWhole) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string truth = answers(module_of("dw5"), pcs, dwarf_only());
  // One record, then the other: the second's bytes are the file's tail.
  (void)answers(module_of("dw5"), {pcs[0]}, Limits{});
  const uintmax_t one = files().begin()->second;
  (void)answers(module_of("dw5"), pcs, Limits{});
  const std::string name = files().begin()->first;
  const fs::path file = dir() / name;
  const uintmax_t two = fs::file_size(file);
  ASSERT_GT(two, one);

  // Cut inside the second record: the first still answers, the second is asked again and
  // the file is rewritten whole.
  fs::resize_file(file, two - 3);
  Module m = module_of("dw5");
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 1u);
  EXPECT_EQ(fs::file_size(file), two);
  m = module_of("dw5");
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 2u);

  // A byte changed inside the first record (its checksum no longer holds).
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(one - 2));
    f.put('\x7f');
  }
  m = module_of("dw5");
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 1u);
  m = module_of("dw5");
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 2u);

  // Not a file of answers at all, or empty: ignored, and replaced.
  for (const std::string& junk : {std::string(two, 'x'), std::string()}) {
    std::ofstream(file, std::ios::trunc | std::ios::binary) << junk;
    m = module_of("dw5");
    EXPECT_EQ(answers(m, pcs, Limits{}), truth);
    EXPECT_EQ(index_of(m).persisted_answers(), 0u);
    EXPECT_EQ(fs::file_size(file), two) << "replaced by a file of the answers written";
    m = module_of("dw5");
    EXPECT_EQ(answers(m, pcs, Limits{}), truth);
    EXPECT_EQ(index_of(m).persisted_answers(), 2u);
  }
}

// FNV-1a 64, as the file format says: to write a header that checks out.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

TEST_F(AnswerCache, AHeaderOfAnotherEngineIsNotBelieved) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  const std::string truth = answers(module_of("dw5"), pcs, dwarf_only());
  (void)answers(module_of("dw5"), pcs, Limits{});
  const fs::path file = dir() / files().begin()->first;
  std::string content;
  {
    std::ifstream in(file, std::ios::binary);
    content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // magic (8), header length (4) and checksum (8), then the engine's build-id as a string
  // (length 4, hex digits): one digit changed and the checksum made right.
  ASSERT_GT(content.size(), 30u);
  const uint32_t size = static_cast<uint8_t>(content[8]) | static_cast<uint8_t>(content[9]) << 8 |
                        static_cast<uint8_t>(content[10]) << 16 |
                        static_cast<uint32_t>(static_cast<uint8_t>(content[11])) << 24;
  content[24] = content[24] == '0' ? '1' : '0';
  const uint64_t sum = fnv1a(content.substr(20, size));
  for (int i = 0; i < 8; ++i) content[12 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  std::ofstream(file, std::ios::trunc | std::ios::binary) << content;
  const Module m = module_of("dw5");
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 0u);
  EXPECT_TRUE(index_of(m).dwarf_opened());
}

TEST_F(AnswerCache, TheCapStopsTheFileGrowing) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5");
  const std::string truth = answers(module_of("dw5"), pcs, dwarf_only());
  (void)answers(module_of("dw5"), {pcs[0]}, Limits{});
  const uintmax_t one = files().begin()->second;
  Limits capped;
  capped.max_line_answers_bytes = one;  // room for the header and one record
  // The cap is no part of the key (answers do not depend on it): the same file, full, so the
  // second answer is asked of the DWARF in every run and never added.
  for (int run = 0; run < 2; ++run) {
    const Module m = module_of("dw5");
    EXPECT_EQ(answers(m, pcs, capped), truth);
    EXPECT_EQ(index_of(m).persisted_answers(), 1u) << run;
    EXPECT_TRUE(index_of(m).dwarf_opened()) << run;
  }
  ASSERT_EQ(files().size(), 1u);
  EXPECT_EQ(files().begin()->second, one);
}

TEST_F(AnswerCache, TheDwzFileMustBeThereAsItWas) {
  if (!fs::exists(kFixtures + "/lines.dwz")) GTEST_SKIP() << "dwz not installed";
  const std::vector<uint64_t> pcs = lookup_pcs("dwzA.stripped");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string truth = answers(module_of("dwzA.stripped", "dwzA.debug"), pcs, dwarf_only());
  ASSERT_NE(truth.find("level3"), std::string::npos) << truth;

  // The debug file alone, without the dwz file its link names: nothing is kept.
  const std::string alone = copy_in("dwzA.debug", "alone");
  const std::string partial = answers(module_of("dwzA.stripped", alone), pcs, Limits{});
  EXPECT_NE(partial, truth);
  EXPECT_TRUE(files().empty());

  // With it beside: kept, and used while the dwz file is as it was.
  const std::string debug = copy_in("dwzA.debug", "both");
  const std::string dwz = copy_in("lines.dwz", "both");
  EXPECT_EQ(answers(module_of("dwzA.stripped", debug), pcs, Limits{}), truth);
  ASSERT_EQ(files().size(), 1u);
  Module m = module_of("dwzA.stripped", debug);
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 2u);
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dwz.c_str(), times, 0), 0);
  m = module_of("dwzA.stripped", debug);
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 0u) << "another dwz file: asked again";
  m = module_of("dwzA.stripped", debug);
  EXPECT_EQ(answers(m, pcs, Limits{}), truth);
  EXPECT_EQ(index_of(m).persisted_answers(), 2u) << "and kept with the new one";
}

}  // namespace
}  // namespace ehbt
