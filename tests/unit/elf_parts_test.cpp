// SPDX-License-Identifier: Apache-2.0
// The small pieces: eh_frame_ptr decoding and build-id notes from hand-made bytes, and
// ModuleSet lookups.
#include <elf.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/memory.hpp"
#include "elf/eh_frame_ptr.hpp"
#include "elf/notes.hpp"

namespace {

using ehbt::elf::decode_eh_frame_ptr;
using ehbt::elf::find_build_id;

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(ElfParts, EhFramePtrPcrelSdata4) {
  // version 1, pcrel|sdata4 (0x1b), fde_count udata4, table datarel|sdata4; ptr = -0x100.
  auto hdr = bytes({1, 0x1b, 0x03, 0x3b, 0x00, 0xff, 0xff, 0xff});
  // Field at hdr + 4: 0x2004 - 0x100 = 0x1f04.
  EXPECT_EQ(decode_eh_frame_ptr(hdr, 0x2000, false, 8), 0x1f04u);
  // Big-endian: same value spelled the other way round.
  auto be = bytes({1, 0x1b, 0x03, 0x3b, 0xff, 0xff, 0xff, 0x00});
  EXPECT_EQ(decode_eh_frame_ptr(be, 0x2000, true, 8), 0x1f04u);
}

TEST(ElfParts, EhFramePtrOtherEncodings) {
  // udata4 absolute.
  EXPECT_EQ(decode_eh_frame_ptr(bytes({1, 0x03, 3, 0x3b, 0x78, 0x56, 0x34, 0x12}), 0, false, 8),
            0x12345678u);
  // absptr in a 64-bit image: 8 bytes.
  EXPECT_EQ(decode_eh_frame_ptr(bytes({1, 0x00, 3, 0x3b, 8, 7, 6, 5, 4, 3, 2, 1}), 0, false, 8),
            0x0102030405060708u);
  // absptr in a 32-bit image: 4 bytes.
  EXPECT_EQ(decode_eh_frame_ptr(bytes({1, 0x00, 3, 0x3b, 4, 3, 2, 1}), 0, false, 4), 0x01020304u);
  // datarel|sdata8: relative to the header start.
  EXPECT_EQ(
      decode_eh_frame_ptr(bytes({1, 0x3c, 3, 0x3b, 0x10, 0, 0, 0, 0, 0, 0, 0}), 0x5000, false, 8),
      0x5010u);
  // pcrel|udata8.
  EXPECT_EQ(
      decode_eh_frame_ptr(bytes({1, 0x14, 3, 0x3b, 0x10, 0, 0, 0, 0, 0, 0, 0}), 0x5000, false, 8),
      0x5014u);
  // pcrel|sdata2 = -4: points at the header itself.
  EXPECT_EQ(decode_eh_frame_ptr(bytes({1, 0x1a, 3, 0x3b, 0xfc, 0xff}), 0x5000, false, 8), 0x5000u);
  // 32-bit images wrap at 4 GiB.
  EXPECT_EQ(
      decode_eh_frame_ptr(bytes({1, 0x1b, 3, 0x3b, 0x00, 0x00, 0x00, 0x80}), 0x80000000, false, 4),
      0x4u);
}

TEST(ElfParts, EhFramePtrRejects) {
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({2, 0x1b, 3, 0x3b, 0, 0, 0, 0}), 0, false, 8));  // version
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({1, 0xff, 3, 0x3b, 0, 0, 0, 0}), 0, false, 8));  // omit
  EXPECT_FALSE(
      decode_eh_frame_ptr(bytes({1, 0x9b, 3, 0x3b, 0, 0, 0, 0}), 0, false, 8));  // indirect
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({1, 0x01, 3, 0x3b, 0, 0, 0, 0}), 0, false, 8));  // uleb
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({1, 0x2b, 3, 0x3b, 0, 0, 0, 0}), 0, false, 8));  // textrel
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({1, 0x1b, 3, 0x3b, 0, 0}), 0, false, 8));  // truncated
  EXPECT_FALSE(decode_eh_frame_ptr(bytes({1, 0x1b}), 0, false, 8));
  EXPECT_FALSE(decode_eh_frame_ptr({}, 0, false, 8));
}

TEST(ElfParts, BuildIdNotes) {
  // An NT_GNU_ABI_TAG note (namesz 4, descsz 16, type 1) then the build-id (descsz 5, padded).
  auto notes = bytes({4, 0, 0, 0, 16, 0, 0,   0,   1,   0, 0,    0,    'G',  'N',  'U',  0, 0, 0, 0,
                      0, 3, 0, 0, 0,  2, 0,   0,   0,   0, 0,    0,    0,    4,    0,    0, 0, 5, 0,
                      0, 0, 3, 0, 0,  0, 'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef, 0x01, 0, 0, 0});
  EXPECT_EQ(find_build_id(notes, false, 4), "deadbeef01");
  // Big-endian headers.
  auto be = bytes({0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 3, 'G', 'N', 'U', 0, 0xab, 0xcd, 0, 0});
  EXPECT_EQ(find_build_id(be, true, 4), "abcd");
  // Another vendor's note with type 3 is not a build-id.
  auto other = bytes({4, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'X', 'Y', 'Z', 0, 1, 2, 0, 0});
  EXPECT_EQ(find_build_id(other, false, 4), "");
  // Sizes that leave the buffer end the walk.
  auto bad = bytes({4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 'G', 'N', 'U', 0});
  EXPECT_EQ(find_build_id(bad, false, 4), "");
  EXPECT_EQ(find_build_id({}, false, 4), "");
  // 8-byte alignment rounds offsets: name 12..17, descriptor at 24 (2 bytes), next note at
  // 32 whose 4-byte name ends at 48, already aligned, where its descriptor starts.
  auto a8 = bytes({5, 0, 0, 0, 2, 0, 0,   0,   5,   0, 0,    0, 'A', 'B', 'C', 'D', 0, 0, 0,
                   0, 0, 0, 0, 0, 7, 7,   0,   0,   0, 0,    0, 0,   4,   0,   0,   0, 1, 0,
                   0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0x42, 0, 0,   0,   0,   0,   0, 0});
  EXPECT_EQ(find_build_id(a8, false, 8), "42");
}

ehbt::Module module(uint64_t start, uint64_t end, const char* path) {
  ehbt::Module m;
  m.start = start;
  m.end = end;
  m.path = path;
  return m;
}

TEST(ElfParts, ModuleSetFind) {
  ehbt::ModuleSet set;
  EXPECT_EQ(set.find(0x1000), nullptr);
  set.add(module(0x3000, 0x4000, "c"));
  set.add(module(0x1000, 0x2000, "a"));
  set.add(module(0x10000, 0x90000, "big"));
  set.add(module(0x20000, 0x21000, "inside_big"));
  set.add(module(0x2000, 0x3000, "b"));
  ASSERT_EQ(set.modules().size(), 5u);
  for (std::size_t i = 1; i < set.modules().size(); ++i)
    EXPECT_LE(set.modules()[i - 1].start, set.modules()[i].start);
  EXPECT_EQ(set.find(0xfff), nullptr);
  EXPECT_EQ(set.find(0x1000)->path, "a");
  EXPECT_EQ(set.find(0x1fff)->path, "a");
  EXPECT_EQ(set.find(0x2000)->path, "b");
  EXPECT_EQ(set.find(0x3fff)->path, "c");
  EXPECT_EQ(set.find(0x4000), nullptr);
  EXPECT_EQ(set.find(0x10000)->path, "big");
  // Overlap: the containing module with the greatest start.
  EXPECT_EQ(set.find(0x20010)->path, "inside_big");
  EXPECT_EQ(set.find(0x21000)->path, "big");
  EXPECT_EQ(set.find(0x8ffff)->path, "big");
  EXPECT_EQ(set.find(0x90000), nullptr);
  EXPECT_EQ(set.find(UINT64_MAX), nullptr);
}

// find(addr, hint) answers as find(addr) whatever the hint: a module of the set, another
// set's module with the same range, or none; overlapping modules keep the innermost answer.
TEST(ElfParts, ModuleSetFindWithHint) {
  const uint64_t probes[] = {0xfff,   0x1000,  0x1fff,  0x2000,  0x2fff,    0x3000,
                             0x4000,  0x4fff,  0x5000,  0x10000, 0x20010,   0x21000,
                             0x8ffff, 0x90000, 0x90001, 0,       UINT64_MAX};
  ehbt::ModuleSet other;
  other.add(module(0x1000, 0x2000, "a elsewhere"));
  auto check_all = [&](const ehbt::ModuleSet& set) {
    std::vector<const ehbt::Module*> hints{nullptr, &other.modules()[0]};
    for (const ehbt::Module& m : set.modules()) hints.push_back(&m);
    for (uint64_t pc : probes) {
      for (const ehbt::Module* hint : hints) {
        EXPECT_EQ(set.find(pc, hint), set.find(pc))
            << std::hex << pc << " hint " << (hint ? hint->path : "none");
      }
    }
  };

  ehbt::ModuleSet set;
  set.add(module(0x3000, 0x4000, "c"));
  set.add(module(0x1000, 0x2000, "a"));
  set.add(module(0x4800, 0x4800, "empty"));  // holds no address: overlaps nothing
  set.add(module(0x2000, 0x3000, "b"));
  check_all(set);
  const ehbt::Module* a = set.find(0x1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(set.find(0x1800, a), a);
  EXPECT_EQ(set.find(0x2800, a)->path, "b");
  // The other set's module covers 0x1800 too, but the answer is this set's.
  EXPECT_EQ(set.find(0x1800, &other.modules()[0]), a);

  // A module added later around the others: the innermost one still answers.
  set.add(module(0x10000, 0x90000, "big"));
  set.add(module(0x20000, 0x21000, "inside_big"));
  check_all(set);
  // Given the outer module as the hint, a pc in the inner one still finds the inner one.
  auto expect_inner = [](const ehbt::ModuleSet& s, uint64_t outer_at, uint64_t pc,
                         const char* inner) {
    const ehbt::Module* outer = s.find(outer_at);
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(s.find(pc, outer)->path, inner);
  };
  expect_inner(set, 0x10000, 0x20010, "inside_big");

  // An overlap that starts before an existing module (inserted in front of it).
  ehbt::ModuleSet front;
  front.add(module(0x2000, 0x3000, "inner"));
  front.add(module(0x1000, 0x8000, "outer"));
  check_all(front);
  expect_inner(front, 0x1000, 0x2800, "inner");
}

// A hand-made 32-bit image without section headers, in either byte order:
//   0x00 ELF header, 0x34 three program headers, 0xa0 build-id note, 0xc0 .eh_frame_hdr
//   (pcrel|sdata4 -> 0x100), 0x100 .eh_frame (0x20 bytes to the end of the file part).
// Linked at 0x10000; PT_LOAD has filesz 0x120, memsz 0x200.
std::vector<std::byte> tiny_elf32(bool be, uint16_t machine) {
  std::vector<std::byte> f(0x120);
  auto put = [&](std::size_t off, uint64_t v, unsigned size) {
    for (unsigned i = 0; i < size; ++i) {
      unsigned shift = be ? 8 * (size - 1 - i) : 8 * i;
      f[off + i] = static_cast<std::byte>((v >> shift) & 0xff);
    }
  };
  const char ident[] = {0x7f, 'E', 'L', 'F', ELFCLASS32, 0, EV_CURRENT};
  for (std::size_t i = 0; i < sizeof ident; ++i) f[i] = static_cast<std::byte>(ident[i]);
  f[EI_DATA] = static_cast<std::byte>(be ? ELFDATA2MSB : ELFDATA2LSB);
  put(16, ET_DYN, 2);
  put(18, machine, 2);
  put(20, EV_CURRENT, 4);
  put(24, 0x10100, 4);  // e_entry
  put(28, 0x34, 4);     // e_phoff
  put(40, 52, 2);       // e_ehsize
  put(42, 32, 2);       // e_phentsize
  put(44, 3, 2);        // e_phnum
  auto phdr = [&](unsigned i, uint32_t type, uint32_t off, uint32_t filesz, uint32_t memsz,
                  uint32_t flags, uint32_t align) {
    std::size_t at = 0x34 + 32 * i;
    put(at + 0, type, 4);
    put(at + 4, off, 4);
    put(at + 8, 0x10000 + off, 4);
    put(at + 12, 0x10000 + off, 4);
    put(at + 16, filesz, 4);
    put(at + 20, memsz, 4);
    put(at + 24, flags, 4);
    put(at + 28, align, 4);
  };
  phdr(0, PT_LOAD, 0, 0x120, 0x200, PF_R | PF_X, 0x1000);
  phdr(1, PT_GNU_EH_FRAME, 0xc0, 12, 12, PF_R, 4);
  phdr(2, PT_NOTE, 0xa0, 20, 20, PF_R, 4);
  put(0xa0, 4, 4);  // namesz
  put(0xa4, 4, 4);  // descsz
  put(0xa8, NT_GNU_BUILD_ID, 4);
  f[0xac] = std::byte{'G'}, f[0xad] = std::byte{'N'}, f[0xae] = std::byte{'U'};
  put(0xb0, 0x01020304, 4);  // descriptor bytes in file order
  f[0xc0] = std::byte{1};
  f[0xc1] = std::byte{0x1b};
  f[0xc2] = std::byte{0x03};
  f[0xc3] = std::byte{0x3b};
  put(0xc4, 0x100 - 0xc4, 4);  // eh_frame_ptr relative to its own address
  for (std::size_t i = 0; i < 0x1c; ++i) f[0x100 + i] = static_cast<std::byte>(0x40 + i);
  return f;
}

TEST(ElfParts, HandMadeElf32BothByteOrders) {
  for (bool be : {false, true}) {
    const uint16_t machine = be ? EM_S390 : EM_X86_64;
    auto bytes = tiny_elf32(be, machine);
    auto img = ehbt::Image::from_bytes(bytes, "tiny32");
    ASSERT_TRUE(img) << img.error();
    const ehbt::Image& i = **img;
    EXPECT_EQ(i.address_size(), 4);
    EXPECT_EQ(i.big_endian(), be);
    EXPECT_EQ(i.arch(), be ? ehbt::Arch::S390x : ehbt::Arch::X86_64);
    EXPECT_EQ(i.entry(), 0x10100u);
    EXPECT_EQ(i.min_vaddr(), 0x10000u);
    EXPECT_EQ(i.build_id(), be ? "01020304" : "04030201");
    EXPECT_EQ(i.eh_frame_hdr().addr, 0x100c0u);
    EXPECT_EQ(i.eh_frame_hdr().bytes.size(), 12u);
    EXPECT_EQ(i.eh_frame().addr, 0x10100u);
    EXPECT_EQ(i.eh_frame().bytes.size(), 0x20u);
    EXPECT_EQ(std::to_integer<int>(i.eh_frame().bytes[0]), 0x40);
    ASSERT_EQ(i.segments().size(), 1u);
    EXPECT_TRUE(i.is_executable(0x101ff));
    EXPECT_FALSE(i.is_executable(0x10200));
    // bss reads as zeros; the read is short where the segment ends.
    std::vector<std::byte> buf(0x10, std::byte{0xff});
    EXPECT_EQ(i.read(0x10118, buf), 0x10u);
    EXPECT_EQ(std::to_integer<int>(buf[0]), 0x58);
    EXPECT_EQ(std::to_integer<int>(buf[8]), 0);
    EXPECT_EQ(i.read(0x101f8, buf), 8u);
    EXPECT_FALSE(i.symbolize(0x10100).has_value());

    // The same image mapped in a target at 0x7000000 (bias 0x6ff0000).
    ehbt::BufferMemory mem;
    std::vector<std::byte> mapped(0x200);
    std::copy(bytes.begin(), bytes.end(), mapped.begin());
    mem.add(0x7000000, mapped);
    auto m = ehbt::Image::from_memory(mem, 0x7000000, "tiny32");
    ASSERT_TRUE(m) << m.error();
    EXPECT_EQ((*m)->build_id(), i.build_id());
    EXPECT_EQ((*m)->eh_frame_hdr().addr, 0x100c0u);
    EXPECT_EQ((*m)->eh_frame().addr, 0x10100u);
    EXPECT_EQ((*m)->eh_frame().bytes.size(), 0x100u);  // to the end of the mapped segment
    EXPECT_EQ((*m)->address_size(), 4);
  }
}

// i386 is supported now; 32-bit Arm (EM_ARM = 40 in elf.h) is not.
TEST(ElfParts, UnsupportedMachineInMemory) {
  auto bytes = tiny_elf32(false, EM_ARM);
  auto img = ehbt::Image::from_bytes(bytes, "arm");
  ASSERT_FALSE(img);
  EXPECT_EQ(img.error(), "unsupported machine 40");
  ehbt::BufferMemory mem;
  mem.add(0x1000, bytes);
  auto m = ehbt::Image::from_memory(mem, 0x1000, "arm");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error(), "unsupported machine 40");
}

}  // namespace
