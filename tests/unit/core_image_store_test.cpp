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

// A copy of this test program (an ELF file) in `dir`.
std::string copy_of_self(const elf_test::TempDir& dir, const char* name) {
  const std::string path = dir / name;
  std::filesystem::copy_file(elf_test::self_exe(), path);
  return path;
}

TEST(ImageStore, OneEntryPerFileWhateverThePath) {
  elf_test::TempDir dir;
  const std::string copy = copy_of_self(dir, "prog");
  const std::string link = dir / "link";
  const std::string hard = dir / "hard";
  ASSERT_EQ(symlink(copy.c_str(), link.c_str()), 0);
  ASSERT_EQ(::link(copy.c_str(), hard.c_str()), 0);
  ehbt::ImageStore store;
  auto a = store.open(copy, ehbt::Limits{});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(store.open(link, ehbt::Limits{}), a);
  EXPECT_EQ(store.open(hard, ehbt::Limits{}), a);
  EXPECT_EQ(store.size(), 1u);
}

TEST(ImageStore, ChangedFileIsOpenedAfresh) {
  elf_test::TempDir dir;
  const std::string path = copy_of_self(dir, "prog");
  ehbt::ImageStore store;
  auto first = store.open(path, ehbt::Limits{});
  ASSERT_NE(first, nullptr);
  // Appending changes the size (and the modification time): another file as far as the
  // store knows.
  std::ofstream(path, std::ios::binary | std::ios::app) << "trailing bytes";
  auto second = store.open(path, ehbt::Limits{});
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

TEST(ImageStore, NonElfFileIsRememberedUntilItChanges) {
  elf_test::TempDir dir;
  const std::string path = copy_of_self(dir, "prog");
  poke_first_byte(path, 'X');  // no ELF magic: not an image
  ehbt::ImageStore store;
  EXPECT_EQ(store.open(path, ehbt::Limits{}), nullptr);
  EXPECT_EQ(store.size(), 0u);
  // A valid ELF file again, with the same identity: the store answers from memory, so it
  // still says "not an image" -- which shows the file was not opened a second time.
  poke_first_byte(path, '\x7f');
  EXPECT_EQ(store.open(path, ehbt::Limits{}), nullptr);
  ehbt::ImageStore fresh;
  EXPECT_NE(fresh.open(path, ehbt::Limits{}), nullptr);
  // A new identity (another size): opened.
  std::ofstream(path, std::ios::binary | std::ios::app) << "trailing bytes";
  EXPECT_NE(store.open(path, ehbt::Limits{}), nullptr);
  EXPECT_EQ(store.size(), 1u);
}

// An ELF file that failed for another reason (here a limit) is not remembered as unusable.
TEST(ImageStore, ElfFileThatFailedIsTriedAgain) {
  elf_test::TempDir dir;
  const std::string path = copy_of_self(dir, "prog");
  ehbt::Limits tight;
  tight.max_program_headers = 1;
  ehbt::ImageStore store;
  EXPECT_EQ(store.open(path, tight), nullptr);
  EXPECT_NE(store.open(path, ehbt::Limits{}), nullptr);
}

}  // namespace
