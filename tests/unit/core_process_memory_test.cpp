// SPDX-License-Identifier: Apache-2.0
// ProcessMemory's page cache, on this process's own memory: whole pages per system call
// while caching, the exact readable prefix at an unreadable page, and fresh reads once
// caching is off; a whole range prefetched in one call, and what stays once the process runs.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "core/process_memory.hpp"

namespace {

using ehbt::core::ProcessMemory;

struct TwoPages {
  std::byte* base = nullptr;
  TwoPages() {
    void* p = mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    if (base != nullptr) {
      for (int i = 0; i < 2 * 4096; ++i) base[i] = static_cast<std::byte>(i * 7);
    }
  }
  ~TwoPages() {
    if (base != nullptr) munmap(base, 2 * 4096);
  }
  uint64_t addr(std::size_t off) const { return reinterpret_cast<uint64_t>(base + off); }
};

TEST(ProcessMemory, CachedWordReadsCostOneCallPerPage) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  for (std::size_t off = 0; off < 2 * 4096; off += 8) {
    std::byte word[8];
    ASSERT_EQ(mem.read(m.addr(off), word), 8u);
    ASSERT_EQ(std::memcmp(word, m.base + off, 8), 0) << off;
  }
  EXPECT_EQ(mem.syscalls(), 2u);
  // A read across the page boundary is served from both cached pages.
  std::byte across[16];
  ASSERT_EQ(mem.read(m.addr(4096 - 8), across), 16u);
  EXPECT_EQ(std::memcmp(across, m.base + 4096 - 8, 16), 0);
  EXPECT_EQ(mem.syscalls(), 2u);
}

TEST(ProcessMemory, ReadablePrefixAtAnUnreadablePage) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ASSERT_EQ(mprotect(m.base + 4096, 4096, PROT_NONE), 0);
  for (bool caching : {false, true}) {
    ProcessMemory mem(getpid(), 64);
    mem.set_caching(caching);
    std::byte buf[32];
    EXPECT_EQ(mem.read(m.addr(4096 - 16), buf), 16u) << caching;
    EXPECT_EQ(std::memcmp(buf, m.base + 4096 - 16, 16), 0);
    EXPECT_EQ(mem.read(m.addr(4096), buf), 0u) << caching;
  }
}

TEST(ProcessMemory, CachingOffSeesChanges) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  uint64_t v = 0;
  std::span<std::byte> out(reinterpret_cast<std::byte*>(&v), 8);
  ASSERT_EQ(mem.read(m.addr(64), out), 8u);
  const uint64_t before = v;
  std::memset(m.base + 64, 0x5a, 8);
  ASSERT_EQ(mem.read(m.addr(64), out), 8u);
  EXPECT_EQ(v, before);  // cached: the process was to be stopped
  mem.set_caching(false);
  ASSERT_EQ(mem.read(m.addr(64), out), 8u);
  EXPECT_EQ(v, 0x5a5a5a5a5a5a5a5aull);
}

TEST(ProcessMemory, CacheStaysWithinItsCap) {
  std::vector<TwoPages> maps(4);
  ProcessMemory mem(getpid(), 3);
  mem.set_caching(true);
  // 8 distinct pages through a 3-page cache, twice: every answer still right.
  for (int round = 0; round < 2; ++round) {
    for (auto& m : maps) {
      for (std::size_t off : {std::size_t{0}, std::size_t{4096}}) {
        std::byte b[8];
        ASSERT_EQ(mem.read(m.addr(off + 8), b), 8u);
        ASSERT_EQ(std::memcmp(b, m.base + off + 8, 8), 0);
      }
    }
  }
}

TEST(ProcessMemory, PrefetchReadsARangeInOneCall) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  // From the middle of the first page: the range is widened to whole pages.
  EXPECT_TRUE(mem.prefetch(m.addr(100), m.addr(2 * 4096)));
  EXPECT_EQ(mem.syscalls(), 1u);
  for (std::size_t off = 0; off < 2 * 4096; off += 8) {
    std::byte word[8];
    ASSERT_EQ(mem.read(m.addr(off), word), 8u);
    ASSERT_EQ(std::memcmp(word, m.base + off, 8), 0) << off;
  }
  EXPECT_EQ(mem.syscalls(), 1u);
  // Already cached: nothing to read.
  EXPECT_TRUE(mem.prefetch(m.addr(0), m.addr(2 * 4096)));
  EXPECT_EQ(mem.syscalls(), 1u);
}

TEST(ProcessMemory, PrefetchStopsAtAnUnreadablePageAndAtTheCap) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ASSERT_EQ(mprotect(m.base + 4096, 4096, PROT_NONE), 0);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  EXPECT_FALSE(mem.prefetch(m.addr(0), m.addr(2 * 4096)));
  std::byte buf[32];
  EXPECT_EQ(mem.read(m.addr(4096 - 16), buf), 16u);  // the readable prefix, as before
  EXPECT_EQ(std::memcmp(buf, m.base + 4096 - 16, 16), 0);
  EXPECT_EQ(mem.read(m.addr(4096), buf), 0u);

  TwoPages n;
  ASSERT_NE(n.base, nullptr);
  ProcessMemory small(getpid(), 1);
  small.set_caching(true);
  EXPECT_FALSE(small.prefetch(n.addr(0), n.addr(2 * 4096)));  // room for one page only
  ASSERT_EQ(small.read(n.addr(4096 + 8), std::span(buf, 8)), 8u);
  EXPECT_EQ(std::memcmp(buf, n.base + 4096 + 8, 8), 0);
  // Caching off: nothing is prefetched.
  ProcessMemory off(getpid(), 64);
  EXPECT_FALSE(off.prefetch(n.addr(0), n.addr(4096)));
  EXPECT_EQ(off.syscalls(), 0u);
}

// Every word of [off, off + len) of `pages` reads back as the pages hold it.
void expect_cached_equal(ProcessMemory& mem, const TwoPages& pages, std::size_t off,
                         std::size_t len) {
  for (std::size_t o = off; o < off + len; o += 8) {
    std::byte word[8];
    ASSERT_EQ(mem.read(pages.addr(o), word), 8u) << o;
    ASSERT_EQ(std::memcmp(word, pages.base + o, 8), 0) << o;
  }
}

// Two separate mappings of two pages each, for reads that span several ranges.
class ProcessMemoryTwoMappings : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(m.base, nullptr);
    ASSERT_NE(n.base, nullptr);
  }
  // [start, end) of both pages of `t`.
  static std::pair<uint64_t, uint64_t> both_pages(const TwoPages& t) {
    return {t.addr(0), t.addr(2 * 4096)};
  }
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  TwoPages m, n;
};

TEST_F(ProcessMemoryTwoMappings, PrefetchAllReadsSeveralRangesInOneCall) {
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  const Ranges ranges = {
      {m.addr(100), m.addr(2 * 4096)},  // widened to whole pages, as prefetch() does
      {n.addr(0), n.addr(4096)}};
  EXPECT_TRUE(mem.prefetch_all(ranges));
  EXPECT_EQ(mem.syscalls(), 1u);
  expect_cached_equal(mem, m, 0, 2 * 4096);
  expect_cached_equal(mem, n, 0, 4096);
  EXPECT_EQ(mem.syscalls(), 1u);
  // Both cached now: each range is left to prefetch(), which finds nothing to read.
  EXPECT_TRUE(mem.prefetch_all(ranges));
  EXPECT_EQ(mem.syscalls(), 1u);
}

TEST_F(ProcessMemoryTwoMappings, PrefetchAllReadsWhatFollowsAnUnreadablePageAlone) {
  ASSERT_EQ(mprotect(m.base + 4096, 4096, PROT_NONE), 0);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  const Ranges ranges = {both_pages(m), both_pages(n)};
  EXPECT_FALSE(mem.prefetch_all(ranges));  // m's second page cannot be read
  const uint64_t calls = mem.syscalls();
  expect_cached_equal(mem, m, 0, 4096);  // the readable part of m, and all of n, are cached
  expect_cached_equal(mem, n, 0, 2 * 4096);
  EXPECT_EQ(mem.syscalls(), calls);
  std::byte buf[8];
  EXPECT_EQ(mem.read(m.addr(4096), buf), 0u);
}

TEST_F(ProcessMemoryTwoMappings, PrefetchAllStopsAtTheCap) {
  ProcessMemory mem(getpid(), 3);  // room for three of the four pages
  mem.set_caching(true);
  EXPECT_FALSE(mem.prefetch_all(Ranges{both_pages(m), both_pages(n)}));
  expect_cached_equal(mem, m, 0, 2 * 4096);  // still readable, cached or not
  expect_cached_equal(mem, n, 0, 2 * 4096);
  ProcessMemory off(getpid(), 64);  // caching off: nothing is prefetched
  EXPECT_FALSE(off.prefetch_all(Ranges{{m.addr(0), m.addr(4096)}}));
  EXPECT_EQ(off.syscalls(), 0u);
}

TEST_F(ProcessMemoryTwoMappings, ReservedPagesHoldWhatIsReadIntoThem) {
  // Spare buffers are reused: stale bytes or a stale "readable" must never show through.
  ASSERT_EQ(mprotect(n.base + 4096, 4096, PROT_NONE), 0);
  ProcessMemory mem(getpid(), 64);
  mem.reserve_pages(3);
  mem.set_caching(true);
  EXPECT_TRUE(mem.prefetch_all(Ranges{both_pages(m)}));
  expect_cached_equal(mem, m, 0, 2 * 4096);
  std::byte buf[8];
  EXPECT_EQ(mem.read(n.addr(4096), buf), 0u);  // the third spare, for an unreadable page
  expect_cached_equal(mem, n, 0, 4096);        // past the spares: fresh buffers
}

TEST(ProcessMemory, KeptPagesStayAndOthersAreReadFresh) {
  TwoPages m;
  ASSERT_NE(m.base, nullptr);
  ProcessMemory mem(getpid(), 64);
  mem.set_caching(true);
  ASSERT_TRUE(mem.prefetch(m.addr(0), m.addr(4096)));  // the first page only
  mem.keep_cached();
  std::memset(m.base + 64, 0x11, 8);
  std::memset(m.base + 4096 + 64, 0x22, 8);
  uint64_t v = 0;
  std::span<std::byte> out(reinterpret_cast<std::byte*>(&v), 8);
  ASSERT_EQ(mem.read(m.addr(64), out), 8u);
  EXPECT_NE(v, 0x1111111111111111ull);  // the snapshot taken before the change
  ASSERT_EQ(mem.read(m.addr(4096 + 64), out), 8u);
  EXPECT_EQ(v, 0x2222222222222222ull);  // not in the snapshot: read from the process now
  std::memset(m.base + 4096 + 64, 0x33, 8);
  ASSERT_EQ(mem.read(m.addr(4096 + 64), out), 8u);
  EXPECT_EQ(v, 0x3333333333333333ull);  // and not kept
  // A read across the two: the snapshot's part, then the fresh part.
  std::byte across[16];
  ASSERT_EQ(mem.read(m.addr(4096 - 8), across), 16u);
  EXPECT_EQ(std::memcmp(across + 8, m.base + 4096, 8), 0);
  // Turning caching off drops the snapshot too.
  mem.set_caching(false);
  ASSERT_EQ(mem.read(m.addr(64), out), 8u);
  EXPECT_EQ(v, 0x1111111111111111ull);
}

}  // namespace
