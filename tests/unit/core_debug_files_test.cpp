// SPDX-License-Identifier: Apache-2.0
// Separate debug files: the lookup order (--debug-dir, each sysroot's usr/lib/debug, the
// host's; then .gnu_debuglink next to the file, in .debug/, under the debug directories) and
// the checks (build-id; a debuglink target's CRC-32, computed here by Python's zlib, an
// implementation of its own). A real program, split with objcopy as Debian's dh_strip does.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/debug_files.hpp"
#include "ehbt/image.hpp"
#include "elf_test_util.hpp"

namespace {

namespace fs = std::filesystem;

class DebugFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    const std::string src = dir_ / "prog.c";
    {
      std::ofstream out(src);
      out << "int ehbt_dbg_fn(int x) { return x * 3; }\nint main(void) { return 0; }\n";
    }
    exe_ = dir_ / "bin/prog";
    fs::create_directories(dir_ / "bin");
    const std::string dbg = dir_ / "prog.debug";
    const std::string cmd = "gcc -O1 -g -o '" + exe_ + "' '" + src +
                            "' && objcopy --only-keep-debug '" + exe_ + "' '" + dbg +
                            "' && strip -s '" + exe_ + "' && objcopy --add-gnu-debuglink='" + dbg +
                            "' '" + exe_ + "'";
    ASSERT_EQ(elf_test::run_status(cmd), 0) << cmd;
    debug_ = dbg;
    auto img = ehbt::Image::open(exe_);
    ASSERT_TRUE(img) << img.error();
    image_ = *img;
    id_ = image_->build_id();
    ASSERT_GE(id_.size(), 4u);
  }
  std::string build_id_tail() const {
    return "/.build-id/" + id_.substr(0, 2) + "/" + id_.substr(2) + ".debug";
  }
  void place(const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy_file(debug_, to, fs::copy_options::overwrite_existing);
  }

  elf_test::TempDir dir_;
  std::string exe_, debug_, id_;
  std::shared_ptr<ehbt::Image> image_;
};

TEST_F(DebugFiles, DebuglinkNameAndCrcAreRead) {
  EXPECT_EQ(image_->debuglink(), "prog.debug");
  const std::string crc = elf_test::run(
      "python3 -c \"import zlib,sys; print(zlib.crc32(open(sys.argv[1],'rb').read()))\" '" +
      debug_ + "'");
  EXPECT_EQ(std::to_string(image_->debuglink_crc()) + "\n", crc);
  auto ours = ehbt::core::file_crc32(debug_);
  ASSERT_TRUE(ours.has_value());
  EXPECT_EQ(*ours, image_->debuglink_crc());
}

TEST_F(DebugFiles, CandidatesInGdbsOrder) {
  ehbt::TargetOptions o;
  o.debug_dirs = {dir_ / "dd"};
  o.sysroots = {dir_ / "root"};
  // Inside a sysroot only what exists is a candidate (chroot lookup resolves every link).
  place(dir_ / "root/usr/lib/debug" + build_id_tail());
  place(dir_ / "root/usr/lib/debug/opt/app/prog.debug");
  auto c = ehbt::core::debug_file_candidates(*image_, "/opt/app/prog", exe_, o);
  const std::vector<std::string> want = {
      dir_ / "dd" + build_id_tail(),
      dir_ / "root/usr/lib/debug" + build_id_tail(),
      "/usr/lib/debug" + build_id_tail(),
      dir_ / "bin/prog.debug",
      dir_ / "bin/.debug/prog.debug",
      dir_ / "dd/opt/app/prog.debug",
      dir_ / "root/usr/lib/debug/opt/app/prog.debug",
      "/usr/lib/debug/opt/app/prog.debug",
  };
  EXPECT_EQ(c, want);
}

TEST_F(DebugFiles, FoundByBuildIdUnderADebugDir) {
  ehbt::TargetOptions o;
  o.debug_dirs = {dir_ / "dd"};
  place(dir_ / "dd" + build_id_tail());
  std::string found;
  auto d = ehbt::core::find_debug_file(*image_, "/opt/app/prog", exe_, o, found);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(found, dir_ / "dd" + build_id_tail());
  EXPECT_EQ(d->build_id(), id_);
}

TEST_F(DebugFiles, DebuglinkNeedsTheRightCrc) {
  ehbt::TargetOptions o;
  place(dir_ / "bin/.debug/prog.debug");
  std::string found;
  auto d = ehbt::core::find_debug_file(*image_, "/opt/app/prog", exe_, o, found);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(found, dir_ / "bin/.debug/prog.debug");
  // The same bytes plus one: another CRC, refused although the build-id note is intact.
  ASSERT_EQ(elf_test::run_status("printf x >> '" + (dir_ / "bin/.debug/prog.debug") + "'"), 0);
  found.clear();
  EXPECT_EQ(ehbt::core::find_debug_file(*image_, "/opt/app/prog", exe_, o, found), nullptr);
  EXPECT_TRUE(found.empty());
}

TEST_F(DebugFiles, AnotherBuildIsNeverAttached) {
  // A debug file of another build at this build-id's path: refused.
  const std::string other_src = dir_ / "other.c";
  {
    std::ofstream out(other_src);
    out << "int main(void) { return 7; }\n";
  }
  ehbt::TargetOptions o;
  o.debug_dirs = {dir_ / "dd"};
  const std::string wrong = dir_ / "dd" + build_id_tail();
  fs::create_directories(fs::path(wrong).parent_path());
  ASSERT_EQ(elf_test::run_status("gcc -g -o '" + wrong + "' '" + other_src + "'"), 0);
  std::string found;
  EXPECT_EQ(ehbt::core::find_debug_file(*image_, "/opt/app/prog", exe_, o, found), nullptr);
}

TEST_F(DebugFiles, AttachedFileSuppliesSymbols) {
  ehbt::TargetOptions o;
  o.debug_dirs = {dir_ / "dd"};
  place(dir_ / "dd" + build_id_tail());
  // A fresh image: symbols load once, on first use, after the attach.
  auto img = ehbt::Image::open(exe_);
  ASSERT_TRUE(img);
  std::string found;
  auto d = ehbt::core::find_debug_file(**img, "/opt/app/prog", exe_, o, found);
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE((*img)->attach_debug_file(d));
  EXPECT_FALSE((*img)->attach_debug_file(d)) << "attached twice";
  const auto syms = elf_test::nm_symbols(debug_);
  bool checked = false;
  for (const auto& s : syms) {
    if (s.name != "ehbt_dbg_fn") continue;
    auto sym = (*img)->symbolize(s.start);
    ASSERT_TRUE(sym.has_value());
    EXPECT_EQ(sym->name, "ehbt_dbg_fn");
    checked = true;
  }
  EXPECT_TRUE(checked) << "nm found no ehbt_dbg_fn in the debug file";
}

// The lookup deferred by a target (core::TargetDebugFiles) runs on the first use of the
// debug file, once, and attaches what it found: a symbol of the stripped file is the first use.
TEST_F(DebugFiles, DeferredLookupRunsOnFirstSymbol) {
  ehbt::TargetOptions o;
  o.debug_dirs = {dir_ / "dd"};
  const std::string at = dir_ / "dd" + build_id_tail();
  place(at);
  auto img = ehbt::Image::open(exe_);
  ASSERT_TRUE(img);
  auto finder = std::make_shared<ehbt::core::TargetDebugFiles>(o);
  finder->defer(**img, "/opt/app/prog", exe_);
  EXPECT_EQ((*img)->attached_debug_file(), nullptr) << "looked up before any use";
  uint64_t addr = 0;
  for (const auto& s : elf_test::nm_symbols(debug_)) {
    if (s.name == "ehbt_dbg_fn") addr = s.start;
  }
  ASSERT_NE(addr, 0u) << "nm found no ehbt_dbg_fn in the debug file";
  auto sym = (*img)->symbolize(addr);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->name, "ehbt_dbg_fn");
  auto attached = (*img)->attached_debug_file();
  ASSERT_NE(attached, nullptr);
  EXPECT_EQ(attached->name(), at);
}

// Counts its calls; finds `answer`.
class CountingFinder : public ehbt::DebugFileFinder {
 public:
  explicit CountingFinder(std::shared_ptr<const ehbt::Image> answer) : answer_(std::move(answer)) {}
  std::shared_ptr<const ehbt::Image> find(const ehbt::Image&) override {
    ++calls;
    return answer_;
  }
  std::atomic<int> calls{0};

 private:
  std::shared_ptr<const ehbt::Image> answer_;
};

TEST_F(DebugFiles, DeferredLookupRunsOnceWhateverItFinds) {
  auto dbg = ehbt::Image::open(debug_);
  ASSERT_TRUE(dbg);
  for (bool finds : {true, false}) {
    auto img = ehbt::Image::open(exe_);
    ASSERT_TRUE(img);
    auto finder = std::make_shared<CountingFinder>(finds ? *dbg : nullptr);
    (*img)->defer_debug_file(finder);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < 100; ++k) (*img)->debug_file();
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(finder->calls.load(), 1) << (finds ? "found" : "none found");
    EXPECT_EQ((*img)->debug_file() != nullptr, finds);
  }
}

TEST_F(DebugFiles, DeferredLookupOfAGoneTargetIsNone) {
  auto img = ehbt::Image::open(exe_);
  ASSERT_TRUE(img);
  auto dbg = ehbt::Image::open(debug_);
  ASSERT_TRUE(dbg);
  {
    auto finder = std::make_shared<CountingFinder>(*dbg);
    (*img)->defer_debug_file(finder);
  }  // the target (its finder) is gone; the image lives on in a store
  EXPECT_EQ((*img)->debug_file(), nullptr);
  // The next target that resolves the image defers its own lookup.
  auto next = std::make_shared<CountingFinder>(*dbg);
  (*img)->defer_debug_file(next);
  EXPECT_EQ((*img)->debug_file(), *dbg);
  EXPECT_EQ(next->calls.load(), 1);
  // Attached: a later target's lookup is never run.
  auto later = std::make_shared<CountingFinder>(nullptr);
  (*img)->defer_debug_file(later);
  EXPECT_EQ((*img)->debug_file(), *dbg);
  EXPECT_EQ(later->calls.load(), 0);
}

}  // namespace
