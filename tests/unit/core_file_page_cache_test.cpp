// SPDX-License-Identifier: Apache-2.0
// Core memory read from the file by pread (FilePageCache) instead of from a mapping: the same
// bytes at every address, whatever was read before and whichever cache slots were reused.
// Every expected byte comes from the pattern the test wrote into the file at that offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/core_memory.hpp"
#include "core/file_page_cache.hpp"
#include "core_test_support.hpp"

namespace {

using ehbt::core::CoreMemory;
using ehbt::core::CoreSegment;
using ehbt::core::FilePageCache;
constexpr uint64_t kPage = FilePageCache::kPage;

// The byte the test writes at file offset `off` (a different pattern per `generation`).
std::byte pattern(uint64_t off, unsigned generation = 0) {
  return std::byte{static_cast<unsigned char>(((off + generation * 77) * 2654435761u) >> 13)};
}

std::vector<std::byte> patterned(std::size_t size, unsigned generation = 0) {
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = pattern(i, generation);
  return out;
}

// A file holding `bytes`, open for reading.
class PatternFile {
 public:
  explicit PatternFile(const std::vector<std::byte>& bytes) : path_(dir_.file("core")) {
    const int out = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(out, 0);
    EXPECT_EQ(pwrite(out, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    close(out);
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd_, 0);
  }
  ~PatternFile() { close(fd_); }
  PatternFile(const PatternFile&) = delete;
  PatternFile& operator=(const PatternFile&) = delete;
  int fd() const { return fd_; }
  // Replaces the file's bytes in place (same inode), as another writer would.
  void overwrite(const std::vector<std::byte>& bytes) const {
    const int out = open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(out, 0);
    ASSERT_EQ(pwrite(out, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    close(out);
  }

 private:
  core_test::TempDir dir_;
  std::string path_;
  int fd_ = -1;
};

bool page_is(const std::byte* p, std::size_t n, uint64_t offset, unsigned generation) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(offset + i, generation)) return false;
  }
  return true;
}

TEST(FilePageCache, PagesHoldTheFileBytesAndTheLastOneIsShort) {
  PatternFile file(patterned(5 * kPage + 100));
  FilePageCache cache(file.fd());
  std::size_t valid = 0, slot = 0;
  const std::byte* p = cache.page(2 * kPage, valid, slot);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(valid, kPage);
  EXPECT_TRUE(page_is(p, valid, 2 * kPage, 0));
  p = cache.page(5 * kPage, valid, slot);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(valid, 100u);
  EXPECT_TRUE(page_is(p, valid, 5 * kPage, 0));
  cache.page(6 * kPage, valid, slot);
  EXPECT_EQ(valid, 0u);  // past the end
}

// A cached page answers from its buffer (it still shows bytes the file no longer has); once
// every slot is taken, the next page replaces the least recently used one, which is then read
// afresh.
TEST(FilePageCache, KeepsRecentPagesAndReusesTheLeastRecentlyUsed) {
  constexpr std::size_t n = FilePageCache::kSlots;
  const std::size_t size = (n + 2) * kPage;
  PatternFile file(patterned(size, 0));
  FilePageCache cache(file.fd());
  std::size_t valid = 0, slot = 0;
  for (std::size_t i = 0; i < n; ++i) cache.page(i * kPage, valid, slot);
  std::size_t slot0 = 0;
  const std::byte* first = cache.page(0, valid, slot0);  // page 0 is now the most recent
  file.overwrite(patterned(size, 1));
  cache.page(n * kPage, valid, slot);  // takes the slot of page 1, the least recently used
  ASSERT_NE(slot, slot0);

  std::size_t again = 0;
  const std::byte* p = cache.page(0, valid, again);
  EXPECT_EQ(p, first);
  EXPECT_EQ(again, slot0);
  EXPECT_TRUE(page_is(p, kPage, 0, 0)) << "a cached page is not read again";
  p = cache.page(1 * kPage, valid, again);
  EXPECT_TRUE(page_is(p, kPage, kPage, 1)) << "page 1 should have been replaced and re-read";
  p = cache.page(n * kPage, valid, again);
  EXPECT_TRUE(page_is(p, kPage, n * kPage, 1));
}

TEST(FilePageCache, ReadDirectStopsAtTheEndOfTheFile) {
  const std::size_t size = 3 * kPage + 10;
  PatternFile file(patterned(size));
  FilePageCache cache(file.fd());
  std::vector<std::byte> out(3 * kPage);
  ASSERT_EQ(cache.read_direct(kPage / 2, {out.data(), 2 * kPage}), 2 * kPage);
  EXPECT_TRUE(page_is(out.data(), 2 * kPage, kPage / 2, 0));
  EXPECT_EQ(cache.read_direct(2 * kPage, out), kPage + 10);
  EXPECT_TRUE(page_is(out.data(), kPage + 10, 2 * kPage, 0));
  EXPECT_EQ(cache.read_direct(size + 5, out), 0u);
}

// Segments laid out as a core's can be: page-aligned and not, adjacent, one starting inside
// another, one not dumped, one long enough for reads of several pages.
struct Layout {
  std::vector<std::byte> file = patterned(0x10000);
  std::vector<CoreSegment> segments;
  Layout() {
    add(0x10000, 0x1000, 0x3000);
    add(0x13000, 0x5123, 0x2800);                             // its file offset is not page-aligned
    add(0x14000, 0x9000, 0x100);                              // starts inside the one before
    segments.push_back(CoreSegment{0x20000, 0x1000, 0, {}});  // mapped, not dumped
    add(0x30000, 0xa000, 0x5000);
  }
  void add(uint64_t vaddr, uint64_t offset, uint64_t size) {
    CoreSegment s{vaddr, size, 0, std::span<const std::byte>(file).subspan(offset, size)};
    s.file_offset = offset;
    segments.push_back(s);
  }
  // The rule for a word read at `addr` that stays inside one segment: the bytes of the dumped
  // segment with the greatest start at or below it. False when none covers the word.
  bool expected_word(uint64_t addr, uint64_t& value) const {
    const CoreSegment* best = nullptr;
    for (const CoreSegment& s : segments) {
      if (!s.dumped.empty() && s.vaddr <= addr && (best == nullptr || s.vaddr > best->vaddr))
        best = &s;
    }
    if (best == nullptr || addr + 8 > best->vaddr + best->dumped.size()) return false;
    value = 0;
    for (int i = 7; i >= 0; --i)
      value =
          value << 8 | std::to_integer<uint64_t>(file[best->file_offset + addr - best->vaddr + i]);
    return true;
  }
};

// Addresses visited in an order that hops between segments and pages, so that windows move
// and slots are reused between reads of the same page.
std::vector<uint64_t> hopping_addresses() {
  std::vector<uint64_t> out;
  const uint64_t starts[] = {0x10000, 0x30000, 0x13000, 0x34000, 0x11000, 0x14000, 0x20000,
                             0x12000, 0x31000, 0x15000, 0x33000, 0x32000, 0x10800};
  for (int round = 0; round < 3; ++round) {
    for (uint64_t base : starts) {
      for (uint64_t off = round * 8; off < kPage; off += 8 * 97) out.push_back(base + off);
    }
  }
  return out;
}

TEST(CoreMemoryFromFile, WordsAreTheFileBytesOfTheRightSegment) {
  Layout layout;
  PatternFile file(layout.file);
  CoreMemory mem(layout.segments, file.fd());
  std::size_t words = 0, faults = 0;
  for (uint64_t addr : hopping_addresses()) {
    uint64_t want = 0, got = 0;
    const bool covered = layout.expected_word(addr, want);
    ASSERT_EQ(mem.read_uint(addr, 8, false, got), covered) << std::hex << addr;
    if (covered) {
      EXPECT_EQ(got, want) << std::hex << addr;
      ++words;
    } else {
      ++faults;
    }
  }
  EXPECT_GT(words, 100u);
  EXPECT_GT(faults, 5u);  // the undumped segment and the end of the short one
}

// Reads of every length from one to several pages (the longest bypass the cache) return what
// the same memory without a file returns: the same count and the same bytes.
TEST(CoreMemoryFromFile, ReadsMatchTheMappedSpansAtEveryLength) {
  Layout layout;
  PatternFile file(layout.file);
  CoreMemory from_file(layout.segments, file.fd());
  CoreMemory from_spans(layout.segments);
  const std::size_t lengths[] = {
      1, 7, 8, 100, kPage - 3, kPage, kPage + 9, 2 * kPage + 1, 3 * kPage, 0x5000};
  std::size_t compared = 0;
  for (uint64_t addr : hopping_addresses()) {
    for (std::size_t len : lengths) {
      std::vector<std::byte> a(len), b(len);
      const std::size_t na = from_file.read(addr + 5, a);
      const std::size_t nb = from_spans.read(addr + 5, b);
      ASSERT_EQ(na, nb) << std::hex << addr + 5 << " len " << std::dec << len;
      ASSERT_TRUE(std::equal(a.begin(), a.begin() + na, b.begin())) << std::hex << addr + 5;
      compared += na;
    }
  }
  EXPECT_GT(compared, 1000000u);
}

// A core file that lost its end after it was opened: reads stop where the file now ends.
TEST(CoreMemoryFromFile, AFileCutShortReadsWhatRemains) {
  Layout layout;
  std::vector<std::byte> cut(layout.file.begin(), layout.file.begin() + 0xc010);
  PatternFile file(cut);
  CoreMemory mem(layout.segments, file.fd());
  std::vector<std::byte> out(0x100);
  // The last segment's bytes [0xa000, 0xf000) now end at 0xc010: 0x32000 maps to 0xc000.
  EXPECT_EQ(mem.read(0x32000, out), 0x10u);
  EXPECT_TRUE(page_is(out.data(), 0x10, 0xc000, 0));
  uint64_t v = 0;
  EXPECT_FALSE(mem.read_uint(0x32010, 8, false, v));
  EXPECT_TRUE(mem.read_uint(0x31ff8, 8, false, v));
  std::vector<std::byte> long_read(0x3000);
  EXPECT_EQ(mem.read(0x30000, long_read), 0x2010u);  // the direct path stops there too
}

}  // namespace
