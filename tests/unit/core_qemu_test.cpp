// SPDX-License-Identifier: Apache-2.0
// Cores of other architectures, written by qemu-user: aarch64 (little-endian) and s390x
// (big-endian), static and dynamic. qemu writes no NT_FILE, so modules come from the
// executable's program headers and the dynamic linker's link_map list; and it dumps no
// file-backed text, so text reads must fall back to the files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/elf_core_file.hpp"
#include "core/mapped_file.hpp"
#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using namespace core_test;

struct GuestArch {
  std::string name;  // test label
  ehbt::Arch arch;
  std::string triple;   // aarch64-linux-gnu
  std::string qemu;     // qemu-aarch64
  std::string ld_name;  // the dynamic linker's file name
  uint16_t ra_reg;      // DWARF number of the register holding the return address in a leaf
};

// gtest prints parameters in test names and failures: by name, not as raw bytes.
void PrintTo(const GuestArch& g, std::ostream* os) {
  *os << g.name;
}

const GuestArch kAArch64{"aarch64",      ehbt::Arch::AArch64,     "aarch64-linux-gnu",
                         "qemu-aarch64", "ld-linux-aarch64.so.1", 30};
const GuestArch kS390x{"s390x",      ehbt::Arch::S390x, "s390x-linux-gnu",
                       "qemu-s390x", "ld64.so.1",       14};

// A hand-written ELF64 reader for the test's own expectations (independent of the engine):
// entry point and the file offset of a link-time address.
struct ElfFacts {
  bool ok = false;
  bool big_endian = false;
  uint64_t entry = 0;
  std::vector<std::array<uint64_t, 4>> loads;  // vaddr, offset, filesz, memsz
  std::string bytes;

  uint64_t get(uint64_t off, int n) const {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      auto b = static_cast<unsigned char>(bytes.at(off + (big_endian ? i : n - 1 - i)));
      v = (v << 8) | b;
    }
    return v;
  }
  static ElfFacts read(const std::string& path) {
    ElfFacts f;
    f.bytes = read_file(path);
    if (f.bytes.size() < 64 || f.bytes.compare(0, 4,
                                               "\x7f"
                                               "ELF") != 0)
      return f;
    f.big_endian = f.bytes[5] == 2;
    f.entry = f.get(24, 8);
    uint64_t phoff = f.get(32, 8), phentsize = f.get(54, 2), phnum = f.get(56, 2);
    for (uint64_t i = 0; i < phnum; ++i) {
      uint64_t p = phoff + i * phentsize;
      if (f.get(p, 4) == 1) {
        f.loads.push_back({f.get(p + 16, 8), f.get(p + 8, 8), f.get(p + 32, 8), f.get(p + 40, 8)});
      }
    }
    f.ok = true;
    return f;
  }
  std::optional<std::string> file_bytes(uint64_t vaddr, std::size_t n) const {
    for (const auto& l : loads) {
      if (vaddr >= l[0] && vaddr + n <= l[0] + l[2]) return bytes.substr(vaddr - l[0] + l[1], n);
    }
    return std::nullopt;
  }
};

class QemuCoreTest : public ::testing::TestWithParam<std::tuple<GuestArch, bool>> {
 protected:
  void SetUp() override {
    const GuestArch& g = std::get<0>(GetParam());
    dynamic_ = std::get<1>(GetParam());
    sysroot_ = "/usr/" + g.triple;
    for (const std::string& tool : {g.triple + "-gcc", g.qemu, g.triple + "-nm"}) {
      ASSERT_TRUE(have_program(tool)) << tool << " missing: run scripts/install-deps.sh";
    }
    std::string name = g.name + (dynamic_ ? "_dyn" : "_static");
    // One core per guest for the whole run (each takes a compile and a qemu run).
    static std::map<std::string, std::pair<std::shared_ptr<TempDir>, QemuCore>> cache;
    auto it = cache.find(name);
    if (it == cache.end()) {
      auto dir = std::make_shared<TempDir>();
      // Static: non-PIE at a fixed address. Dynamic: PIE, loaded by the sysroot's ld.so.
      QemuCore qc = make_qemu_core(*dir, g.triple + "-gcc", dynamic_ ? "" : "-static", g.qemu,
                                   dynamic_ ? "-L " + sysroot_ : "", name);
      it = cache.emplace(name, std::make_pair(dir, qc)).first;
    }
    qc_ = it->second.second;
    ASSERT_TRUE(qc_.error.empty()) << qc_.error;
    syms_ = nm_symbols(g.triple + "-nm", qc_.exe);
    ASSERT_TRUE(syms_.count("guest_crash_here"));
    ASSERT_TRUE(syms_.count("guest_caller"));
    facts_ = ElfFacts::read(qc_.exe);
    ASSERT_TRUE(facts_.ok);
  }

  std::unique_ptr<ehbt::Target> open(bool with_sysroot) {
    ehbt::TargetOptions o;
    if (with_sysroot) o.sysroots = {sysroot_};
    auto t = ehbt::open_core(qc_.core, o);
    EXPECT_TRUE(t.has_value()) << (t ? "" : t.error());
    return t ? std::move(t.value()) : nullptr;
  }

  bool in_symbol(const std::string& sym, uint64_t link_addr) {
    auto [start, size] = syms_.at(sym);
    return link_addr >= start && link_addr < start + size;
  }

  QemuCore qc_;
  bool dynamic_ = false;
  std::string sysroot_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> syms_;
  ElfFacts facts_;
};

TEST_P(QemuCoreTest, ThreadSignalAndRegisters) {
  const GuestArch& g = std::get<0>(GetParam());
  auto t = open(true);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->arch(), g.arch);
  ASSERT_EQ(t->threads().size(), 1u);
  EXPECT_EQ(t->crashing_thread(), 0u);
  EXPECT_EQ(t->threads()[0].signal, SIGSEGV);
  ASSERT_TRUE(t->signal());
  EXPECT_EQ(t->signal()->number, SIGSEGV);
  EXPECT_EQ(std::filesystem::path(t->executable()), std::filesystem::path(qc_.exe));

  // The executable's bias, independently: AT_ENTRY minus the file's e_entry.
  uint64_t at_entry = 0;
  for (auto [tag, val] : t->auxv()) {
    if (tag == 9) at_entry = val;
  }
  ASSERT_NE(at_entry, 0u);
  uint64_t bias = at_entry - facts_.entry;
  if (!dynamic_) {
    EXPECT_EQ(bias, 0u);  // static non-PIE: linked where it runs
  }

  // pc in the function that stored to the bad address, the return address in its caller:
  // both decode right only with the core's byte order and register layout.
  const ehbt::RegisterSet& regs = t->threads()[0].regs;
  EXPECT_TRUE(in_symbol("guest_crash_here", regs.pc() - bias)) << std::hex << regs.pc();
  ASSERT_TRUE(regs.has(g.ra_reg));
  EXPECT_TRUE(in_symbol("guest_caller", regs.raw(g.ra_reg) - bias))
      << std::hex << regs.raw(g.ra_reg);
  // The stack pointer points into dumped, readable memory.
  uint64_t word = 0;
  EXPECT_TRUE(t->memory().read_uint(regs.sp(), 8, facts_.big_endian, word));

  const ehbt::Module* exe = t->modules().find(regs.pc());
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->bias, bias);
  EXPECT_EQ(exe->file, qc_.exe);
  EXPECT_NE(exe->image, nullptr);
}

TEST_P(QemuCoreTest, ModulesFromTheLinkMap) {
  const GuestArch& g = std::get<0>(GetParam());
  auto mapped = ehbt::core::MappedFile::open(qc_.core);
  ASSERT_TRUE(mapped);
  auto parsed = ehbt::core::parse_core(mapped->bytes(), {});
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->notes.has_file_note);  // the premise: qemu writes no NT_FILE

  auto t = open(true);
  ASSERT_TRUE(t);
  std::vector<const ehbt::Module*> files;
  for (const auto& m : t->modules().modules()) {
    if (m.path != "[vdso]") files.push_back(&m);
  }
  if (!dynamic_) {
    // A static executable has no DT_DEBUG: it is the only module.
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0]->path, qc_.exe);
    return;
  }
  // Dynamic: the executable, ld.so and libc, found under the sysroot by their guest paths.
  bool ld = false, libc = false;
  for (const ehbt::Module* m : files) {
    std::string base = std::filesystem::path(m->path).filename();
    if (base != g.ld_name && base != "libc.so.6") continue;
    (base == "libc.so.6" ? libc : ld) = true;
    EXPECT_EQ(m->path.rfind("/lib", 0), 0u) << m->path;  // the guest's name, not the host's
    EXPECT_EQ(m->file, sysroot_ + m->path) << m->path;
    // qemu dumps no read-only file pages, so the core may hold no build-id to compare: then
    // the match is unknown, never claimed.
    EXPECT_EQ(m->build_id_match, m->build_id.empty() ? std::nullopt : std::optional<bool>(true));
    EXPECT_NE(m->image, nullptr);
    ASSERT_TRUE(m->image);
    if (!m->build_id.empty()) {
      EXPECT_EQ(m->build_id, m->image->build_id());
    }
    EXPECT_EQ(m->image->arch(), g.arch);
    EXPECT_LT(m->start, m->end);
  }
  EXPECT_TRUE(ld);
  EXPECT_TRUE(libc);

  // Without the sysroot the guest libraries are not on this machine: no file is used.
  auto bare = open(false);
  ASSERT_TRUE(bare);
  for (const auto& m : bare->modules().modules()) {
    EXPECT_EQ(m.file.find(sysroot_), std::string::npos) << m.path;
  }
}

TEST_P(QemuCoreTest, TextReadsFallBackToTheExecutable) {
  auto t = open(true);
  ASSERT_TRUE(t);
  uint64_t at_entry = 0;
  for (auto [tag, val] : t->auxv()) {
    if (tag == 9) at_entry = val;
  }
  uint64_t bias = at_entry - facts_.entry;
  uint64_t fn = syms_.at("guest_crash_here").first;
  auto want = facts_.file_bytes(fn, 8);
  ASSERT_TRUE(want);
  // qemu skipped this text when dumping ...
  auto mapped = ehbt::core::MappedFile::open(qc_.core);
  ASSERT_TRUE(mapped);
  auto parsed = ehbt::core::parse_core(mapped->bytes(), {});
  ASSERT_TRUE(parsed);
  for (const auto& s : parsed->segments) {
    EXPECT_FALSE(fn + bias >= s.vaddr && fn + bias - s.vaddr < s.dumped.size());
  }
  // ... and the memory serves it from the executable.
  std::vector<std::byte> got(8);
  ASSERT_EQ(t->memory().read(fn + bias, got), 8u);
  EXPECT_EQ(std::memcmp(got.data(), want->data(), 8), 0);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<GuestArch, bool>>& info) {
  return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_dynamic" : "_static");
}

INSTANTIATE_TEST_SUITE_P(Guests, QemuCoreTest,
                         ::testing::Combine(::testing::Values(kAArch64, kS390x), ::testing::Bool()),
                         param_name);

}  // namespace
