// SPDX-License-Identifier: Apache-2.0
// ImageStore: one entry per file however it is named, a fresh open when the file changes, and
// files that are not ELF remembered without being kept as images.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ehbt/core.hpp"
#include "elf_test_util.hpp"

namespace {

// A store and, in a fresh directory, a copy of this test program (an ELF file) as "prog".
class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::copy_file(elf_test::self_exe(), path); }
  std::shared_ptr<const ehbt::Image> open(const std::string& file,
                                          const ehbt::Limits& limits = {}) {
    return store.open(file, limits);
  }
  // Appending changes the size (and the modification time): another file as far as a store
  // knows.
  void append_bytes() { std::ofstream(path, std::ios::binary | std::ios::app) << "trailing bytes"; }

  elf_test::TempDir dir;
  const std::string path = dir / "prog";
  ehbt::ImageStore store;
};

TEST_F(ImageStoreTest, OneEntryPerFileWhateverThePath) {
  const std::string link = dir / "link";
  const std::string hard = dir / "hard";
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  ASSERT_EQ(::link(path.c_str(), hard.c_str()), 0);
  auto a = open(path);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(open(link), a);
  EXPECT_EQ(open(hard), a);
  EXPECT_EQ(store.size(), 1u);
}

TEST_F(ImageStoreTest, ChangedFileIsOpenedAfresh) {
  auto first = open(path);
  ASSERT_NE(first, nullptr);
  append_bytes();
  auto second = open(path);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first);
  EXPECT_EQ(store.size(), 2u);
}

// Sets the first byte of the file, keeping its size and its timestamps: the same identity.
void poke_first_byte(const std::string& path, char byte) {
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(0);
    f.put(byte);
  }
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST_F(ImageStoreTest, NonElfFileIsRememberedUntilItChanges) {
  poke_first_byte(path, 'X');  // no ELF magic: not an image
  EXPECT_EQ(open(path), nullptr);
  EXPECT_EQ(store.size(), 0u);
  // A valid ELF file again, with the same identity: the store answers from memory, so it
  // still says "not an image" -- which shows the file was not opened a second time.
  poke_first_byte(path, '\x7f');
  EXPECT_EQ(open(path), nullptr);
  ehbt::ImageStore fresh;
  EXPECT_NE(fresh.open(path, ehbt::Limits{}), nullptr);
  append_bytes();  // a new identity: opened
  EXPECT_NE(open(path), nullptr);
  EXPECT_EQ(store.size(), 1u);
}

// An ELF file that failed for another reason (here a limit) is not remembered as unusable.
TEST_F(ImageStoreTest, ElfFileThatFailedIsTriedAgain) {
  ehbt::Limits tight;
  tight.max_program_headers = 1;
  EXPECT_EQ(open(path, tight), nullptr);
  EXPECT_NE(open(path), nullptr);
}

}  // namespace
