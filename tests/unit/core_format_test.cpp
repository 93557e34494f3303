// SPDX-License-Identifier: Apache-2.0
// The core format byte by byte: hand-built cores (both byte orders) whose every field the
// test chose, decoded by open_core. Register layouts come from the kernel's structs
// (<sys/user.h> on this host) and the psABIs, not from the decoder.
#include <gtest/gtest.h>

#include <sys/user.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using core_test::TempDir;

constexpr uint16_t kEmX86_64 = 62;
constexpr uint16_t kEmAArch64 = 183;
constexpr uint16_t kEmS390 = 22;

// Serializes an ELF64 ET_CORE: header, program headers, one PT_NOTE, then PT_LOAD data.
class CoreBuilder {
 public:
  CoreBuilder(uint16_t machine, bool big_endian) : machine_(machine), be_(big_endian) {}

  void put(std::vector<uint8_t>& out, uint64_t v, int n) const {
    for (int i = 0; i < n; ++i) {
      int shift = be_ ? 8 * (n - 1 - i) : 8 * i;
      out.push_back(static_cast<uint8_t>(v >> shift));
    }
  }
  std::vector<uint8_t> words(std::initializer_list<uint64_t> ws) const {
    std::vector<uint8_t> out;
    for (uint64_t w : ws) put(out, w, 8);
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
  // A mapping of memsz bytes at vaddr whose first `bytes.size()` bytes were dumped; `flags`
  // are its p_flags (PF_R 4 | PF_W 2 | PF_X 1).
  void load(uint64_t vaddr, std::vector<uint8_t> bytes, uint64_t memsz, uint32_t flags = 6) {
    loads_.push_back({vaddr, memsz, std::move(bytes), flags});
  }

  // prstatus with the given signal, pid and raw pr_reg bytes (padded to the arch's size).
  std::vector<uint8_t> prstatus(int cursig, int pid, std::vector<uint8_t> regs,
                                std::size_t regs_size) const {
    std::vector<uint8_t> d;
    put(d, cursig, 4);  // pr_info.si_signo
    put(d, 0, 4);       // si_code
    put(d, 0, 4);       // si_errno
    put(d, cursig, 2);  // pr_cursig
    d.resize(32, 0);
    put(d, pid, 4);
    d.resize(112, 0);
    regs.resize(regs_size, 0);
    d.insert(d.end(), regs.begin(), regs.end());
    put(d, 0, 4);  // pr_fpvalid
    while (d.size() % 8) d.push_back(0);
    return d;
  }

  std::string write(const TempDir& dir, const std::string& name) const {
    std::vector<uint8_t> out;
    uint64_t phnum = 1 + loads_.size();
    uint64_t data = 64 + 56 * phnum;
    // ELF header
    const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', 2, static_cast<uint8_t>(be_ ? 2 : 1), 1};
    out.insert(out.end(), ident, ident + 16);
    put(out, 4, 2);  // ET_CORE
    put(out, machine_, 2);
    put(out, 1, 4);
    put(out, 0, 8);   // entry
    put(out, 64, 8);  // phoff
    put(out, 0, 8);   // shoff
    put(out, 0, 4);
    put(out, 64, 2);
    put(out, 56, 2);
    put(out, phnum, 2);
    put(out, 64, 2);
    put(out, 0, 2);
    put(out, 0, 2);
    // Program headers
    auto phdr = [&](uint32_t type, uint64_t off, uint64_t vaddr, uint64_t filesz, uint64_t memsz,
                    uint32_t flags = 6) {
      put(out, type, 4);
      put(out, flags, 4);
      put(out, off, 8);
      put(out, vaddr, 8);
      put(out, 0, 8);
      put(out, filesz, 8);
      put(out, memsz, 8);
      put(out, 1, 8);
    };
    phdr(4, data, 0, notes_.size(), 0);
    uint64_t off = data + notes_.size();
    for (const auto& l : loads_) {
      phdr(1, off, l.vaddr, l.bytes.size(), l.memsz, l.flags);
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
    uint32_t flags;
  };
  uint16_t machine_;
  bool be_;
  std::vector<uint8_t> notes_;
  std::vector<Load> loads_;
};

std::vector<uint8_t> psinfo(const std::string& fname, const std::string& args) {
  std::vector<uint8_t> d(136, 0);
  std::memcpy(d.data() + 40, fname.data(), std::min<std::size_t>(fname.size(), 16));
  std::memcpy(d.data() + 56, args.data(), std::min<std::size_t>(args.size(), 80));
  return d;
}

TEST(CoreFormat, SignalNames) {
  // Against glibc's own abbreviations for this host (x86-64 uses the generic numbering
  // that aarch64 and s390x share).
  for (int s = 1; s < 32; ++s) {
    const char* abbrev = sigabbrev_np(s);
    ASSERT_NE(abbrev, nullptr) << s;
    if (std::string(abbrev) == "IOT" || std::string(abbrev) == "POLL") continue;  // aliases
    EXPECT_EQ(ehbt::signal_name(s), "SIG" + std::string(abbrev)) << s;
  }
  EXPECT_EQ(ehbt::signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(ehbt::signal_name(SIGIO), "SIGIO");
  EXPECT_EQ(ehbt::signal_name(0), "SIG0");
  EXPECT_EQ(ehbt::signal_name(32), "SIG32");
  EXPECT_EQ(ehbt::signal_name(64), "SIG64");
  EXPECT_EQ(ehbt::signal_name(-3), "SIG-3");
}

TEST(CoreFormat, X86_64RegistersBySpecNames) {
  user_regs_struct u{};
  // Distinct values by name; DWARF numbering per the x86-64 psABI.
  u.rax = 0xa0;
  u.rdx = 0xa1;
  u.rcx = 0xa2;
  u.rbx = 0xa3;
  u.rsi = 0xa4;
  u.rdi = 0xa5;
  u.rbp = 0xa6;
  u.rsp = 0xa7;
  u.r8 = 0xa8;
  u.r9 = 0xa9;
  u.r10 = 0xaa;
  u.r11 = 0xab;
  u.r12 = 0xac;
  u.r13 = 0xad;
  u.r14 = 0xae;
  u.r15 = 0xaf;
  u.rip = 0x401234;
  u.orig_rax = 0xdead;
  std::vector<uint8_t> regs(sizeof u);
  std::memcpy(regs.data(), &u, sizeof u);
  CoreBuilder b(kEmX86_64, false);
  // The first note is too short to be a prstatus: skipped, not fatal.
  b.note("CORE", 1, std::vector<uint8_t>(40, 0));
  b.note("CORE", 1, b.prstatus(0, 100, regs, sizeof u));
  b.note("CORE", 1, b.prstatus(11, 101, regs, sizeof u));
  b.note("CORE", 3, psinfo("prog", "/opt/prog --flag"));
  std::vector<uint8_t> si(128, 0);
  si[0] = 11;     // si_signo
  si[8] = 2;      // si_code SEGV_ACCERR
  si[16] = 0x78;  // si_addr 0x5678
  si[17] = 0x56;
  b.note("CORE", 0x53494749, si);
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "x86.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t.value()->arch(), ehbt::Arch::X86_64);
  ASSERT_EQ(t.value()->threads().size(), 2u);
  EXPECT_EQ(t.value()->crashing_thread(), 1u);  // the first with a signal
  EXPECT_EQ(t.value()->threads()[1].tid, 101);
  EXPECT_EQ(t.value()->threads()[1].signal, 11);
  EXPECT_EQ(t.value()->threads()[0].signal, 0);
  const ehbt::RegisterSet& r = t.value()->threads()[0].regs;
  for (uint16_t d = 0; d < 16; ++d) {
    ASSERT_TRUE(r.has(d));
    EXPECT_EQ(r.raw(d), 0xa0u + d) << "DWARF register " << d;
  }
  EXPECT_EQ(r.pc(), 0x401234u);
  EXPECT_EQ(r.sp(), 0xa7u);
  ASSERT_TRUE(t.value()->signal());
  EXPECT_EQ(t.value()->signal()->number, 11);
  EXPECT_EQ(t.value()->signal()->code, 2);
  EXPECT_EQ(t.value()->signal()->address, 0x5678u);
  // No NT_FILE, no auxv: the executable's name comes from NT_PRPSINFO.
  EXPECT_EQ(t.value()->executable(), "/opt/prog");
}

TEST(CoreFormat, AArch64Registers) {
  CoreBuilder b(kEmAArch64, false);
  std::vector<uint64_t> w(34);
  for (int i = 0; i < 31; ++i) w[i] = 0x1000 + i;  // x0-x30
  w[31] = 0x7ffff000;                              // sp
  w[32] = 0x400800;                                // pc
  w[33] = 0x60000000;                              // pstate
  std::vector<uint8_t> regs;
  for (uint64_t v : w) b.put(regs, v, 8);
  b.note("CORE", 1, b.prstatus(6, 7, regs, 34 * 8));
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "a64.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t.value()->arch(), ehbt::Arch::AArch64);
  const ehbt::RegisterSet& r = t.value()->threads()[0].regs;
  for (uint16_t d = 0; d <= 30; ++d) EXPECT_EQ(r.raw(d), 0x1000u + d);
  EXPECT_EQ(r.raw(31), 0x7ffff000u);
  EXPECT_EQ(r.sp(), 0x7ffff000u);
  EXPECT_EQ(r.pc(), 0x400800u);
  ASSERT_TRUE(t.value()->signal());
  EXPECT_EQ(t.value()->signal()->number, 6);
  EXPECT_FALSE(t.value()->signal()->address.has_value());  // SIGABRT has none
}

TEST(CoreFormat, S390xBigEndian) {
  CoreBuilder b(kEmS390, true);
  // s390_regs: psw.mask, psw.addr, gprs[16], acrs[16] (32-bit), orig_gpr2.
  std::vector<uint8_t> regs;
  b.put(regs, 0x0705200180000000ull, 8);
  b.put(regs, 0x10006a4, 8);
  for (int i = 0; i < 16; ++i) b.put(regs, 0x0102030405060700ull + i, 8);
  for (int i = 0; i < 16; ++i) b.put(regs, 0xa0 + i, 4);
  b.put(regs, 0xfeed, 8);
  b.note("CORE", 1, b.prstatus(11, 4242, regs, regs.size()));
  b.note("CORE", 6, b.words({6, 4096, 9, 0x1000400, 0, 0}));  // AT_PAGESZ, AT_ENTRY, AT_NULL
  // Dumped bytes of a big-endian word, then an undumped tail (filesz < memsz).
  std::vector<uint8_t> mem = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  b.load(0x3ff0000, mem, 0x1000);
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "s390.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t.value()->arch(), ehbt::Arch::S390x);
  EXPECT_EQ(t.value()->threads()[0].tid, 4242);
  const ehbt::RegisterSet& r = t.value()->threads()[0].regs;
  EXPECT_EQ(r.pc(), 0x10006a4u);
  for (uint16_t d = 0; d < 16; ++d) EXPECT_EQ(r.raw(d), 0x0102030405060700ull + d);
  EXPECT_EQ(r.sp(), 0x010203040506070full);  // r15
  ASSERT_EQ(t.value()->auxv().size(), 2u);
  EXPECT_EQ(t.value()->auxv()[1], std::make_pair(uint64_t{9}, uint64_t{0x1000400}));
  uint64_t v = 0;
  ASSERT_TRUE(t.value()->memory().read_uint(0x3ff0000, 8, true, v));
  EXPECT_EQ(v, 0x1122334455667788u);
  // A read running into the undumped tail stops where the dumped bytes end.
  std::vector<std::byte> buf(16);
  EXPECT_EQ(t.value()->memory().read(0x3ff0004, buf), 4u);
  EXPECT_EQ(t.value()->memory().read(0x3ff0010, buf), 0u);
}

TEST(CoreFormat, NtFileAndUnusableInput) {
  CoreBuilder b(kEmX86_64, false);
  b.note("CORE", 1, b.prstatus(0, 1, {}, 27 * 8));
  // NT_FILE: 2 entries, page size 4096, then names. No ELF is mapped, so no module results,
  // but nothing breaks either.
  std::vector<uint8_t> nt = b.words({2, 4096, 0x1000, 0x2000, 0, 0x5000, 0x6000, 3});
  for (const char* s : {"/nonexistent/a", "/nonexistent/b"}) {
    nt.insert(nt.end(), s, s + std::strlen(s) + 1);
  }
  b.note("CORE", 0x46494c45, nt);
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "file.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_TRUE(t.value()->modules().modules().empty());
  EXPECT_FALSE(t.value()->signal().has_value());

  // Unusable inputs: one line each.
  auto expect_error = [&](const std::string& path, const std::string& words) {
    auto r = ehbt::open_core(path);
    ASSERT_FALSE(r.has_value()) << path;
    EXPECT_NE(r.error().find(words), std::string::npos) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos);
  };
  expect_error(dir.file("missing"), "No such file");
  { std::ofstream(dir.file("text")) << "hello, this is not an ELF file at all"; }
  expect_error(dir.file("text"), "not an ELF file");
  expect_error("/bin/true", "not a core file");
  CoreBuilder no_threads(kEmX86_64, false);
  no_threads.note("CORE", 3, psinfo("x", "x"));
  expect_error(no_threads.write(dir, "nothreads.core"), "no threads");
  CoreBuilder other_machine(40 /* EM_ARM */, false);
  other_machine.note("CORE", 1, other_machine.prstatus(0, 1, {}, 27 * 8));
  expect_error(other_machine.write(dir, "arm.core"), "unsupported core machine");
}

TEST(CoreFormat, OnlyElfMappingsAreModules) {
  // Issue 32 item 7: a file mapping is a module only if it holds an ELF object. The core's
  // first page decides when it was dumped, else the file when it is a regular one, a device
  // never is one, and with nothing to look at only an executable mapping is taken for code.
  TempDir dir;
  const std::string data_file = dir.file("shm-like-data");
  { std::ofstream(data_file) << std::string(8192, 'd'); }  // exists, regular, not ELF
  CoreBuilder b(kEmX86_64, false);
  b.note("CORE", 1, b.prstatus(0, 9, {}, 27 * 8));
  b.note("CORE", 6, b.words({3, 0x400000 + 64, 5, 1, 6, 4096, 0, 0}));  // AT_PHDR/PHNUM/PAGESZ
  // A page holding an ELF64 header and one PT_LOAD of file page 0 at vaddr 0.
  auto elf_page = [&] {
    std::vector<uint8_t> p = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    p.resize(16, 0);
    b.put(p, 3, 2);   // ET_DYN
    b.put(p, 62, 2);  // EM_X86_64
    b.put(p, 1, 4);   // version
    b.put(p, 0, 8);   // entry
    b.put(p, 64, 8);  // phoff
    b.put(p, 0, 8);   // shoff
    b.put(p, 0, 4);   // flags
    b.put(p, 64, 2);  // ehsize
    b.put(p, 56, 2);  // phentsize
    b.put(p, 1, 2);   // phnum
    b.put(p, 64, 2);  // shentsize
    b.put(p, 0, 2);   // shnum
    b.put(p, 0, 2);   // shstrndx
    b.put(p, 1, 4);   // PT_LOAD
    b.put(p, 5, 4);   // R+X
    b.put(p, 0, 8);   // offset
    b.put(p, 0, 8);   // vaddr
    b.put(p, 0, 8);   // paddr
    b.put(p, 0x1000, 8);
    b.put(p, 0x1000, 8);
    b.put(p, 0x1000, 8);
    p.resize(0x1000, 0);
    return p;
  };
  struct Map {
    uint64_t start, end;
    std::string path;
  };
  const std::vector<Map> maps = {
      {0x10000, 0x12000, "/nonexistent/deleted-lib.so (deleted)"},  // R+X, not dumped
      {0x20000, 0x21000, "/nonexistent/deleted-data (deleted)"},    // R, not dumped
      {0x30000, 0x31000, "/dev/zero (deleted)"},                    // RW, dumped zeros
      {0x40000, 0x41000, "/dev/null"},                              // R+X, not dumped
      {0x50000, 0x51000, "/nonexistent/memfd-elf (deleted)"},       // R, dumped ELF page
      {0x60000, 0x62000, data_file},                                // R+X, not dumped
      {0x400000, 0x401000, "/nonexistent/prog"},                    // the executable
  };
  std::vector<uint8_t> nt = b.words({maps.size(), 4096});
  for (const Map& m : maps) {
    std::vector<uint8_t> w = b.words({m.start, m.end, 0});
    nt.insert(nt.end(), w.begin(), w.end());
  }
  for (const Map& m : maps) nt.insert(nt.end(), m.path.c_str(), m.path.c_str() + m.path.size() + 1);
  b.note("CORE", 0x46494c45, nt);
  b.load(0x10000, {}, 0x2000, 5);
  b.load(0x20000, {}, 0x1000, 4);
  b.load(0x30000, std::vector<uint8_t>(0x1000, 0), 0x1000, 6);
  b.load(0x40000, {}, 0x1000, 5);
  b.load(0x50000, elf_page(), 0x1000, 4);
  b.load(0x60000, {}, 0x2000, 5);
  b.load(0x400000, elf_page(), 0x1000, 5);
  auto t = ehbt::open_core(b.write(dir, "datamaps.core"));
  ASSERT_TRUE(t.has_value()) << t.error();

  // Modules: the executable and the ELF whose file is gone, both placed by their headers.
  std::vector<std::string> modules;
  for (const ehbt::Module& m : t.value()->modules().modules()) modules.push_back(m.path);
  std::sort(modules.begin(), modules.end());
  EXPECT_EQ(modules, (std::vector<std::string>{"/nonexistent/memfd-elf", "/nonexistent/prog"}));
  const ehbt::Module* elf = t.value()->modules().find(0x50010);
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->bias, 0x50000u);
  EXPECT_EQ(elf->missing, "memfd-elf not found (named by the core)");
  // Missing files are said for the three modules only (the executable deleted library cannot
  // be placed without its headers or file, but it is still a missing module).
  std::vector<std::string> missing;
  for (const ehbt::Warning& w : t.value()->warnings()) {
    EXPECT_EQ(w.kind, ehbt::kWarningMissingFile) << w.line();
    missing.push_back(w.path);
  }
  std::sort(missing.begin(), missing.end());
  EXPECT_EQ(missing, (std::vector<std::string>{"/nonexistent/deleted-lib.so",
                                               "/nonexistent/memfd-elf", "/nonexistent/prog"}));
}

TEST(CoreFormat, TruncationIsSaidOrRefused) {
  // One thread (with NT_SIGINFO, so that is not what is warned about), then two dumped
  // segments of 0x100 bytes each. Cut inside the second segment: a target with a
  // truncated_core warning, whose reads stop where the file ends. Cut inside the notes:
  // nothing usable, one line.
  CoreBuilder b(kEmX86_64, false);
  b.note("CORE", 1, b.prstatus(11, 7, {}, 27 * 8));
  std::vector<uint8_t> si(128, 0);
  si[0] = 11;  // si_signo
  si[8] = 1;   // si_code: SEGV_MAPERR
  b.note("CORE", 0x53494749, si);
  b.load(0x10000, std::vector<uint8_t>(0x100, 0xaa), 0x100);
  b.load(0x20000, std::vector<uint8_t>(0x100, 0xbb), 0x100);
  TempDir dir;
  const std::string path = b.write(dir, "whole.core");
  const uint64_t size = std::filesystem::file_size(path);
  {
    auto t = ehbt::open_core(path);
    ASSERT_TRUE(t.has_value()) << t.error();
    EXPECT_TRUE(t.value()->warnings().empty());
    EXPECT_EQ(t.value()->signal()->code, 1);
  }
  std::filesystem::resize_file(path, size - 0x80);  // half of the last segment
  {
    auto t = ehbt::open_core(path);
    ASSERT_TRUE(t.has_value()) << t.error();
    const auto& ws = t.value()->warnings();
    ASSERT_EQ(ws.size(), 1u);
    EXPECT_EQ(ws[0].kind, ehbt::kWarningTruncatedCore);
    EXPECT_EQ(ws[0].path, path);
    EXPECT_EQ(ws[0].message, "the core is truncated: " + std::to_string(size - 0x80) + " of " +
                                 std::to_string(size) +
                                 " bytes, 1 memory segment(s) cut short (reads there fail)");
    std::vector<std::byte> buf(0x100);
    EXPECT_EQ(t.value()->memory().read(0x10000, buf), 0x100u);
    EXPECT_EQ(t.value()->memory().read(0x20000, buf), 0x80u);
  }
  // The notes start after the ELF header and three program headers; cut in the first note.
  std::filesystem::resize_file(path, 64 + 3 * 56 + 40);
  auto t = ehbt::open_core(path);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().find(path + ": truncated core: " + std::to_string(64 + 3 * 56 + 40) + " of "),
            0u)
      << t.error();
  EXPECT_EQ(t.error().find('\n'), std::string::npos);
}

TEST(CoreFormat, LinkMapWalkWithACycle) {
  // No NT_FILE: the executable is found from AT_PHDR (its PT_PHDR gives the bias), its
  // PT_DYNAMIC holds DT_DEBUG -> r_debug -> a link_map list that loops back on itself. The
  // second entry names this machine's libc at a made-up bias; the walk must end, and libc's
  // file must serve the bytes the core did not dump.
  std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  if (access(libc.c_str(), R_OK) != 0) GTEST_SKIP() << "needs " << libc;
  CoreBuilder b(kEmX86_64, false);
  b.note("CORE", 1, b.prstatus(11, 9, {}, 27 * 8));
  b.note("CORE", 3, psinfo("prog", "/nonexistent/prog"));
  b.note("CORE", 6, b.words({3, 0x400040, 5, 3, 6, 4096, 0, 0}));  // AT_PHDR, AT_PHNUM
  std::vector<uint8_t> exe(0x1000, 0);
  auto at = [&](std::vector<uint8_t>& v, uint64_t off, std::vector<uint8_t> bytes) {
    std::copy(bytes.begin(), bytes.end(), v.begin() + static_cast<long>(off));
  };
  auto phdr = [&](uint32_t type, uint64_t vaddr, uint64_t memsz) {
    std::vector<uint8_t> p;
    b.put(p, type, 4);
    b.put(p, 4, 4);
    b.put(p, vaddr, 8);  // offset = vaddr in this layout
    b.put(p, vaddr, 8);
    b.put(p, vaddr, 8);
    b.put(p, memsz, 8);
    b.put(p, memsz, 8);
    b.put(p, 8, 8);
    return p;
  };
  at(exe, 0x40, phdr(6, 0x40, 3 * 56));           // PT_PHDR
  at(exe, 0x40 + 56, phdr(1, 0, 0x2000));         // PT_LOAD
  at(exe, 0x40 + 112, phdr(2, 0x800, 0x20));      // PT_DYNAMIC
  at(exe, 0x800, b.words({21, 0x401000, 0, 0}));  // DT_DEBUG, DT_NULL
  b.load(0x400000, exe, 0x1000);
  std::vector<uint8_t> data(0x1000, 0);
  at(data, 0x000, b.words({1, 0x401100}));                                         // r_debug
  at(data, 0x100, b.words({0, 0x401200, 0x400800, 0x401140}));                     // the executable
  at(data, 0x140, b.words({0x7f0000000000, 0x401210, 0x7f0000300000, 0x401100}));  // loops
  at(data, 0x210, std::vector<uint8_t>(libc.begin(), libc.end()));
  b.load(0x401000, data, 0x1000);
  TempDir dir;
  auto t = ehbt::open_core(b.write(dir, "linkmap.core"));
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t.value()->executable(), "/nonexistent/prog");
  const ehbt::Module* exe_mod = t.value()->modules().find(0x400800);
  ASSERT_NE(exe_mod, nullptr);
  EXPECT_EQ(exe_mod->bias, 0x400000u);
  EXPECT_EQ(exe_mod->path, "/nonexistent/prog");
  EXPECT_TRUE(exe_mod->file.empty());
  const ehbt::Module* libc_mod = t.value()->modules().find(0x7f0000000010);
  ASSERT_NE(libc_mod, nullptr);
  EXPECT_EQ(libc_mod->path, libc);
  EXPECT_EQ(libc_mod->file, libc);
  EXPECT_EQ(libc_mod->bias, 0x7f0000000000u);
  // Nothing recorded, so nothing to compare: unknown, not a match.
  EXPECT_EQ(libc_mod->build_id_match, std::nullopt);
  EXPECT_TRUE(libc_mod->missing.empty());
  // The executable's file is missing: said once, with the option that would help, and kept
  // as the reason a walk stopping in it will give.
  EXPECT_EQ(exe_mod->missing, "prog not found (named by the core)");
  // (And the signal came without NT_SIGINFO.)
  const auto& ws = t.value()->warnings();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].kind, ehbt::kWarningNoSignalInfo);
  EXPECT_FALSE(t.value()->signal()->code.has_value());
  EXPECT_EQ(ws[1].kind, ehbt::kWarningMissingFile);
  EXPECT_EQ(ws[1].path, "/nonexistent/prog");
  EXPECT_EQ(ws[1].option, "--exe");
  EXPECT_EQ(ws[1].line(),
            "the executable /nonexistent/prog, named by the core, was not found (use --exe "
            "PATH)");
  EXPECT_EQ(t.value()->modules().modules().size(), 2u);
  std::byte magic[4];
  ASSERT_EQ(t.value()->memory().read(0x7f0000000000, magic), 4u);
  EXPECT_EQ(std::memcmp(magic,
                        "\x7f"
                        "ELF",
                        4),
            0);
}

}  // namespace
