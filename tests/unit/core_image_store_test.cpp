// SPDX-License-Identifier: Apache-2.0
// ImageStore: one entry per file however it is named, a fresh open when the file changes, files
// that are not ELF remembered without being kept as images, and the least-recently-used caps.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

// The least-recently-used caps. Each file is a copy of this test program: one image apiece
// (a copy is another inode, so another identity).
class BoundedImageStoreTest : public ::testing::Test {
 protected:
  std::string copy(const std::string& name) {
    const std::string file = dir / name;
    std::filesystem::copy_file(elf_test::self_exe(), file);
    return file;
  }
  static ehbt::Limits caps(uint32_t images, uint64_t bytes = 0) {
    ehbt::Limits limits;
    limits.max_stored_images = images;
    limits.max_stored_image_bytes = bytes;
    return limits;
  }

  elf_test::TempDir dir;
  const std::string a = copy("a"), b = copy("b"), c = copy("c");
  const uint64_t file_bytes = std::filesystem::file_size(a);
};

TEST_F(BoundedImageStoreTest, DefaultCapIsTheLimitsDefault) {
  ehbt::ImageStore store;
  EXPECT_EQ(store.max_images(), ehbt::Limits{}.max_stored_images);
  EXPECT_EQ(store.max_bytes(), ehbt::Limits{}.max_stored_image_bytes);
}

// a, b opened; a opened again (now the most recent); c opened: b, the least recently opened,
// goes, and a stays (the same image, not parsed again).
TEST_F(BoundedImageStoreTest, LeastRecentlyOpenedIsEvictedFirst) {
  ehbt::ImageStore store(caps(2));
  auto ia = store.open(a, {});
  auto ib = store.open(b, {});
  ASSERT_NE(ia, nullptr);
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(store.open(a, {}), ia);
  auto ic = store.open(c, {});
  ASSERT_NE(ic, nullptr);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.open(a, {}), ia);  // kept
  EXPECT_EQ(store.open(c, {}), ic);  // kept
  EXPECT_NE(store.open(b, {}), ib);  // evicted: parsed afresh
}

TEST_F(BoundedImageStoreTest, CountCapIsNeverExceeded) {
  ehbt::ImageStore store(caps(1));
  for (const auto& f : {a, b, c, a, c, b}) {
    ASSERT_NE(store.open(f, {}), nullptr);
    EXPECT_EQ(store.size(), 1u);
    EXPECT_EQ(store.bytes(), file_bytes);
  }
}

// A byte cap of one file and a bit: the second file pushes the first out. The most recent
// image stays even when it alone exceeds the cap.
TEST_F(BoundedImageStoreTest, ByteCapEvictsToo) {
  ehbt::ImageStore store(caps(0, file_bytes + 1));
  auto ia = store.open(a, {});
  auto ib = store.open(b, {});
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.bytes(), file_bytes);
  EXPECT_EQ(store.open(b, {}), ib);
  EXPECT_NE(store.open(a, {}), ia);

  ehbt::ImageStore tiny(caps(0, 1));
  auto ta = tiny.open(a, {});
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny.open(a, {}), ta);
}

// Eviction drops the store's reference only: whoever holds the image keeps a working one, and
// the file opened again after eviction is the same file (same build-id, same answers).
TEST_F(BoundedImageStoreTest, EvictedImageStaysUsableByItsHolder) {
  ehbt::ImageStore store(caps(1));
  std::shared_ptr<const ehbt::Image> held = store.open(a, {});
  ASSERT_NE(held, nullptr);
  std::weak_ptr<const ehbt::Image> watch = held;
  ASSERT_NE(store.open(b, {}), nullptr);  // evicts a
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(held.use_count(), 1);  // the store no longer holds it
  EXPECT_FALSE(held->segments().empty());
  EXPECT_EQ(held->name(), a);

  auto reopened = store.open(a, {});  // reopening after eviction
  ASSERT_NE(reopened, nullptr);
  EXPECT_NE(reopened, held);
  EXPECT_EQ(reopened->build_id(), held->build_id());
  EXPECT_EQ(reopened->segments().size(), held->segments().size());
  // Both answer alike for the entry point's function (this program has a symbol table).
  auto s1 = held->symbolize(held->entry());
  auto s2 = reopened->symbolize(reopened->entry());
  ASSERT_TRUE(s1.has_value());
  ASSERT_TRUE(s2.has_value());
  EXPECT_EQ(s1->name, s2->name);
  EXPECT_EQ(s1->start, s2->start);

  held.reset();
  EXPECT_TRUE(watch.expired());  // released by its last holder, the store kept nothing
}

// Files known not to be ELF are remembered for at most max_stored_images files: with a cap
// of one, the second such file makes the store forget the first, which is then opened again
// (and, made valid meanwhile without a new identity, opens as an image).
TEST_F(BoundedImageStoreTest, UnusableFilesAreBoundedToo) {
  ehbt::ImageStore store(caps(1));
  poke_first_byte(a, 'X');
  poke_first_byte(b, 'X');
  EXPECT_EQ(store.open(a, {}), nullptr);
  EXPECT_EQ(store.open(b, {}), nullptr);  // a forgotten
  poke_first_byte(a, '\x7f');
  poke_first_byte(b, '\x7f');
  EXPECT_NE(store.open(a, {}), nullptr);  // opened: no longer remembered as unusable
  EXPECT_EQ(store.open(b, {}), nullptr);  // still remembered
}

// Several targets at once (the Python front end opens cores from several threads).
TEST_F(BoundedImageStoreTest, ConcurrentOpensKeepTheCap) {
  ehbt::ImageStore store(caps(2));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string* files[] = {&a, &b, &c};
      for (int i = 0; i < 30; ++i) {
        if (store.open(*files[(i + t) % 3], {}) == nullptr) ++failures;
        if (store.size() > 2) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.bytes(), 2 * file_bytes);
}

}  // namespace
