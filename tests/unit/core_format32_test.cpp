// SPDX-License-Identifier: Apache-2.0
// ELFCLASS32 cores byte by byte: hand-built i386 cores whose every field the test chose,
// decoded by open_core. The layouts are those of the i686 C library's headers
// (/usr/i686-linux-gnu/include/sys/procfs.h, sys/user.h, bits/types/siginfo_t.h, as written
// by the kernel's compat/i386 code): elf_prstatus is 144 bytes with pr_pid at 24 and pr_reg
// at 72; elf_prpsinfo 124 bytes with pr_fname at 28 and pr_psargs at 44; siginfo's si_addr
// is 4 bytes at 12; NT_FILE and NT_AUXV words are 4 bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using core_test::TempDir;

constexpr uint16_t kEm386 = 3;
constexpr uint16_t kEmS390 = 22;

// user_regs_struct (i386) field order, u32 each.
enum UserReg : unsigned {
  kUEbx,
  kUEcx,
  kUEdx,
  kUEsi,
  kUEdi,
  kUEbp,
  kUEax,
  kUDs,
  kUEs,
  kUFs,
  kUGs,
  kUOrigEax,
  kUEip,
  kUCs,
  kUEflags,
  kUEsp,
  kUSs,
  kUserRegs
};

// Serializes an ELF32 ET_CORE: header (52 bytes), program headers (32 bytes each), one
// PT_NOTE, then PT_LOAD data.
class Core32Builder {
 public:
  explicit Core32Builder(uint16_t machine, bool big_endian = false)
      : machine_(machine), be_(big_endian) {}

  void put(std::vector<uint8_t>& out, uint64_t v, int n) const {
    for (int i = 0; i < n; ++i) {
      int shift = be_ ? 8 * (n - 1 - i) : 8 * i;
      out.push_back(static_cast<uint8_t>(v >> shift));
    }
  }
  std::vector<uint8_t> words(std::initializer_list<uint64_t> ws) const {
    std::vector<uint8_t> out;
    for (uint64_t w : ws) put(out, w, 4);
    return out;
  }
  void note(const std::string& name, uint32_t type, const std::vector<uint8_t>& desc) {
    put(notes_, name.size() + 1, 4);
    put(notes_, desc.size(), 4);
    put(notes_, type, 4);
    for (char c : name) notes_.push_back(static_cast<uint8_t>(c));
    notes_.push_back(0);
    while (notes_.size() % 4) notes_.push_back(0);
    notes_.insert(notes_.end(), desc.begin(), desc.end());
    while (notes_.size() % 4) notes_.push_back(0);
  }
  void load(uint64_t vaddr, std::vector<uint8_t> bytes, uint64_t memsz) {
    loads_.push_back({vaddr, memsz, std::move(bytes)});
  }

  // struct elf_prstatus (i386): pr_info {signo, code, errno} 0, pr_cursig 12, pr_pid 24,
  // pr_reg 72 (17 u32), pr_fpvalid 140; 144 bytes.
  std::vector<uint8_t> prstatus(int cursig, int pid, const std::array<uint32_t, kUserRegs>& r,
                                std::size_t size = 144) const {
    std::vector<uint8_t> d;
    put(d, cursig, 4);
    put(d, 0, 4);
    put(d, 0, 4);
    put(d, cursig, 2);
    d.resize(24, 0);
    put(d, pid, 4);
    d.resize(72, 0);
    for (uint32_t v : r) put(d, v, 4);
    put(d, 0, 4);
    d.resize(size, 0);
    return d;
  }

  std::string write(const TempDir& dir, const std::string& name) const {
    std::vector<uint8_t> out;
    const uint64_t phnum = 1 + loads_.size();
    const uint64_t data = 52 + 32 * phnum;
    const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', 1, static_cast<uint8_t>(be_ ? 2 : 1), 1};
    out.insert(out.end(), ident, ident + 16);
    put(out, 4, 2);  // ET_CORE
    put(out, machine_, 2);
    put(out, 1, 4);   // e_version
    put(out, 0, 4);   // e_entry
    put(out, 52, 4);  // e_phoff
    put(out, 0, 4);   // e_shoff
    put(out, 0, 4);   // e_flags
    put(out, 52, 2);  // e_ehsize
    put(out, 32, 2);  // e_phentsize
    put(out, phnum, 2);
    put(out, 40, 2);  // e_shentsize
    put(out, 0, 2);
    put(out, 0, 2);
    // Elf32_Phdr: type, offset, vaddr, paddr, filesz, memsz, flags, align.
    auto phdr = [&](uint32_t type, uint64_t off, uint64_t vaddr, uint64_t filesz, uint64_t memsz) {
      put(out, type, 4);
      put(out, off, 4);
      put(out, vaddr, 4);
      put(out, 0, 4);
      put(out, filesz, 4);
      put(out, memsz, 4);
      put(out, 6, 4);
      put(out, 1, 4);
    };
    phdr(4, data, 0, notes_.size(), 0);
    uint64_t off = data + notes_.size();
    for (const auto& l : loads_) {
      phdr(1, off, l.vaddr, l.bytes.size(), l.memsz);
      off += l.bytes.size();
    }
    out.insert(out.end(), notes_.begin(), notes_.end());
    for (const auto& l : loads_) out.insert(out.end(), l.bytes.begin(), l.bytes.end());
    std::string path = dir.file(name);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return path;
  }

 private:
  struct Load {
    uint64_t vaddr, memsz;
    std::vector<uint8_t> bytes;
  };
  uint16_t machine_;
  bool be_;
  std::vector<uint8_t> notes_;
  std::vector<Load> loads_;
};

std::array<uint32_t, kUserRegs> distinct_regs() {
  std::array<uint32_t, kUserRegs> r{};
  for (unsigned i = 0; i < kUserRegs; ++i) r[i] = 0x11110000u + i;
  r[kUEip] = 0x08049123;
  r[kUEsp] = 0xffffd0c0;
  r[kUEbp] = 0xffffd0e8;
  return r;
}

TEST(CoreFormat32, I386RegistersNotesAndMemory) {
  Core32Builder b(kEm386);
  b.note("CORE", 1, b.prstatus(11, 4321, distinct_regs()));
  // elf_prpsinfo (i386): pr_fname[16] at 28, pr_psargs[80] at 44.
  std::vector<uint8_t> ps(124, 0);
  std::memcpy(ps.data() + 28, "prog", 4);
  std::memcpy(ps.data() + 44, "./prog chain", 12);
  b.note("CORE", 3, ps);
  // siginfo (i386): si_signo 0, si_errno 4, si_code 8, si_addr 12; 128 bytes.
  std::vector<uint8_t> si(128, 0);
  si[0] = 11;
  si[8] = 1;  // SEGV_MAPERR
  si[12] = 0x9c;
  si[13] = 0xff;
  si[14] = 0xff;
  si[15] = 0xff;
  b.note("CORE", 0x53494749, si);
  // auxv: {AT_PAGESZ 4096}, {AT_ENTRY 0x8049000}, {AT_NULL}; 4-byte words.
  b.note("CORE", 6, b.words({6, 4096, 9, 0x8049000, 0, 0}));
  // NT_FILE: count 2, page size 4096, {start, end, pgoff} x2, then names.
  std::vector<uint8_t> nt = b.words({2, 4096, 0x1000, 0x2000, 0, 0x5000, 0x6000, 3});
  for (const char* s : {"/nonexistent/a", "/nonexistent/b"})
    nt.insert(nt.end(), s, s + strlen(s) + 1);
  b.note("CORE", 0x46494c45, nt);
  b.load(0xffffd000, {0xef, 0xbe, 0xad, 0xde}, 0x1000);
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "i386.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  ehbt::Target& core = *t.value();
  EXPECT_EQ(core.arch(), ehbt::Arch::I386);
  ASSERT_EQ(core.threads().size(), 1u);
  EXPECT_EQ(core.threads()[0].tid, 4321);
  // DWARF numbering of the i386 psABI: eax ecx edx ebx esp ebp esi edi.
  const ehbt::RegisterSet& r = core.threads()[0].regs;
  const auto want = distinct_regs();
  EXPECT_EQ(r.pc(), 0x08049123u);
  EXPECT_EQ(r.get(0), want[kUEax]);
  EXPECT_EQ(r.get(1), want[kUEcx]);
  EXPECT_EQ(r.get(2), want[kUEdx]);
  EXPECT_EQ(r.get(3), want[kUEbx]);
  EXPECT_EQ(r.get(4), 0xffffd0c0u);
  EXPECT_EQ(r.get(5), 0xffffd0e8u);
  EXPECT_EQ(r.get(6), want[kUEsi]);
  EXPECT_EQ(r.get(7), want[kUEdi]);
  EXPECT_EQ(r.sp(), 0xffffd0c0u);
  ASSERT_TRUE(core.signal().has_value());
  EXPECT_EQ(core.signal()->number, 11);
  EXPECT_EQ(core.signal()->code, 1);
  ASSERT_TRUE(core.signal()->address.has_value());
  EXPECT_EQ(*core.signal()->address, 0xffffff9cu);
  ASSERT_EQ(core.auxv().size(), 2u);
  EXPECT_EQ(core.auxv()[1], std::make_pair(uint64_t{9}, uint64_t{0x8049000}));
  uint64_t v = 0;
  ASSERT_TRUE(core.memory().read_uint(0xffffd000, 4, false, v));
  EXPECT_EQ(v, 0xdeadbeefu);
}

TEST(CoreFormat32, MalformedNotesAndClass) {
  TempDir dir;
  // A prstatus cut before the end of pr_reg: no thread, so the core is refused (one line).
  Core32Builder cut(kEm386);
  cut.note("CORE", 1, cut.prstatus(11, 1, distinct_regs(), 100));
  auto r = ehbt::open_core(cut.write(dir, "cut.core"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("no threads"), std::string::npos) << r.error();

  // A siginfo too short to hold si_addr, an NT_FILE whose count cannot fit and an auxv
  // with half an entry: each is dropped, the thread stays.
  Core32Builder bad(kEm386);
  bad.note("CORE", 1, bad.prstatus(11, 7, distinct_regs()));
  bad.note("CORE", 0x53494749, std::vector<uint8_t>(14, 0));
  bad.note("CORE", 0x46494c45, bad.words({0x10000000, 4096, 0x1000}));
  bad.note("CORE", 6, bad.words({6}));
  auto t = ehbt::open_core(bad.write(dir, "bad.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t.value()->threads().size(), 1u);
  EXPECT_FALSE(t.value()->signal().has_value() && t.value()->signal()->address.has_value());
  EXPECT_TRUE(t.value()->auxv().empty());

  // ELFCLASS32 of a 64-bit machine (s390 31-bit) is not an s390x core.
  Core32Builder s390(kEmS390, true);
  s390.note("CORE", 1, s390.prstatus(11, 1, distinct_regs()));
  auto s = ehbt::open_core(s390.write(dir, "s390.core"));
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().find("32-bit"), std::string::npos) << s.error();
  EXPECT_EQ(s.error().find('\n'), std::string::npos);
}

}  // namespace
