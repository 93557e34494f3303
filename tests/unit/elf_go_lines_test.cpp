// SPDX-License-Identifier: Apache-2.0
// Go source lines from .gopclntab (elf/go_lines.hpp) on real Go binaries, built here from
// cores/programs/go/goinline.go with Debian's golang-go, unstripped and with -ldflags='-s -w'
// (no symbols, no DWARF). Expected values never come from ehbt:
// - Go's own traceback (GOTRACEBACK=system prints every frame, inlined ones with their
//   file:line, physical ones with their pc): each physical frame's inlined calls and position;
// - `go tool addr2line` on the unstripped binary (which reports the innermost position) at pcs
//   spread over every function of the table;
// - the program's structure: its `// at:NAME` lines.
// Malformed tables (bytes flipped all over the table) give answers or nothing, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ehbt/image.hpp"
#include "elf/go_image.hpp"
#include "elf/go_lines.hpp"

namespace ehbt::elf {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGo = "/usr/bin/go";

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One frame of Go's traceback: a function and its file:line; pc only on physical frames.
struct TraceFrame {
  std::string function, file;
  uint32_t line = 0;
  uint64_t pc = 0;
};

// The running goroutine's frames (the first block) of a traceback.
std::vector<TraceFrame> parse_traceback(const std::string& text) {
  std::vector<TraceFrame> frames;
  std::istringstream in(text.substr(text.find("[running]:\n") + 11));
  std::string line, name;
  while (std::getline(in, line) && !line.empty()) {
    if (line[0] != '\t') {
      name = line.substr(0, line.rfind('('));
      if (name == "panic") name = "runtime.gopanic";
      continue;
    }
    TraceFrame f;
    f.function = name;
    const std::string loc = line.substr(1, line.find(' ') - 1);
    f.file = loc.substr(0, loc.rfind(':'));
    f.line = static_cast<uint32_t>(std::stoul(loc.substr(loc.rfind(':') + 1)));
    if (auto at = line.find(" pc=0x"); at != std::string::npos) {
      f.pc = std::stoull(line.substr(at + 6), nullptr, 16);
    }
    frames.push_back(f);
  }
  return frames;
}

class GoLines : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kGo)) return;
    dir_ =
        new fs::path(fs::temp_directory_path() / ("ehbt-go-lines-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    const fs::path src = fs::path(EHBT_SOURCE_DIR) / "cores/programs/go/goinline.go";
    fs::copy_file(src, *dir_ / "goinline.go", fs::copy_options::overwrite_existing);
    const std::string env =
        "cd " + dir_->string() +
        " && GO111MODULE=off CGO_ENABLED=0 GOFLAGS= GOCACHE=" + (*dir_ / "cache").string() + " " +
        kGo + " build ";
    ok_ = shell(env + "-o goinline goinline.go") == 0 &&
          shell(env + "-ldflags='-s -w' -o goinline.stripped goinline.go") == 0 &&
          // A panic: exit status 2, the traceback on stderr.
          shell("cd " + dir_->string() + " && GOTRACEBACK=system ./goinline 2>traceback.txt") == 2;
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists(kGo)) GTEST_SKIP() << "Debian golang-go is not installed";
    ASSERT_TRUE(ok_) << "building or running goinline.go failed in " << dir_->string();
  }
  static std::shared_ptr<Image> open(const std::string& name) {
    auto image = Image::open((*dir_ / name).string());
    EXPECT_TRUE(image.has_value());
    return image ? *image : nullptr;
  }
  // The line of `// at:NAME` in the program.
  static uint32_t marked_line(const std::string& name) {
    std::istringstream in(read_text(*dir_ / "goinline.go"));
    std::string line;
    for (uint32_t n = 1; std::getline(in, line); ++n) {
      if (line.find("// at:" + name) != std::string::npos) return n;
    }
    return 0;
  }

  static inline fs::path* dir_ = nullptr;
  static inline bool ok_ = false;
};

// Every physical frame of Go's traceback, in the unstripped and the stripped build: the
// inlined calls (innermost first, with their positions) and the frame's own position. Looked
// up as Go's traceback does: pc - 1 for a return address, the pc itself for the frame the
// fault interrupted (its callee is runtime.sigpanic).
TEST_F(GoLines, EveryFrameEqualsGoTraceback) {
  const std::vector<TraceFrame> trace = parse_traceback(read_text(*dir_ / "traceback.txt"));
  ASSERT_GE(trace.size(), 8u);
  for (const char* exe : {"goinline", "goinline.stripped"}) {
    SCOPED_TRACE(exe);
    auto image = open(exe);
    ASSERT_TRUE(image);
    const GoPclntab* table = go_pclntab(*image);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(go_func_data(*image).has_value()) << "no moduledata.gofunc found";
    std::vector<TraceFrame> inlined;
    std::string callee;
    int physical = 0;
    for (const TraceFrame& t : trace) {
      if (t.pc == 0) {
        inlined.push_back(t);
        continue;
      }
      ++physical;
      const uint64_t lookup = callee == "runtime.sigpanic" ? t.pc : t.pc - 1;
      SCOPED_TRACE(t.function);
      auto info = go_source_info(*image, lookup, Limits{});
      ASSERT_TRUE(info.has_value());
      ASSERT_EQ(info->inlined.size(), inlined.size());
      for (std::size_t i = 0; i < inlined.size(); ++i) {
        EXPECT_EQ(info->inlined[i].function, inlined[i].function);
        ASSERT_TRUE(info->inlined[i].location);
        EXPECT_EQ(info->inlined[i].location->file, inlined[i].file);
        EXPECT_EQ(info->inlined[i].location->line, inlined[i].line);
        EXPECT_EQ(info->inlined[i].location->column, 0u);
      }
      ASSERT_TRUE(info->location);
      EXPECT_EQ(info->location->file, t.file);
      EXPECT_EQ(info->location->line, t.line);
      auto f = table->find(lookup, 64);
      ASSERT_TRUE(f);
      EXPECT_EQ(table->name(*f).value_or(""), t.function);
      inlined.clear();
      callee = t.function;
    }
    EXPECT_GE(physical, 5);
  }
}

// The program's structure, independently of the traceback: the fault in fxInLeaf inlined
// twice into fxInOuter, and main's call inlined from fxInWrap.
TEST_F(GoLines, InlineChainsFollowTheSource) {
  const std::vector<TraceFrame> trace = parse_traceback(read_text(*dir_ / "traceback.txt"));
  uint64_t fault = 0, main_ret = 0;
  for (const TraceFrame& t : trace) {
    if (t.function == "main.fxInOuter") fault = t.pc;
    if (t.function == "main.main") main_ret = t.pc;
  }
  ASSERT_NE(fault, 0u);
  ASSERT_NE(main_ret, 0u);
  const std::string file = (*dir_ / "goinline.go").string();
  auto image = open("goinline.stripped");
  ASSERT_TRUE(image);
  auto at_fault = go_source_info(*image, fault, Limits{});
  ASSERT_TRUE(at_fault);
  ASSERT_EQ(at_fault->inlined.size(), 2u);
  EXPECT_EQ(at_fault->inlined[0].function, "main.fxInLeaf");
  EXPECT_EQ(at_fault->inlined[0].location->line, marked_line("leaf"));
  EXPECT_EQ(at_fault->inlined[0].location->file, file);
  EXPECT_EQ(at_fault->inlined[1].function, "main.fxInMid");
  EXPECT_EQ(at_fault->inlined[1].location->line, marked_line("mid"));
  EXPECT_EQ(at_fault->location->line, marked_line("outer"));
  auto in_main = go_source_info(*image, main_ret - 1, Limits{});
  ASSERT_TRUE(in_main);
  ASSERT_EQ(in_main->inlined.size(), 1u);
  EXPECT_EQ(in_main->inlined[0].function, "main.fxInWrap");
  EXPECT_EQ(in_main->inlined[0].location->line, marked_line("wrap"));
  EXPECT_EQ(in_main->location->line, marked_line("main"));
  EXPECT_EQ(in_main->location->file, file);

  // A depth cap below the chain gives nothing rather than a cut chain.
  Limits shallow;
  shallow.max_go_inline_depth = 1;
  EXPECT_FALSE(go_source_info(*image, fault, shallow).has_value());
  shallow.max_go_inline_depth = 2;
  EXPECT_TRUE(go_source_info(*image, fault, shallow).has_value());
  // A pc-value cap too small for the tables: nothing.
  Limits no_steps;
  no_steps.max_go_pcvalue_steps = 0;
  EXPECT_FALSE(go_source_info(*image, fault, no_steps).has_value());
}

// At pcs spread over every function of the table (entry, eighths, last byte), the innermost
// position (the innermost inlined call's, else the frame's own) equals `go tool addr2line`'s
// on the unstripped binary, for both builds (the same code layout).
TEST_F(GoLines, InnermostPositionEqualsGoAddr2line) {
  auto image = open("goinline");
  ASSERT_TRUE(image);
  const GoPclntab* table = go_pclntab(*image);
  ASSERT_NE(table, nullptr);
  std::vector<uint64_t> pcs;
  for (uint64_t i = 0; i < table->size(); ++i) {
    auto f = table->func(i);
    if (!f || f->end <= f->entry) continue;
    const uint64_t step = std::max<uint64_t>(1, (f->end - f->entry) / 8);
    for (uint64_t pc = f->entry; pc < f->end; pc += step) pcs.push_back(pc);
    pcs.push_back(f->end - 1);
  }
  ASSERT_GT(pcs.size(), 1000u);
  {
    std::ofstream out(*dir_ / "pcs.txt");
    for (uint64_t pc : pcs) out << "0x" << std::hex << pc << "\n";
  }
  ASSERT_EQ(shell("cd " + dir_->string() + " && " + kGo +
                  " tool addr2line goinline <pcs.txt >addr2line.txt"),
            0);
  std::istringstream answers(read_text(*dir_ / "addr2line.txt"));
  auto stripped = open("goinline.stripped");
  ASSERT_TRUE(stripped);
  std::size_t compared = 0, inlined = 0, padding = 0;
  for (uint64_t pc : pcs) {
    std::string function, position;
    ASSERT_TRUE(std::getline(answers, function) && std::getline(answers, position));
    SCOPED_TRACE(::testing::Message() << std::hex << "pc 0x" << pc << " " << function);
    if (position == "?:0") continue;  // no file for it in Go's table either
    if (position == ":-1") {
      // Alignment padding after the function's code: its tables end before it.
      EXPECT_FALSE(go_source_info(*image, pc, Limits{}).has_value());
      ++padding;
      continue;
    }
    const std::string file = position.substr(0, position.rfind(':'));
    const uint32_t line =
        static_cast<uint32_t>(std::stoul(position.substr(position.rfind(':') + 1)));
    for (const Image* im : {image.get(), stripped.get()}) {
      auto info = go_source_info(*im, pc, Limits{});
      ASSERT_TRUE(info.has_value());
      const std::optional<SourcePosition>& innermost =
          info->inlined.empty() ? info->location : info->inlined.front().location;
      ASSERT_TRUE(innermost);
      EXPECT_EQ(innermost->file, file);
      EXPECT_EQ(innermost->line, line);
    }
    ++compared;
    if (!go_source_info(*image, pc, Limits{})->inlined.empty()) ++inlined;
  }
  // Functions are aligned (32 bytes on amd64): short ones end in padding.
  EXPECT_GT(compared, pcs.size() / 2);
  EXPECT_GT(padding, 0u);
  EXPECT_GT(inlined, 100u);  // the runtime inlines a lot: the chains are walked, not skipped
}

// A pc outside every function, and an image without a Go table: nothing.
TEST_F(GoLines, NothingOutsideGoCode) {
  auto image = open("goinline");
  ASSERT_TRUE(image);
  EXPECT_FALSE(go_source_info(*image, 0, Limits{}).has_value());
  EXPECT_FALSE(go_source_info(*image, UINT64_MAX, Limits{}).has_value());
  auto self = Image::open("/proc/self/exe");
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE(go_source_info(**self, 0x1000, Limits{}).has_value());
}

// The bytes of the file's .gopclntab section (a small ELF64 section header walk).
std::vector<std::byte> gopclntab_bytes(const fs::path& path) {
  const std::string file = read_text(path);
  auto u16 = [&](uint64_t at) {
    uint16_t v = 0;
    std::memcpy(&v, file.data() + at, 2);
    return v;
  };
  auto u32 = [&](uint64_t at) {
    uint32_t v = 0;
    std::memcpy(&v, file.data() + at, 4);
    return v;
  };
  auto u64 = [&](uint64_t at) {
    uint64_t v = 0;
    std::memcpy(&v, file.data() + at, 8);
    return v;
  };
  const uint64_t shoff = u64(0x28);
  const uint16_t shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  const uint64_t strtab = u64(shoff + uint64_t{shstrndx} * shentsize + 0x18);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + uint64_t{i} * shentsize;
    if (std::string(file.c_str() + strtab + u32(sh)) != ".gopclntab") continue;
    const uint64_t off = u64(sh + 0x18), size = u64(sh + 0x20);
    const auto* p = reinterpret_cast<const std::byte*>(file.data() + off);
    return std::vector<std::byte>(p, p + size);
  }
  return {};
}

// Bytes of the table flipped (every 7th in turn, over the whole table), and inline trees
// that cannot be read: lookups answer or give nothing, never crash or loop.
TEST_F(GoLines, CorruptTablesGiveNothingOrAnswers) {
  auto image = open("goinline");
  ASSERT_TRUE(image);
  const GoPclntab* table = go_pclntab(*image);
  ASSERT_NE(table, nullptr);
  const std::vector<TraceFrame> trace = parse_traceback(read_text(*dir_ / "traceback.txt"));
  uint64_t fault = 0;
  for (const TraceFrame& t : trace) {
    if (t.function == "main.fxInOuter") fault = t.pc;
  }
  ASSERT_NE(fault, 0u);
  // Inline trees somewhere they cannot be: nothing for the inlined pc.
  const GoInlineTrees nowhere{uint64_t{1} << 60, [&image](uint64_t a, std::span<std::byte> o) {
                                return image->read(a, o);
                              }};
  EXPECT_FALSE(go_source_info(*table, nowhere, fault, Limits{}).has_value());
  EXPECT_FALSE(go_source_info(*table, std::nullopt, fault, Limits{}).has_value());

  std::vector<std::byte> bytes = gopclntab_bytes(*dir_ / "goinline");
  ASSERT_GT(bytes.size(), 4096u);
  const GoInlineTrees trees{*go_func_data(*image), [&image](uint64_t a, std::span<std::byte> o) {
                              return image->read(a, o);
                            }};
  std::vector<uint64_t> pcs;
  for (const TraceFrame& t : trace) {
    if (t.pc != 0) pcs.push_back(t.pc - 1);
  }
  pcs.push_back(fault);
  std::size_t answered = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 7) {
    bytes[i] ^= std::byte{0x5a};
    if (auto t = GoPclntab::parse(bytes, table->text_start())) {
      for (uint64_t pc : pcs) answered += go_source_info(*t, trees, pc, Limits{}).has_value();
    }
    bytes[i] ^= std::byte{0x5a};
  }
  EXPECT_GT(answered, 0u);
}

// The stripped build has no symbols but those made from Go's table. A one-shot lookup of a few
// pcs (symbolize_all before the image's table exists) refuses most functions from their
// entries alone; its answers are the table's (symbolize, which builds it), also under a symbol
// cap that ends the table early.
TEST_F(GoLines, SymbolQueriesOfGoFunctionsAnswerAsTheTable) {
  auto probe = open("goinline.stripped");
  ASSERT_TRUE(probe);
  const GoPclntab* table = go_pclntab(*probe);
  ASSERT_NE(table, nullptr);
  ASSERT_GT(table->size(), 1000u);
  auto pcs_of = [table](uint64_t i) -> std::vector<uint64_t> {
    auto f = table->func(i);
    if (!f || f->end == f->entry) return {};
    return {f->entry, f->entry + (f->end - f->entry) / 2, f->end - 1};
  };
  // Of every 31st function one pc, in turn its entry, one inside it and its last byte (a
  // function is wanted when any pc it holds is asked), and past the last function; under a cap
  // of 500, two functions on either side of it (few pcs, so that the query does not give up
  // for the work its cap allows and build the table after all); under a cap of one, the first
  // function and another.
  std::vector<uint64_t> all;
  for (uint64_t i = 0; i < table->size(); i += 31) {
    const std::vector<uint64_t> pcs = pcs_of(i);
    if (!pcs.empty()) all.push_back(pcs[(i / 31) % 3]);
  }
  all.push_back(*table->entry(table->size()) + 16);
  std::vector<uint64_t> around_500 = pcs_of(10), around_1 = pcs_of(0);
  for (uint64_t pc : pcs_of(800)) around_500.push_back(pc);
  for (uint64_t pc : pcs_of(5)) around_1.push_back(pc);
  for (const auto& [cap, pcs, want_named] :
       {std::tuple{Limits{}.max_symbols, all, all.size() - 1},
        std::tuple{500u, around_500, std::size_t{3}}, std::tuple{1u, around_1, std::size_t{3}}}) {
    SCOPED_TRACE(cap);
    ASSERT_EQ(pcs.size(), cap == Limits{}.max_symbols ? pcs.size() : 6u);
    Limits limits;
    limits.max_symbols = cap;
    auto queried = Image::open((*dir_ / "goinline.stripped").string(), limits);
    auto tabled = Image::open((*dir_ / "goinline.stripped").string(), limits);
    ASSERT_TRUE(queried && tabled);
    const std::vector<std::optional<Symbol>> got = (*queried)->symbolize_all(pcs);
    ASSERT_EQ(got.size(), pcs.size());
    std::size_t named = 0;
    for (std::size_t k = 0; k < pcs.size(); ++k) {
      const std::optional<Symbol> want = (*tabled)->symbolize(pcs[k]);
      ASSERT_EQ(got[k].has_value(), want.has_value()) << std::hex << pcs[k];
      if (!want) continue;
      ++named;
      EXPECT_EQ(got[k]->name, want->name) << std::hex << pcs[k];
      EXPECT_EQ(got[k]->start, want->start) << std::hex << pcs[k];
      EXPECT_EQ(got[k]->size, want->size) << std::hex << pcs[k];
    }
    // The cap decides how far the table reaches: all of it, its first 500 functions, one.
    EXPECT_EQ(named, want_named);
  }
}

}  // namespace
}  // namespace ehbt::elf
