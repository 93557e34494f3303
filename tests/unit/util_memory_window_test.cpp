// SPDX-License-Identifier: Apache-2.0
// The read window of BufferMemory and CoreMemory (Memory::read_exact/read_uint serve reads
// inside the bytes the last read came from without the virtual call): every answer must be
// the one the rule of the memory gives, whatever was read before. The rule: a read starts in
// the segment with the greatest start at or below its address and continues into the next.
// Expected bytes come from how each test fills its segments.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/core_memory.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"
#include "ehbt/unwinder.hpp"

namespace {

using ehbt::BufferMemory;

std::vector<std::byte> filled(std::size_t n, unsigned char value) {
  return std::vector<std::byte>(n, std::byte{value});
}

uint64_t word(ehbt::Memory& mem, uint64_t addr) {
  uint64_t v = 0;
  EXPECT_TRUE(mem.read_uint(addr, 8, false, v)) << std::hex << addr;
  return v;
}

constexpr uint64_t kA = 0xaaaaaaaaaaaaaaaa;
constexpr uint64_t kB = 0xbbbbbbbbbbbbbbbb;

TEST(MemoryWindow, AdjacentSegmentsReadAcrossTheBoundary) {
  BufferMemory mem;
  mem.add(0x1000, filled(0x100, 0xaa));
  mem.add(0x1100, filled(0x100, 0xbb));
  EXPECT_EQ(word(mem, 0x10f0), kA);                  // the window is now the first segment
  EXPECT_EQ(word(mem, 0x10fc), 0xbbbbbbbbaaaaaaaa);  // 4 bytes of each
  EXPECT_EQ(word(mem, 0x1100), kB);
  EXPECT_EQ(word(mem, 0x10f8), kA);  // back in the first after the window moved
}

TEST(MemoryWindow, ASegmentStartingInsideAnotherServesFromItsStart) {
  // B starts inside A: from 0x1080 on, reads start in B (the greatest start at or below).
  BufferMemory mem;
  mem.add(0x1000, filled(0x100, 0xaa));
  mem.add(0x1080, filled(0x10, 0xbb));
  EXPECT_EQ(word(mem, 0x1000), kA);  // window: A, but only up to where B starts
  EXPECT_EQ(word(mem, 0x1080), kB);
  EXPECT_EQ(word(mem, 0x1078), kA);  // starts in A: A's bytes, all 8
  EXPECT_EQ(word(mem, 0x1088), kB);
  uint64_t v = 0;
  // 0x1090 onwards: B ended and A (which started lower) is not consulted again.
  EXPECT_FALSE(mem.read_uint(0x1090, 8, false, v));
}

TEST(MemoryWindow, WritesAndReplacedSegmentsAreSeen) {
  BufferMemory mem;
  mem.add(0x2000, filled(0x40, 0x11));
  EXPECT_EQ(word(mem, 0x2000), 0x1111111111111111u);
  ASSERT_TRUE(mem.write_uint(0x2008, 0x0123456789abcdef, 8, false));
  EXPECT_EQ(word(mem, 0x2008), 0x0123456789abcdefu);
  mem.add(0x2000, filled(0x40, 0x22));  // replaces the windowed segment
  EXPECT_EQ(word(mem, 0x2008), 0x2222222222222222u);
}

TEST(MemoryWindow, ACopyReadsItsOwnBytes) {
  auto original = std::make_unique<BufferMemory>();
  original->add(0x3000, filled(0x40, 0x33));
  EXPECT_EQ(word(*original, 0x3000), 0x3333333333333333u);
  BufferMemory copy(*original);
  BufferMemory assigned;
  assigned = *original;
  original.reset();  // a window copied along would now point into freed memory
  EXPECT_EQ(word(copy, 0x3008), 0x3333333333333333u);
  EXPECT_EQ(word(assigned, 0x3010), 0x3333333333333333u);
}

TEST(MemoryWindow, ByteOrderAndSizesOtherThanTheFastPath) {
  BufferMemory mem;
  std::vector<std::byte> bytes;
  for (unsigned i = 0; i < 16; ++i) bytes.push_back(std::byte(i + 1));
  mem.add(0x4000, bytes);
  EXPECT_EQ(word(mem, 0x4000), 0x0807060504030201u);
  uint64_t v = 0;
  ASSERT_TRUE(mem.read_uint(0x4000, 8, true, v));
  EXPECT_EQ(v, 0x0102030405060708u);
  ASSERT_TRUE(mem.read_uint(0x4004, 4, false, v));
  EXPECT_EQ(v, 0x08070605u);
  EXPECT_FALSE(mem.read_uint(0x400c, 8, false, v));  // runs off the end
}

TEST(MemoryWindow, CoreSegmentsFollowTheSameRule) {
  const std::vector<std::byte> a = filled(0x100, 0xaa), b = filled(0x100, 0xbb),
                               c = filled(0x10, 0xcc);
  std::vector<ehbt::core::CoreSegment> segments = {
      {0x1000, 0x100, 0, std::span<const std::byte>(a)},
      {0x1100, 0x100, 0, std::span<const std::byte>(b)},
      {0x1180, 0x10, 0, std::span<const std::byte>(c)},  // starts inside b
      {0x5000, 0x100, 0, {}},                            // not dumped: faults
  };
  ehbt::core::CoreMemory mem(segments);
  EXPECT_EQ(word(mem, 0x1008), kA);
  EXPECT_EQ(word(mem, 0x10fc), 0xbbbbbbbbaaaaaaaa);
  EXPECT_EQ(word(mem, 0x1100), kB);
  EXPECT_EQ(word(mem, 0x1180), 0xccccccccccccccccu);
  EXPECT_EQ(word(mem, 0x1178), kB);
  uint64_t v = 0;
  // 0x1190 onwards: c ended and b (which started lower) is not consulted again.
  EXPECT_FALSE(mem.read_uint(0x1190, 8, false, v));
  EXPECT_FALSE(mem.read_uint(0x5000, 8, false, v));
  EXPECT_FALSE(mem.read_uint(0x11fc, 8, false, v));  // runs past the last dumped byte
}

TEST(MemoryRegions, CoreSegmentsAreTheMappings) {
  // Every PT_LOAD is a mapping, dumped or not; adjacent ones stay apart (a stack and the
  // mapping after it); a segment overlapping an earlier one is dropped.
  const std::vector<std::byte> a = filled(0x100, 0xaa);
  std::vector<ehbt::core::CoreSegment> segments = {
      {0x5000, 0x1000, 0, {}},
      {0x1000, 0x100, 0, std::span<const std::byte>(a)},
      {0x1100, 0x100, 0, {}},
      {0x1180, 0x10, 0, {}},
  };
  ehbt::core::CoreMemory mem(segments);
  auto r = mem.region_of(0x10ff);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->start, 0x1000u);
  EXPECT_EQ(r->end, 0x1100u);
  r = mem.region_of(0x1180);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->start, 0x1100u);
  EXPECT_EQ(r->end, 0x1200u);
  r = mem.region_of(0x5fff);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->start, 0x5000u);
  EXPECT_FALSE(mem.region_of(0x1200).has_value());
  EXPECT_FALSE(mem.region_of(0xfff).has_value());
}

TEST(MemoryRegions, LayersAskTheirLayersAndSelfReadsItsMaps) {
  ehbt::BufferMemory none, some;
  some.add_region(0x2000, 0x3000);
  ehbt::LayeredMemory layered;
  layered.push(&none);
  layered.push(&some);
  auto r = layered.region_of(0x2fff);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->start, 0x2000u);
  EXPECT_FALSE(layered.region_of(0x3000).has_value());
  // This function's own stack variable lies in a mapping of /proc/self/maps.
  int local = 0;
  const auto here = reinterpret_cast<uintptr_t>(&local);
  ehbt::SelfMemory self;
  r = self.region_of(here);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->contains(here));
}

TEST(RegisterSetCopy, CopiesTheValidRegistersOfTheMaskOnly) {
  ehbt::RegisterSet from(ehbt::Arch::X86_64);
  from.set(3, 0x33);
  from.set(6, 0x66);
  from.set(12, 0x1212);
  from.clear(12);     // its value stays in the array, invalid
  from.set(7, 0x77);  // valid but not in the mask
  std::bitset<ehbt::kMaxRegs> mask;
  const std::vector<uint16_t> listed = {3, 6, 12, 13};
  for (uint16_t r : listed) mask.set(r);
  ehbt::RegisterSet to(ehbt::Arch::X86_64);
  to.set(1, 0x11);  // kept: the copy only adds
  to.copy_valid(from, mask, listed);
  EXPECT_EQ(to.get(3), 0x33u);
  EXPECT_EQ(to.get(6), 0x66u);
  EXPECT_FALSE(to.has(12));
  EXPECT_FALSE(to.has(13));
  EXPECT_FALSE(to.has(7));
  EXPECT_EQ(to.get(1), 0x11u);
  EXPECT_EQ(to.count(), 3u);
}

TEST(FrameLayout, ARecordIsFortyEightBytes) {
  // A walk stores one per frame: the size is what a deep walk touches.
  EXPECT_LE(sizeof(ehbt::Frame), 48u);
}

}  // namespace
