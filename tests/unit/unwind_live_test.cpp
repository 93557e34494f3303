// Live, in-process unwinding on x86-64, checked against glibc's backtrace() (libgcc's
// unwinder) taken at the same point: the chain of tests/support/unwind_live_chain.* (C and
// C++, -O2 -fomit-frame-pointer, one DRAP function), plain and through a signal handler.
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>

#include <cstring>
#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"
#include "support/unwind_live_chain.hpp"
#include "support/unwind_toolchain.hpp"

namespace ehbt {
namespace {

int add_module(dl_phdr_info* info, size_t, void* data) {
  auto* set = static_cast<ModuleSet*>(data);
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uint64_t>(lo, ph.p_vaddr & ~uint64_t{0xfff});
    hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi) return 0;
  Module m;
  m.bias = info->dlpi_addr;
  m.start = lo + m.bias;
  m.end = hi + m.bias;
  if (name.empty()) name = "/proc/self/exe";
  m.path = name;
  if (name.rfind("linux-vdso", 0) == 0) {
    SelfMemory self;
    if (auto img = Image::from_memory(self, m.start, name)) m.image = *img;
  } else if (auto img = Image::open(name)) {
    m.image = *img;
    m.file = name;
  }
  set->add(std::move(m));
  return 0;
}

ModuleSet self_modules() {
  ModuleSet set;
  dl_iterate_phdr(add_module, &set);
  return set;
}

RegisterSet regs_from(const ucontext_t& uc) {
  const greg_t* g = uc.uc_mcontext.gregs;
  RegisterSet r(Arch::X86_64);
  r.set_pc(static_cast<uint64_t>(g[REG_RIP]));
  r.set(7, static_cast<uint64_t>(g[REG_RSP]));
  r.set(6, static_cast<uint64_t>(g[REG_RBP]));
  r.set(3, static_cast<uint64_t>(g[REG_RBX]));
  r.set(12, static_cast<uint64_t>(g[REG_R12]));
  r.set(13, static_cast<uint64_t>(g[REG_R13]));
  r.set(14, static_cast<uint64_t>(g[REG_R14]));
  r.set(15, static_cast<uint64_t>(g[REG_R15]));
  return r;
}

// Refuses reads that touch [start, start + size): hides a trampoline's code bytes.
class HidingMemory final : public Memory {
 public:
  HidingMemory(Memory& inner, uint64_t start, uint64_t size)
      : inner_(inner), start_(start), size_(size) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override {
    if (addr < start_ + size_ && addr + out.size() > start_) return 0;
    return inner_.read(addr, out);
  }

 private:
  Memory& inner_;
  uint64_t start_, size_;
};

struct Capture {
  const ModuleSet* modules = nullptr;
  std::vector<uint64_t> expected;  // glibc backtrace()
  Backtrace bt;
  Backtrace bt_fde;  // the signal case again, with the trampoline's bytes hidden
};

Capture* g_capture = nullptr;

// Everything happens here, while the frames above are still live.
__attribute__((noinline)) void capture_here(Capture* c) {
  ucontext_t uc;
  getcontext(&uc);
  void* pcs[256];
  int n = backtrace(pcs, 256);
  c->expected.clear();
  for (int i = 0; i < n; ++i) c->expected.push_back(reinterpret_cast<uint64_t>(pcs[i]));
  SelfMemory self;
  Unwinder unwinder;
  const RegisterSet regs = regs_from(uc);
  c->bt = unwinder.unwind(regs, self, *c->modules);
  for (const Frame& f : c->bt.frames) {
    if (!f.signal_trampoline) continue;
    HidingMemory hidden(self, f.pc, 16);
    c->bt_fde = unwinder.unwind(regs, hidden, *c->modules);
  }
  asm volatile("" : : : "memory");
}

void plain_leaf(void* arg) {
  capture_here(static_cast<Capture*>(arg));
}

void on_sigusr1(int) {
  capture_here(g_capture);
}

void signal_leaf(void* arg) {
  g_capture = static_cast<Capture*>(arg);
  raise(SIGUSR1);
}

void dump(const Backtrace& bt) {
  for (std::size_t i = 0; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    std::optional<Symbol> sym;
    if (f.module && f.module->image)
      sym = f.module->image->symbolize(f.module->to_link(f.lookup_pc()));
    std::printf("#%zu pc=0x%llx cfa=0x%llx %s%s %s\n", i, static_cast<unsigned long long>(f.pc),
                static_cast<unsigned long long>(f.cfa), std::string(to_string(f.source)).c_str(),
                f.signal_trampoline ? " [trampoline]" : "", sym ? sym->name.c_str() : "?");
  }
  std::printf("stop %s %s\n", std::string(to_string(bt.stop)).c_str(), bt.detail.c_str());
}

class Live : public ::testing::Test {
 protected:
  void SetUp() override {
    void* warm[4];
    backtrace(warm, 4);  // loads libgcc_s before the module list is taken
    modules_ = self_modules();
    capture_.modules = &modules_;
  }

  // Same frames as backtrace(), from frame 1 on (frame 0 is the capture point itself,
  // which backtrace() reports at its own call site).
  void expect_same_as_backtrace(const Backtrace& bt) {
    if (std::getenv("EHBT_TEST_VERBOSE") != nullptr) dump(bt);
    ASSERT_GE(capture_.expected.size(), 10u);
    ASSERT_GE(bt.frames.size(), 2u) << "stop: " << to_string(bt.stop) << " " << bt.detail;
    // Under ASan, backtrace() is an interceptor that reports one more frame of its own at the
    // top; align on our frame 1 (at most one extra frame), then every frame must match.
    std::size_t shift = 0;
    if (capture_.expected.size() > 2 && capture_.expected[1] != bt.frames[1].pc &&
        capture_.expected[2] == bt.frames[1].pc) {
      shift = 1;
    }
    ASSERT_EQ(bt.frames.size() + shift, capture_.expected.size())
        << "stop: " << to_string(bt.stop) << " " << bt.detail;
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      EXPECT_EQ(bt.frames[i].pc, capture_.expected[i + shift]) << "frame " << i;
    }
    EXPECT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  }

  ModuleSet modules_;
  Capture capture_;
};

TEST_F(Live, ChainMatchesGlibcBacktrace) {
  test::live_chain(plain_leaf, &capture_);
  expect_same_as_backtrace(capture_.bt);
  for (std::size_t i = 1; i < capture_.bt.frames.size(); ++i) {
    EXPECT_EQ(capture_.bt.frames[i].source, FrameSource::EhFrame) << "frame " << i;
    EXPECT_FALSE(capture_.bt.frames[i].exact_pc);
  }
  // CFAs strictly increase along the walk.
  for (std::size_t i = 1; i < capture_.bt.frames.size(); ++i) {
    EXPECT_GT(capture_.bt.frames[i].cfa, capture_.bt.frames[i - 1].cfa) << "frame " << i;
  }
}

TEST_F(Live, ThroughSignalHandler) {
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  test::live_chain(signal_leaf, &capture_);
  sigaction(SIGUSR1, &old, nullptr);

  expect_same_as_backtrace(capture_.bt);
  std::size_t tramp = 0;
  for (std::size_t i = 0; i < capture_.bt.frames.size(); ++i) {
    if (capture_.bt.frames[i].signal_trampoline) {
      EXPECT_EQ(tramp, 0u) << "two trampolines";
      tramp = i;
    }
  }
  ASSERT_GT(tramp, 0u) << "no frame was recognised as the sigreturn trampoline";
  const Frame& interrupted = capture_.bt.frames[tramp + 1];
  EXPECT_EQ(interrupted.source, FrameSource::Signal);
  EXPECT_TRUE(interrupted.exact_pc);

  // The same walk when the trampoline's bytes cannot be read: glibc's FDE for __restore_rt
  // (CFA = [rsp + 160], registers by expression) must give the same frames.
  expect_same_as_backtrace(capture_.bt_fde);
  ASSERT_GT(capture_.bt_fde.frames.size(), tramp + 1);
  EXPECT_TRUE(capture_.bt_fde.frames[tramp].signal_trampoline);
  EXPECT_EQ(capture_.bt_fde.frames[tramp + 1].source, FrameSource::EhFrame);
  EXPECT_TRUE(capture_.bt_fde.frames[tramp + 1].exact_pc);
  EXPECT_EQ(capture_.bt_fde.frames[tramp].cfa, capture_.bt.frames[tramp].cfa);
}

TEST_F(Live, DrapFunctionIsRealignedThroughR10) {
  // Guards the chain: ehbt_live_c_drap must really use a DRAP register, or the walk above
  // proves nothing about def_cfa_expression.
  auto dis =
      test::run_capture("objdump -d --no-show-raw-insn --disassemble=ehbt_live_c_drap /proc/" +
                        std::to_string(getpid()) + "/exe 2>/dev/null");
  if (!dis) GTEST_FAIL() << "objdump not available";
  EXPECT_NE(dis->find("and    $0xffffffffffffffc0,%rsp"), std::string::npos) << *dis;
  if (!ehbt_live_chain_uses_drap) GTEST_SKIP() << "the C half was not built by gcc: no DRAP";
  EXPECT_NE(dis->find("lea    0x8(%rsp),%r10"), std::string::npos) << *dis;
  auto frames = test::run_capture("readelf --debug-dump=frames /proc/" + std::to_string(getpid()) +
                                  "/exe 2>/dev/null");
  if (!frames) GTEST_FAIL() << "readelf not available";
  EXPECT_NE(frames->find("DW_CFA_def_cfa_expression"), std::string::npos);
}

}  // namespace
}  // namespace ehbt

#else
TEST(Live, OnlyOnX86_64) {
  GTEST_SKIP() << "live unwinding tests run on x86-64 Linux";
}
#endif
