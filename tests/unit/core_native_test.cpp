// SPDX-License-Identifier: Apache-2.0
// A real core of this machine's architecture: a child (this binary, re-executed) starts three
// threads blocked in different system calls, reports what it knows about itself, and stores
// to a bad address. Every expectation comes from the child's own report, from nm, or from
// the kernel headers -- never from the code under test.
#include <gtest/gtest.h>
#include <sys/procfs.h>

#include <cstddef>
#include <filesystem>

#include "core/elf_core_file.hpp"
#include "core/mapped_file.hpp"
#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using namespace core_test;
using ReportT = ChildReport;

const bool g_child = (run_child_if_requested(), true);

class NativeCoreTest : public SharedNativeCoreTest<> {
 protected:
  std::unique_ptr<ehbt::Target> open(const ehbt::TargetOptions& opts = {}) {
    auto t = ehbt::open_core(core_->core, opts);
    EXPECT_TRUE(t.has_value()) << (t ? "" : t.error());
    return t ? std::move(t.value()) : nullptr;
  }
  // The kernel names mapped files by their resolved path (NT_FILE), the dynamic linker by
  // the path it opened: compare resolved paths.
  static std::string canonical(const std::string& path) {
    std::error_code ec;
    auto c = std::filesystem::canonical(path, ec);
    return ec ? path : c.string();
  }
  static std::string libc_path() {
    for (const auto& [bias, name] : core_->report.objects) {
      if (name.find("libc.so") != std::string::npos) return canonical(name);
    }
    return {};
  }
};

std::vector<std::byte> hex_bytes(const std::string& hex) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(CoreLayout, PrstatusOffsetsMatchKernelHeaders) {
  // The decoder's fixed offsets against this host's <sys/procfs.h>.
  EXPECT_EQ(offsetof(elf_prstatus, pr_cursig), 12u);
  EXPECT_EQ(offsetof(elf_prstatus, pr_pid), 32u);
  EXPECT_EQ(offsetof(elf_prstatus, pr_reg), 112u);
  EXPECT_EQ(offsetof(elf_prpsinfo, pr_pid), 24u);  // names /tmp/perf-PID.map in a sysroot
  EXPECT_EQ(offsetof(elf_prpsinfo, pr_fname), 40u);
  EXPECT_EQ(offsetof(elf_prpsinfo, pr_psargs), 56u);
#if defined(__x86_64__)
  EXPECT_EQ(sizeof(elf_gregset_t), 27 * 8u);
#endif
}

TEST_F(NativeCoreTest, ThreadsAndSignal) {
  auto t = open();
  ASSERT_TRUE(t);
#if defined(__x86_64__)
  EXPECT_EQ(t->arch(), ehbt::Arch::X86_64);
#endif
  ASSERT_EQ(t->threads().size(), 4u);  // main + three blocked threads
  const ReportT& r = core_->report;
  // Every thread the child reported is in the core.
  for (int i = 0; i < 4; ++i) {
    uint64_t tid = r.hex("tid_" + std::to_string(i));
    bool found = false;
    for (const auto& th : t->threads()) found |= static_cast<uint64_t>(th.tid) == tid;
    EXPECT_TRUE(found) << "thread " << i << " tid " << tid;
  }
  // The main thread crashed; the kernel lists it first.
  ASSERT_LT(t->crashing_thread(), t->threads().size());
  const ehbt::ThreadState& crashing = t->threads()[t->crashing_thread()];
  EXPECT_EQ(static_cast<uint64_t>(crashing.tid), r.hex("tid_0"));
  EXPECT_EQ(crashing.signal, SIGSEGV);
  ASSERT_TRUE(t->signal().has_value());
  EXPECT_EQ(t->signal()->number, SIGSEGV);
  EXPECT_EQ(ehbt::signal_name(t->signal()->number), "SIGSEGV");
  if (!core_->via_gdb) {
    ASSERT_TRUE(t->signal()->address.has_value());
    EXPECT_EQ(*t->signal()->address, kFaultAddress);
    EXPECT_EQ(t->signal()->code, SEGV_MAPERR);
  }
  for (const auto& th : t->threads()) {
    if (&th != &crashing) {
      EXPECT_EQ(th.signal, 0) << th.tid;
    }
  }
}

TEST_F(NativeCoreTest, PcIsInsideTheCrashingFunction) {
  auto t = open();
  ASSERT_TRUE(t);
  const ReportT& r = core_->report;
  uint64_t pc = t->threads()[t->crashing_thread()].regs.pc();
  uint64_t fn = r.hex("crash_fn");
  // The function's extent from nm (link-time), placed at the child's runtime address.
  auto syms = nm_symbols("nm", core_->exe);
  ASSERT_TRUE(syms.count("ehbt_core_test_crash_fn")) << "nm found no crash function";
  auto [link_addr, size] = syms["ehbt_core_test_crash_fn"];
  ASSERT_GT(size, 0u);
  uint64_t runtime_start = fn;
  EXPECT_GE(pc, runtime_start);
  EXPECT_LT(pc, runtime_start + size);
  // And the executable's bias from dl_iterate_phdr puts nm's address at the same place.
  ASSERT_FALSE(r.objects.empty());
  EXPECT_EQ(r.objects.front().first + link_addr, fn);
}

TEST_F(NativeCoreTest, StackPointersLieInTheThreadsStacks) {
  auto t = open();
  ASSERT_TRUE(t);
  const ReportT& r = core_->report;
  ASSERT_EQ(r.stacks.size(), 4u);
  for (const auto& th : t->threads()) {
    uint64_t sp = th.regs.sp();
    bool inside = false;
    for (auto [lo, hi] : r.stacks) inside |= sp >= lo && sp < hi;
    EXPECT_TRUE(inside) << "tid " << th.tid << " sp " << std::hex << sp;
  }
}

TEST_F(NativeCoreTest, ReadsTheStackMarker) {
  auto t = open();
  ASSERT_TRUE(t);
  uint64_t addr = core_->report.hex("marker_addr");
  ASSERT_NE(addr, 0u);
  uint64_t v = 0;
  ASSERT_TRUE(t->memory().read_uint(addr, 8, false, v));
  EXPECT_EQ(v, kStackMarker);
  // And it lies above the crashing thread's sp, in its own frame.
  EXPECT_GE(addr, t->threads()[t->crashing_thread()].regs.sp());
}

TEST_F(NativeCoreTest, ModulesMatchDlIteratePhdr) {
  auto t = open();
  ASSERT_TRUE(t);
  const ReportT& r = core_->report;
  // The executable: first dl_iterate_phdr object (name ""), its bias, the core's NT_FILE path.
  EXPECT_EQ(std::filesystem::canonical(t->executable()), std::filesystem::canonical(core_->exe));
  const ehbt::Module* exe = t->modules().find(r.hex("crash_fn"));
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->bias, r.objects.front().first);
  EXPECT_EQ(exe->build_id_match, true);
  EXPECT_NE(exe->image, nullptr);

  std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  bool found = false;
  for (const auto& m : t->modules().modules()) {
    if (m.path != libc) continue;
    found = true;
    uint64_t want_bias = 0;
    for (const auto& [bias, name] : r.objects) {
      if (canonical(name) == libc) want_bias = bias;
    }
    EXPECT_EQ(m.bias, want_bias);
    EXPECT_EQ(m.build_id_match, true);
    EXPECT_EQ(m.file, libc);
    ASSERT_NE(m.image, nullptr);
    EXPECT_EQ(m.build_id, m.image->build_id());
    EXPECT_EQ(m.build_id.size(), 40u);  // a sha1 build-id, as Debian builds it
    EXPECT_TRUE(m.contains(r.hex("libc_text_addr")));
  }
  EXPECT_TRUE(found) << "libc " << libc << " not among the modules";
  // The vDSO (from AT_SYSINFO_EHDR) is there too, built from the core's memory.
  bool vdso = false;
  for (const auto& m : t->modules().modules()) {
    if (m.path == "[vdso]") {
      vdso = true;
      EXPECT_NE(m.image, nullptr);
      EXPECT_TRUE(m.file.empty());
    }
  }
  EXPECT_TRUE(vdso);
  // Every object the child had (except the vDSO, named differently) is a module.
  for (const auto& [bias, name] : r.objects) {
    if (name.empty() || name.find("vdso") != std::string::npos) continue;
    bool seen = false;
    for (const auto& m : t->modules().modules()) {
      seen |= m.path == canonical(name) && m.bias == bias;
    }
    EXPECT_TRUE(seen) << name;
  }
}

TEST_F(NativeCoreTest, TextReadsFallBackToTheFiles) {
  auto t = open();
  ASSERT_TRUE(t);
  const ReportT& r = core_->report;
  // The kernel did not dump these text bytes ...
  auto mapped = ehbt::core::MappedFile::open(core_->core);
  ASSERT_TRUE(mapped);
  auto parsed = ehbt::core::parse_core(mapped->bytes(), {});
  ASSERT_TRUE(parsed);
  for (const char* key : {"exe_text", "libc_text"}) {
    uint64_t addr = r.hex(std::string(key) + "_addr");
    ASSERT_NE(addr, 0u) << key;
    for (const auto& s : parsed->segments) {
      bool dumped = addr >= s.vaddr && addr - s.vaddr < s.dumped.size();
      // gdb's gcore dumps the executable's text; the kernel does not.
      if (!core_->via_gdb) {
        EXPECT_FALSE(dumped) << key << " was dumped: the test would not exercise the fallback";
      }
    }
    // ... yet memory reads return what the child saw there: the file's contents.
    auto want = hex_bytes(r.values.at(key));
    ASSERT_EQ(want.size(), 16u);
    std::vector<std::byte> got(16);
    ASSERT_EQ(t->memory().read(addr, got), 16u) << key;
    EXPECT_EQ(got, want) << key;
  }
}

TEST_F(NativeCoreTest, MismatchedFilesAreNotUsed) {
  // A sysroot whose "libc" is another library: its build-id differs from the one the core
  // recorded, so the module says so and the file serves neither memory nor unwinding.
  std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  TempDir root;
  std::filesystem::path fake = root.path() + libc;
  std::filesystem::create_directories(fake.parent_path());
  std::string other;
  for (const auto& [bias, name] : core_->report.objects) {
    if (!name.empty() && canonical(name) != libc && name.find("vdso") == std::string::npos &&
        name.find("ld-linux") == std::string::npos) {
      other = canonical(name);
    }
  }
  ASSERT_FALSE(other.empty());
  std::filesystem::copy_file(other, fake);

  ehbt::TargetOptions opts;
  opts.sysroots = {root.path()};
  opts.exe = "/bin/true";  // not the crashed program
  auto t = open(opts);
  ASSERT_TRUE(t);
  const ehbt::Module* m = nullptr;
  for (const auto& mod : t->modules().modules()) {
    if (mod.path == libc) m = &mod;
  }
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->build_id_match, false);
  EXPECT_TRUE(m->file.empty());
  EXPECT_FALSE(m->build_id.empty());
  if (m->image) {
    EXPECT_EQ(m->image->build_id(), m->build_id);  // rebuilt from the core
  }
  // Text of libc is no longer readable: the core did not dump it and the file is wrong.
  std::vector<std::byte> buf(16);
  EXPECT_EQ(t->memory().read(core_->report.hex("libc_text_addr"), buf), 0u);

  const ehbt::Module* exe = t->modules().find(core_->report.hex("crash_fn"));
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->build_id_match, false);
  if (!core_->via_gdb) {
    EXPECT_EQ(t->memory().read(core_->report.hex("exe_text_addr"), buf), 0u);
  }
}

TEST_F(NativeCoreTest, SysrootIsSearchedFirst) {
  // A sysroot holding a copy of the real libc is preferred to the path as named.
  std::string libc = libc_path();
  TempDir root;
  std::filesystem::path copy = root.path() + libc;
  std::filesystem::create_directories(copy.parent_path());
  std::filesystem::copy_file(libc, copy);
  ehbt::TargetOptions opts;
  opts.sysroots = {root.path() + "/does-not-exist", root.path()};
  ehbt::ImageStore store;
  opts.store = &store;
  auto t = open(opts);
  ASSERT_TRUE(t);
  bool found = false;
  for (const auto& m : t->modules().modules()) {
    if (m.path != libc) continue;
    found = true;
    EXPECT_EQ(m.file, copy.string());
    EXPECT_EQ(m.build_id_match, true);
  }
  EXPECT_TRUE(found);
  // The store shares images between targets.
  std::size_t n = store.size();
  EXPECT_GT(n, 0u);
  auto t2 = open(opts);
  ASSERT_TRUE(t2);
  EXPECT_EQ(store.size(), n);
}

TEST_F(NativeCoreTest, SysrootLinksThatLeadOutAreNotFollowed) {
  // A sysroot whose libc directory is a link climbing out of it to a directory that holds a
  // copy of the real libc: the copy matches the core's build-id, so opening it would "work",
  // but it lies outside the sysroot. The lookup stays inside (finds nothing there) and falls
  // back to the path as named on this host, as documented.
  std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  TempDir outside, root;
  std::filesystem::copy_file(libc, outside.file("libc.so.6"));
  std::filesystem::path dir = std::filesystem::path(root.path() + libc).parent_path();
  std::filesystem::create_directories(dir.parent_path());
  std::filesystem::create_directory_symlink("../../../../../../../../../.." + outside.path(), dir);
  // The kernel's own lookup would indeed reach the copy through the link.
  ASSERT_TRUE(std::filesystem::exists(root.path() + libc));

  ehbt::TargetOptions opts;
  opts.sysroots = {root.path()};
  auto t = open(opts);
  ASSERT_TRUE(t);
  bool found = false;
  for (const auto& m : t->modules().modules()) {
    if (m.path != libc) continue;
    found = true;
    EXPECT_EQ(m.file, libc);
    EXPECT_EQ(m.build_id_match, true);
  }
  EXPECT_TRUE(found);
}

}  // namespace
