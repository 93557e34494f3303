// SPDX-License-Identifier: Apache-2.0
// The debug cache (engine/src/lines/debug_cache.hpp) on the lines fixture program (tests/
// lines_fixture) with its DWARF compressed by objcopy: the lines read through the cache, on
// the run that makes the copy and on the runs that use it, are the LINE: markers of the
// source, as without the cache; a copy that is damaged or of another build is ignored and made
// again; the cap removes the least recently used copies; a directory that is not safe is not
// used. Every test has its own $EHBT_CACHE_DIR.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "lines/debug_cache.hpp"
#include "lines/debug_sections.hpp"
#include "lines/source_lookup.hpp"
#include "lines_fixture.hpp"

namespace ehbt {
namespace {

namespace fs = std::filesystem;

using lines_fixture::kFixtures;
using lines_fixture::lookup_pcs;
using lines_fixture::markers;
using lines_fixture::module_of;
using lines_fixture::open_image;

std::string position(const std::optional<SourcePosition>& p) {
  if (!p) return "-";
  return fs::path(p->file).filename().string() + ":" + std::to_string(p->line) + ":" +
         std::to_string(p->column);
}

// Both pcs' answers, one line each: the inlined calls innermost first, then the frame's own.
std::string lines_of(const Module& m, const std::vector<uint64_t>& pcs, const Limits& limits) {
  std::string out;
  for (uint64_t pc : pcs) {
    std::string problem;
    auto info = lines::lookup_source(m, pc, limits, &problem);
    out += problem;
    if (!info) {
      out += "none\n";
      continue;
    }
    for (const InlinedCall& c : info->inlined) out += c.function + "@" + position(c.location) + " ";
    out += position(info->location) + "\n";
  }
  return out;
}

// What the source's markers say the two pcs show (the columns are the compiler's: taken from
// the lookup without a cache, which lines_dwarf_test checks against the markers already).
void expect_markers(const std::string& got) {
  auto c = markers("inline_chain.c");
  auto h = markers("inline_chain.h");
  const std::string deep = "level3@inline_chain.h:" + std::to_string(h.at("level3_call")) +
                           ":.* level2@inline_chain.c:" + std::to_string(c.at("level2_call")) +
                           ":.* inline_chain.c:" + std::to_string(c.at("level1_call")) + ":.*";
  const std::string own = "inline_chain.c:" + std::to_string(c.at("level1_own")) + ":[1-9].*";
  EXPECT_TRUE(std::regex_search(got, std::regex(deep))) << got;
  EXPECT_TRUE(std::regex_search(got, std::regex("\n" + own))) << got;
}

// The copies alone: persistent line answers (lines_answer_cache_test.cpp) would answer later
// lookups without opening the copy these tests look at.
Limits copies_only() {
  Limits l;
  l.max_line_answers_bytes = 0;
  return l;
}

Limits no_cache() {
  Limits l;
  l.max_debug_cache_bytes = 0;
  return l;
}

class DebugCache : public lines_fixture::CacheDirTest {
 protected:
  fs::path dir() const { return fs::path(root_) / "debug"; }

  // The copies in the cache: file name -> size.
  std::map<std::string, uintmax_t> copies() const { return list(dir()); }

  // Asks the cache for `file`'s copy directly: whether there was one, and whether it was
  // made now (a miss) rather than found (a hit).
  struct Asked {
    bool copy = false;
    bool made = false;
  };
  static Asked ask(const std::string& file, const Limits& limits = {}) {
    elf_version(EV_CURRENT);
    const int fd = ::open((kFixtures + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    Asked out;
    if (elf != nullptr) {
      const lines::DebugSections s = lines::scan_debug_sections(elf);
      if (auto c = lines::cached_uncompressed_copy(elf, s, limits)) {
        out = {true, c->made};
        elf_end(c->elf);
        ::close(c->fd);
      }
      elf_end(elf);
    }
    ::close(fd);
    return out;
  }
};

TEST_F(DebugCache, TheFixtureIsCompressed) {
  elf_version(EV_CURRENT);
  for (const char* name : {"dw5z", "dw4z", "dwzBz", "dw5z.debug"}) {
    const int fd = ::open((kFixtures + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    ASSERT_NE(elf, nullptr);
    const lines::DebugSections s = lines::scan_debug_sections(elf);
    EXPECT_TRUE(s.has_info) << name;
    EXPECT_TRUE(s.any_compressed) << name;
    elf_end(elf);
    ::close(fd);
  }
}

TEST_F(DebugCache, MissThenHitGiveTheMarkersAsWithoutCache) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5z");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string without = lines_of(module_of("dw5z"), pcs, no_cache());
  expect_markers(without);
  EXPECT_TRUE(copies().empty()) << "max_debug_cache_bytes 0 writes nothing";

  const std::string first = lines_of(module_of("dw5z"), pcs, copies_only());  // makes the copy
  ASSERT_EQ(copies().size(), 1u);
  const std::string name = copies().begin()->first;
  struct stat made;
  ASSERT_EQ(::stat((dir() / name).c_str(), &made), 0);
  EXPECT_EQ(made.st_mode & 0777, 0600u);
  const std::string second = lines_of(module_of("dw5z"), pcs, copies_only());  // reads it
  EXPECT_EQ(first, without);
  EXPECT_EQ(second, without);
  // Found, not made again: the same file.
  struct stat used;
  ASSERT_EQ(::stat((dir() / name).c_str(), &used), 0);
  EXPECT_EQ(used.st_ino, made.st_ino);
  EXPECT_EQ(ask("dw5z").made, false);
  EXPECT_EQ(ask("dw5z").copy, true);

  // Named by the build-id, and holding no compressed section and no location lists.
  const std::string copy = (dir() / name).string();
  const int fd = ::open(copy.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  ASSERT_NE(elf, nullptr);
  const lines::DebugSections s = lines::scan_debug_sections(elf);
  EXPECT_FALSE(s.any_compressed);
  EXPECT_TRUE(s.has_info);
  for (const lines::DebugSection& d : s.list) EXPECT_NE(d.name, ".debug_loclists");
  elf_end(elf);
  ::close(fd);
  FILE* p = popen(("readelf -n " + kFixtures + "/dw5z | sed -n 's/.*Build ID: //p'").c_str(), "r");
  char id[128] = {};
  ASSERT_NE(fgets(id, sizeof id, p), nullptr);
  pclose(p);
  EXPECT_EQ(name.substr(0, name.find('.')) + "\n", std::string(id));
}

TEST_F(DebugCache, SeparateCompressedDebugFile) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5.stripped");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string without = lines_of(module_of("dw5.stripped", "dw5z.debug"), pcs, no_cache());
  expect_markers(without);
  EXPECT_EQ(lines_of(module_of("dw5.stripped", "dw5z.debug"), pcs, copies_only()), without);
  EXPECT_EQ(copies().size(), 1u);
  EXPECT_EQ(lines_of(module_of("dw5.stripped", "dw5z.debug"), pcs, copies_only()), without);
  EXPECT_FALSE(ask("dw5z.debug").made);
}

TEST_F(DebugCache, GnuZdebugSections) {
  if (!fs::exists(kFixtures + "/dw4zgnu")) GTEST_SKIP() << "objcopy writes no .zdebug_";
  const std::vector<uint64_t> pcs = lookup_pcs("dw4zgnu");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string without = lines_of(module_of("dw4zgnu"), pcs, no_cache());
  expect_markers(without);
  EXPECT_EQ(lines_of(module_of("dw4zgnu"), pcs, copies_only()), without);
  EXPECT_EQ(copies().size(), 1u);
  EXPECT_EQ(lines_of(module_of("dw4zgnu"), pcs, copies_only()), without);
}

TEST_F(DebugCache, CompressedDwzFile) {
  if (!fs::exists(kFixtures + "/z/lines.dwz")) GTEST_SKIP() << "dwz not installed";
  const std::vector<uint64_t> pcs = lookup_pcs("dwzA.stripped");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string without = lines_of(module_of("dwzA.stripped", "z/dwzA.debug"), pcs, no_cache());
  expect_markers(without);
  EXPECT_EQ(lines_of(module_of("dwzA.stripped", "z/dwzA.debug"), pcs, copies_only()), without);
  EXPECT_EQ(copies().size(), 2u) << "the debug file and its dwz file";
  EXPECT_EQ(lines_of(module_of("dwzA.stripped", "z/dwzA.debug"), pcs, copies_only()), without);
  EXPECT_FALSE(ask("z/lines.dwz").made);
}

// Damaged copies, each put where the copy of dw5z belongs: the lines are those without a
// cache, and the copy is made again.
TEST_F(DebugCache, DamagedCopyIsIgnoredAndMadeAgain) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5z");
  ASSERT_EQ(pcs.size(), 2u);
  const std::string without = lines_of(module_of("dw5z"), pcs, no_cache());
  ASSERT_TRUE(ask("dw5z").made);
  const std::string name = copies().begin()->first;
  const fs::path copy = dir() / name;
  const uintmax_t size = fs::file_size(copy);
  ASSERT_TRUE(ask("dw4z").made);  // another build's copy, valid in itself
  std::string other;
  for (const auto& [n, s] : copies()) {
    if (n != name) other = n;
  }
  ASSERT_FALSE(other.empty());

  using Damage = std::function<void()>;
  const std::vector<std::pair<const char*, Damage>> damages = {
      {"truncated to half", [&] { fs::resize_file(copy, size / 2); }},
      {"truncated in the header", [&] { fs::resize_file(copy, 20); }},
      {"empty", [&] { fs::resize_file(copy, 0); }},
      {"not ELF", [&] { std::ofstream(copy, std::ios::trunc) << std::string(size, 'x'); }},
      {"another build's copy",
       [&] { fs::copy_file(dir() / other, copy, fs::copy_options::overwrite_existing); }},
  };
  for (const auto& [what, damage] : damages) {
    damage();
    EXPECT_EQ(lines_of(module_of("dw5z"), pcs, copies_only()), without) << what;
    EXPECT_EQ(fs::file_size(copy), size) << what << ": made again";
    EXPECT_FALSE(ask("dw5z").made) << what;
  }
}

void set_age(const fs::path& file, int seconds) {
  fs::last_write_time(file, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
}

TEST_F(DebugCache, CapRemovesTheLeastRecentlyUsed) {
  ASSERT_TRUE(ask("dw5z").made);
  const std::string a = copies().begin()->first;
  ASSERT_TRUE(ask("dw4z").made);
  std::string b;
  for (const auto& [n, s] : copies()) {
    if (n != a) b = n;
  }
  const uintmax_t both = copies()[a] + copies()[b];
  // Room for two copies, not three: making a third removes the one used least recently.
  Limits two;
  two.max_debug_cache_bytes = both + both / 4;
  set_age(dir() / a, 2000);
  set_age(dir() / b, 3000);
  // Using `b` touches it (older than the touch interval): `a` is now the older.
  ASSERT_FALSE(ask("dw4z", two).made);
  ASSERT_TRUE(ask("dwzBz", two).made);
  auto now = copies();
  EXPECT_EQ(now.size(), 2u);
  EXPECT_EQ(now.count(a), 0u) << "the least recently used is removed";
  EXPECT_EQ(now.count(b), 1u);

  // A copy larger than the whole cap is not made: the file is read as it is, same lines.
  Limits tiny;
  tiny.max_debug_cache_bytes = 1;
  EXPECT_FALSE(ask("dw5z", tiny).copy);
  const std::vector<uint64_t> pcs = lookup_pcs("dw5z");
  EXPECT_EQ(lines_of(module_of("dw5z"), pcs, tiny), lines_of(module_of("dw5z"), pcs, no_cache()));
}

TEST_F(DebugCache, StaleTemporaryFilesAreRemoved) {
  fs::create_directories(dir());
  fs::permissions(dir(), fs::perms::owner_all, fs::perm_options::replace);
  std::ofstream(dir() / ".tmp.left-by-a-dead-writer") << "x";
  std::ofstream(dir() / ".tmp.being-written") << "x";
  set_age(dir() / ".tmp.left-by-a-dead-writer", 7200);
  ASSERT_TRUE(ask("dw5z").made);
  EXPECT_FALSE(fs::exists(dir() / ".tmp.left-by-a-dead-writer"));
  EXPECT_TRUE(fs::exists(dir() / ".tmp.being-written"));
}

TEST_F(DebugCache, UnsafeOrMissingDirectoryIsNotUsed) {
  const std::vector<uint64_t> pcs = lookup_pcs("dw5z");
  const std::string without = lines_of(module_of("dw5z"), pcs, no_cache());
  // debug/ a link to somewhere else (as another user could plant in a shared directory).
  const fs::path elsewhere = fs::path(root_) / "elsewhere";
  fs::create_directory(elsewhere);
  fs::permissions(elsewhere, fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directory_symlink(elsewhere, dir());
  EXPECT_EQ(lines_of(module_of("dw5z"), pcs, copies_only()), without);
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "the link is not followed";
  EXPECT_FALSE(ask("dw5z").copy);
  fs::remove(dir());
  // debug/ open to the group.
  fs::create_directory(dir());
  fs::permissions(dir(), fs::perms::owner_all | fs::perms::group_all, fs::perm_options::replace);
  EXPECT_EQ(lines_of(module_of("dw5z"), pcs, copies_only()), without);
  EXPECT_TRUE(fs::is_empty(dir()));
  fs::remove(dir());
  // The cache directory a regular file: nothing can be made.
  const fs::path file = fs::path(root_) / "file";
  std::ofstream(file) << "x";
  ::setenv("EHBT_CACHE_DIR", file.c_str(), 1);
  EXPECT_EQ(lines_of(module_of("dw5z"), pcs, copies_only()), without);
  EXPECT_FALSE(ask("dw5z").copy);
}

TEST_F(DebugCache, DirectoryByTheEnvironment) {
  // $EHBT_CACHE_DIR first (made with its parents, mode 0700), else $XDG_CACHE_HOME/ehbt,
  // else $HOME/.cache/ehbt.
  const fs::path nested = fs::path(root_) / "a" / "b";
  ::setenv("EHBT_CACHE_DIR", nested.c_str(), 1);
  ASSERT_TRUE(ask("dw5z").made);
  EXPECT_EQ(fs::status(nested / "debug").permissions() & fs::perms::all, fs::perms::owner_all);
  ::unsetenv("EHBT_CACHE_DIR");
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  ::setenv("XDG_CACHE_HOME", (fs::path(root_) / "xdg").c_str(), 1);
  EXPECT_TRUE(ask("dw5z").made);
  EXPECT_TRUE(fs::exists(fs::path(root_) / "xdg" / "ehbt" / "debug"));
  ::setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  ::setenv("HOME", (fs::path(root_) / "home").c_str(), 1);
  EXPECT_TRUE(ask("dw5z").made);
  EXPECT_TRUE(fs::exists(fs::path(root_) / "home" / ".cache" / "ehbt" / "debug"));
  EXPECT_FALSE(fs::exists("relative"));
  if (old_xdg) {
    ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace ehbt
