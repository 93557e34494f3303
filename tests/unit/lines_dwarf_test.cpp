// SPDX-License-Identifier: Apache-2.0
// Source lines and inline chains from DWARF (engine/src/lines), on a real -O2 -g program
// (tests/lines_fixture) built in each form: DWARF 4 and 5 in the file, a separate debug file,
// a dwz common file. Expected lines are the LINE: markers of its source, and the chain
// (level3 inlined into level2 inlined into level1) is the program's structure.
#include <elf.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "elf/image_impl.hpp"
#include "lines/dwarf_lookup.hpp"
#include "lines/module_lines.hpp"
#include "lines/source_lookup.hpp"
#include "lines/sparse_dwarf.hpp"
#include "lines_fixture.hpp"
#include "report/source_lines.hpp"

namespace ehbt {
namespace {

using lines_fixture::kFixtures;
using lines_fixture::markers;
using lines_fixture::open_image;

bool exists(const std::string& path) {
  return std::ifstream(path).good();
}

std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// The program's captured return addresses as link-time pcs minus one (caller frames' lookup
// pcs): it prints them with where its ELF header is loaded.
std::vector<uint64_t> lookup_pcs(const std::string& program, const Image& image) {
  FILE* p = popen((kFixtures + "/" + program).c_str(), "r");
  if (p == nullptr) return {};
  unsigned long a = 0, b = 0, header = 0;
  int r = 0;
  const int got = fscanf(p, "%lx %lx %lx %d", &a, &b, &header, &r);
  pclose(p);
  if (got != 4) return {};
  const uint64_t bias = header - image.min_vaddr();
  return {a - bias - 1, b - bias - 1};
}

Module module_of(std::shared_ptr<const Image> image) {
  Module m;
  m.image = std::move(image);
  m.path = m.image->name();
  return m;
}

struct Expected {
  uint32_t level3_call, level2_call, level1_call, level1_own;
};

Expected expected_lines() {
  auto c = markers("inline_chain.c");
  auto h = markers("inline_chain.h");
  return {h.at("level3_call"), c.at("level2_call"), c.at("level1_call"), c.at("level1_own")};
}

// Lookups from the DWARF only: persistent answers (lines_answer_cache_test.cpp) kept by an
// earlier run would answer these pcs before the DWARF (either handle) is asked.
Limits dwarf_only() {
  Limits l;
  l.max_line_answers_bytes = 0;
  return l;
}

// The checks every form must pass: slot 0 is three levels deep, slot 1 in level1 itself.
void check_program(const Module& m, const std::vector<uint64_t>& pcs) {
  ASSERT_EQ(pcs.size(), 2u);
  const Expected want = expected_lines();
  std::string problem;
  auto deep = lines::lookup_source(m, pcs[0], dwarf_only(), &problem);
  EXPECT_EQ(problem, "");
  ASSERT_TRUE(deep.has_value());
  ASSERT_EQ(deep->inlined.size(), 2u);
  EXPECT_EQ(deep->inlined[0].function, "level3");
  ASSERT_TRUE(deep->inlined[0].location.has_value());
  EXPECT_EQ(base_name(deep->inlined[0].location->file), "inline_chain.h");
  EXPECT_EQ(deep->inlined[0].location->line, want.level3_call);
  EXPECT_EQ(deep->inlined[1].function, "level2");
  ASSERT_TRUE(deep->inlined[1].location.has_value());
  EXPECT_EQ(base_name(deep->inlined[1].location->file), "inline_chain.c");
  EXPECT_EQ(deep->inlined[1].location->line, want.level2_call);
  ASSERT_TRUE(deep->location.has_value());
  EXPECT_EQ(base_name(deep->location->file), "inline_chain.c");
  EXPECT_EQ(deep->location->line, want.level1_call);

  auto own = lines::lookup_source(m, pcs[1], dwarf_only(), &problem);
  ASSERT_TRUE(own.has_value());
  EXPECT_TRUE(own->inlined.empty());
  ASSERT_TRUE(own->location.has_value());
  EXPECT_EQ(base_name(own->location->file), "inline_chain.c");
  EXPECT_EQ(own->location->line, want.level1_own);
  EXPECT_GT(own->location->column, 0u);  // GCC writes columns
}

TEST(LinesDwarf, Dwarf4InTheFile) {
  auto img = open_image("dw4");
  ASSERT_TRUE(img);
  check_program(module_of(img), lookup_pcs("dw4", *img));
}

TEST(LinesDwarf, Dwarf5InTheFile) {
  auto img = open_image("dw5");
  ASSERT_TRUE(img);
  check_program(module_of(img), lookup_pcs("dw5", *img));
}

TEST(LinesDwarf, SplitDwarf) {
  auto img = open_image("split");
  ASSERT_TRUE(img);
  check_program(module_of(img), lookup_pcs("split", *img));
}

TEST(LinesDwarf, SeparateDebugFile) {
  auto img = open_image("dw5.stripped");
  ASSERT_TRUE(img);
  // Without its debug file the stripped program has no lines (and no problem).
  const std::vector<uint64_t> pcs = lookup_pcs("dw5.stripped", *img);
  ASSERT_EQ(pcs.size(), 2u);
  auto bare = open_image("dw5.stripped");
  std::string problem = "unset";
  EXPECT_FALSE(lines::lookup_source(module_of(bare), pcs[0], Limits{}, &problem).has_value());
  EXPECT_EQ(problem, "");
  ASSERT_TRUE(img->attach_debug_file(open_image("dw5.debug")));
  check_program(module_of(img), pcs);
}

TEST(LinesDwarf, DwzCommonFile) {
  if (!exists(kFixtures + "/lines.dwz")) GTEST_SKIP() << "dwz not installed";
  auto img = open_image("dwzA.stripped");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dwzA.stripped", *img);
  // The names (even the file names) are in the common file, found by the relative name the
  // debug file's .gnu_debugaltlink records.
  ASSERT_TRUE(img->attach_debug_file(open_image("dwzA.debug")));
  check_program(module_of(img), pcs);
}

// Images whose section headers name no .debug_info are not opened again by the lines area
// (Image::Impl::no_debug_info); every other form keeps its DWARF.
TEST(LinesDwarf, ImagesKnowWhenTheyHoldNoDebugInfo) {
  auto no_info = [](const std::string& name) {
    auto img = open_image(name);
    return img && ImageLoader::impl(*img).no_debug_info;
  };
  EXPECT_TRUE(no_info("dw5.stripped"));
  EXPECT_FALSE(no_info("dw5"));
  EXPECT_FALSE(no_info("dw5.debug"));
  EXPECT_FALSE(no_info("dw5z"));  // SHF_COMPRESSED: still named .debug_info
  if (exists(kFixtures + "/dw4zgnu")) {
    EXPECT_FALSE(no_info("dw4zgnu"));  // .zdebug_info
  }
}

// The sparse handle (lines/sparse_dwarf.hpp): pcs said before their lookups are read from a
// copy of .debug_info holding only their units. The answers are the program's structure, as
// through the full handle, and the count says which handle gave them.
std::size_t sparse_answers(const Image& img) {
  lines::ModuleLines* dwarf = lines::module_lines(img);
  return dwarf != nullptr ? dwarf->sparse_answers() : 0;
}

void check_prepared(const std::string& name, const std::string& debug, std::size_t want_sparse) {
  SCOPED_TRACE(name);
  auto img = open_image(name);
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs(name, *img);
  if (!debug.empty()) {
    ASSERT_TRUE(img->attach_debug_file(open_image(debug)));
  }
  const Module m = module_of(img);
  // Every unit through the sparse handle, however near the section's start (a one-file
  // program's units are; libc's mostly are not).
  lines::module_lines(*img)->prepare(pcs, dwarf_only(), 0);
  check_program(m, pcs);
  EXPECT_EQ(sparse_answers(*img), want_sparse);
}

TEST(LinesDwarf, PreparedPcsAreAnsweredThroughTheSparseHandle) {
  check_prepared("dw4", "", 2);
  check_prepared("dw5", "", 2);
  check_prepared("dw5.stripped", "dw5.debug", 2);
  // A skeleton unit (split DWARF) is no plain compile unit: the full handle answers.
  check_prepared("split", "", 0);
}

TEST(LinesDwarf, SparseHandleWithTheDwzCommonFile) {
  if (!exists(kFixtures + "/lines.dwz")) GTEST_SKIP() << "dwz not installed";
  // References into the common file go to the same alt handle: names read as through the
  // full handle (check_program), whichever handle answered.
  auto img = open_image("dwzA.stripped");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dwzA.stripped", *img);
  ASSERT_TRUE(img->attach_debug_file(open_image("dwzA.debug")));
  const Module m = module_of(img);
  lines::module_lines(*img)->prepare(pcs, dwarf_only(), 0);
  check_program(m, pcs);
}

TEST(LinesDwarf, UnitsNearTheSectionStartKeepTheFullHandle) {
  // A one-file program's units come before a few ranges: the report's preparation leaves
  // them to the full handle, which answers the same.
  auto img = open_image("dw5");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dw5", *img);
  const Module m = module_of(img);
  lines::prepare_sources(m, pcs, dwarf_only());
  check_program(m, pcs);
  EXPECT_EQ(sparse_answers(*img), 0u);
}

TEST(LinesDwarf, NoSparseHandleOnceTheFullOneSearched) {
  auto img = open_image("dw5");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dw5", *img);
  ASSERT_EQ(pcs.size(), 2u);
  const Module m = module_of(img);
  // pcs[0] through the full handle: its tree of units is built, a sparse copy would not pay.
  ASSERT_TRUE(lines::lookup_source(m, pcs[0], dwarf_only()).has_value());
  lines::module_lines(*img)->prepare(pcs, dwarf_only(), 0);
  check_program(m, pcs);
  EXPECT_EQ(sparse_answers(*img), 0u);
}

TEST(LinesDwarf, SparseHandleHoldsOnlyUnitsTheHeaderChainLandsOn) {
  auto img = open_image("dw5");
  ASSERT_TRUE(img);
  lines::OpenedDwarf opened = lines::open_image_dwarf(*img, Limits{});
  ASSERT_TRUE(opened.file);
  Dwarf* full = opened.file->dwarf();
  // The program's units, by their headers' offsets, as libdw reads them.
  std::vector<uint64_t> starts;
  Dwarf_Off off = 0, next = 0;
  while (dwarf_next_unit(full, off, &next, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr) == 0) {
    starts.push_back(off);
    off = next;
  }
  ASSERT_FALSE(starts.empty());
  const uint64_t last = starts.back();
  // One byte into a unit is no unit's start: never held, and alone nothing to open.
  EXPECT_EQ(lines::SparseDwarf::open(*opened.file, {last + 1}, 1u << 20), nullptr);
  auto sparse = lines::SparseDwarf::open(*opened.file, {last + 1, last}, 1u << 20);
  ASSERT_NE(sparse, nullptr);
  EXPECT_TRUE(sparse->holds(last));
  EXPECT_FALSE(sparse->holds(last + 1));
  // The held unit reads as in the file: the same DIE offset and name for its unit DIE.
  std::size_t header = 0;
  ASSERT_EQ(dwarf_next_unit(full, last, &next, &header, nullptr, nullptr, nullptr, nullptr, nullptr,
                            nullptr),
            0);
  Dwarf_Die a, b;
  ASSERT_NE(dwarf_offdie(full, last + header, &a), nullptr);
  ASSERT_NE(dwarf_offdie(sparse->dwarf(), last + header, &b), nullptr);
  EXPECT_EQ(dwarf_tag(&a), dwarf_tag(&b));
  const char* name_a = dwarf_diename(&a);
  const char* name_b = dwarf_diename(&b);
  ASSERT_NE(name_a, nullptr);
  ASSERT_NE(name_b, nullptr);
  EXPECT_STREQ(name_a, name_b);
  // Too few unit headers allowed to reach it: nothing held.
  if (starts.size() > 1) {
    EXPECT_EQ(lines::SparseDwarf::open(*opened.file, {last}, 1), nullptr);
  }
}

// GDB's names (GDB 13, `bt`), by the cases seen in its output: `gcc -g crash.c` (DWARF 5, dir 0
// the compilation directory) prints "crash.c"; a unit named by an absolute path prints
// absolute names; glibc's headers in relative directories print "../sysdeps/...".
TEST(LinesDwarf, DisplayNamesAsGdb) {
  using lines::display_file_name;
  EXPECT_EQ(display_file_name("/src/app/crash.c", "/src/app", "crash.c", 5), "crash.c");
  EXPECT_EQ(display_file_name("/src/app/crash.c", "/src/app/", "crash.c", 4), "crash.c");
  // Another file in the compilation directory: DWARF 5 names its directory, DWARF 4 does not.
  EXPECT_EQ(display_file_name("/src/app/util.h", "/src/app", "crash.c", 5), "/src/app/util.h");
  EXPECT_EQ(display_file_name("/src/app/util.h", "/src/app", "crash.c", 4), "util.h");
  // DWARF 4 with the directory recorded (gcc given absolute paths: an entry of its own, under
  // the compilation directory): GDB shows the joined, absolute name.
  EXPECT_EQ(display_file_name("/src/app/lib/util.h", "/src/app", "/src/app/lib/a.c", 4, true),
            "/src/app/lib/util.h");
  EXPECT_EQ(display_file_name("/work/main/cores/programs/fixture.h", "/work/main",
                              "/work/main/cores/programs/chain.c", 5),
            "/work/main/cores/programs/fixture.h");
  EXPECT_EQ(display_file_name("../sysdeps/nptl/libc_start_call_main.h", "./csu",
                              "../csu/libc-start.c", 5),
            "../sysdeps/nptl/libc_start_call_main.h");
  // glibc's units: a relative compilation directory, and GDB prints the joined name.
  EXPECT_EQ(display_file_name("./nptl/pthread_kill.c", "./nptl", "pthread_kill.c", 5),
            "./nptl/pthread_kill.c");
  EXPECT_EQ(display_file_name("/usr/include/stdio.h", "/src/app", "a.c", 4),
            "/usr/include/stdio.h");
  EXPECT_EQ(display_file_name("/src/application/a.c", "/src/app", "a.c", 4),
            "/src/application/a.c");
}

TEST(LinesDwarf, InlineDepthLimit) {
  auto img = open_image("dw4");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dw4", *img);
  ASSERT_EQ(pcs.size(), 2u);
  Limits tight;
  tight.max_inline_depth = 1;
  std::string problem;
  // A fresh image: answers are memoised per image.
  EXPECT_FALSE(lines::lookup_source(module_of(open_image("dw4")), pcs[0], tight, &problem));
  EXPECT_NE(problem.find("inlined"), std::string::npos) << problem;
}

// ---- malformed DWARF ------------------------------------------------------------------------

// The file's bytes with every byte of section `name` set to `fill`.
std::vector<std::byte> with_section_filled(const std::string& path, const char* name,
                                           unsigned char fill) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  elf_version(EV_CURRENT);
  Elf* e = elf_memory(raw.data(), raw.size());
  std::size_t shstrndx = 0;
  uint64_t offset = 0, size = 0;
  elf_getshdrstrndx(e, &shstrndx);
  for (Elf_Scn* s = elf_nextscn(e, nullptr); s != nullptr; s = elf_nextscn(e, s)) {
    GElf_Shdr sh;
    gelf_getshdr(s, &sh);
    if (std::string(elf_strptr(e, shstrndx, sh.sh_name)) == name) {
      offset = sh.sh_offset;
      size = sh.sh_size;
    }
  }
  elf_end(e);
  std::vector<std::byte> out(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const bool inside = i >= offset && i < offset + size;
    out[i] = static_cast<std::byte>(inside ? fill : static_cast<unsigned char>(raw[i]));
  }
  return out;
}

void check_malformed(const char* section, unsigned char fill) {
  auto good = open_image("dw4");
  ASSERT_TRUE(good);
  const std::vector<uint64_t> pcs = lookup_pcs("dw4", *good);
  ASSERT_EQ(pcs.size(), 2u);
  auto bad = Image::from_bytes(with_section_filled(kFixtures + "/dw4", section, fill), "dw4.bad");
  ASSERT_TRUE(bad.has_value());
  Module m = module_of(std::shared_ptr<const Image>(std::move(bad.value())));

  // Through the report: both frames without a location, and one warning for the module.
  report::BacktraceReport r;
  r.threads.emplace_back();
  r.threads[0].frames.resize(2);
  std::vector<report::PendingLine> pending{{&m, pcs[0], 0, 0}, {&m, pcs[1], 0, 1}};
  report::locate_frames(pending, r, Limits{});
  for (const report::FrameLine& f : r.threads[0].frames) {
    EXPECT_FALSE(f.location.has_value()) << section;
    EXPECT_TRUE(f.inlined.empty()) << section;
  }
  ASSERT_EQ(r.warnings.size(), 1u) << section;
  EXPECT_EQ(r.warnings[0].kind, kWarningBadDebugInfo);
  EXPECT_EQ(r.warnings[0].path, "dw4.bad");
}

TEST(LinesDwarf, CorruptDebugInfoGivesNoLocationAndOneWarning) {
  check_malformed(".debug_info", 0xff);
}

TEST(LinesDwarf, CorruptDebugLineGivesNoLocationAndOneWarning) {
  check_malformed(".debug_line", 0xff);
}

TEST(LinesDwarf, TheReportFillsFramesThroughLocateFrames) {
  auto img = open_image("dw4");
  ASSERT_TRUE(img);
  const std::vector<uint64_t> pcs = lookup_pcs("dw4", *img);
  ASSERT_EQ(pcs.size(), 2u);
  Module m = module_of(img);
  report::BacktraceReport r;
  r.threads.emplace_back();
  r.threads[0].frames.resize(2);
  std::vector<report::PendingLine> pending{{&m, pcs[1], 0, 1}, {&m, pcs[0], 0, 0}};
  report::locate_frames(pending, r, Limits{});
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.threads[0].frames[0].inlined.size(), 2u);
  ASSERT_TRUE(r.threads[0].frames[1].location.has_value());
  EXPECT_EQ(r.threads[0].frames[1].location->line, expected_lines().level1_own);
}

// The lookup pc of each frame of a walk (outside Go code): the pc for frame 0 and for a planted
// return address, pc - 1 for a caller, nothing for a signal trampoline or a frame without a
// module.
TEST(LinesDwarf, WalkLookupsGiveEachFramesLookupPc) {
  auto img = open_image("dw4");
  ASSERT_TRUE(img);
  Module m = module_of(img);
  m.bias = 0x1000;
  lines::WalkLookups lookups(Limits{});
  Frame top;
  top.pc = 0x5000;
  EXPECT_EQ(lookups.next(top, &m), 0x4000u);
  Frame caller;
  caller.pc = 0x5010;
  caller.exact_pc = false;
  EXPECT_EQ(lookups.next(caller, &m), 0x400fu);
  Frame planted = caller;
  planted.planted = true;
  EXPECT_EQ(lookups.next(planted, &m), 0x4010u);
  Frame trampoline = caller;
  trampoline.signal_trampoline = true;
  EXPECT_EQ(lookups.next(trampoline, &m), std::nullopt);
  EXPECT_EQ(lookups.next(caller, nullptr), std::nullopt);
  Module no_image;
  EXPECT_EQ(lookups.next(caller, &no_image), std::nullopt);
}

}  // namespace
}  // namespace ehbt
