// Live, in-process unwinding on x86-64 through SFrame tables converted in memory from every
// module's .eh_frame (UnwindOptions::sframe_from_eh_frame), checked against glibc's
// backtrace() (libgcc's DWARF unwinder) taken at the same point. The chain of
// tests/support/unwind_live_chain.* includes a function gcc realigns through a DRAP register:
// V3 expresses it, V2 cannot (an SFrame-only walk stops there, saying why; Auto falls back
// to .eh_frame for that one frame).
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"
#include "support/unwind_live_chain.hpp"

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
  m.path = name.empty() ? "/proc/self/exe" : name;
  if (name.rfind("linux-vdso", 0) == 0) {
    SelfMemory self;
    if (auto img = Image::from_memory(self, m.start, name)) m.image = *img;
  } else if (auto img = Image::open(m.path)) {
    m.image = *img;
    m.file = m.path;
  }
  set->add(std::move(m));
  return 0;
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

UnwindOptions converted(SourcePreference source, uint8_t version) {
  UnwindOptions o;
  o.source = source;
  o.sframe_from_eh_frame = true;
  o.sframe_version = version;
  return o;
}

struct Capture {
  const ModuleSet* modules = nullptr;
  std::vector<uint64_t> expected;  // glibc backtrace()
  Backtrace v3;                    // SFrame only, V3
  Backtrace v2;                    // SFrame only, V2
  Backtrace v2_auto;               // Auto, V2
};

Capture* g_capture = nullptr;

// Everything happens here, while the frames above are still live.
__attribute__((noinline)) void capture_here(Capture* c) {
  ucontext_t uc;
  getcontext(&uc);
  void* pcs[256];
  int n = backtrace(pcs, 256);
  c->expected.assign(n, 0);
  for (int i = 0; i < n; ++i) c->expected[i] = reinterpret_cast<uint64_t>(pcs[i]);
  SelfMemory self;
  Unwinder unwinder;
  const RegisterSet regs = regs_from(uc);
  c->v3 = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::SFrame, 3));
  c->v2 = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::SFrame, 2));
  c->v2_auto = unwinder.unwind(regs, self, *c->modules, converted(SourcePreference::Auto, 2));
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

std::string dump(const Backtrace& bt) {
  std::string out;
  for (std::size_t i = 0; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    std::optional<Symbol> sym;
    if (f.module && f.module->image)
      sym = f.module->image->symbolize(f.module->to_link(f.lookup_pc()));
    char line[256];
    std::snprintf(line, sizeof line, "#%zu pc=0x%llx %s %s\n", i,
                  static_cast<unsigned long long>(f.pc), std::string(to_string(f.source)).c_str(),
                  sym ? sym->name.c_str() : "?");
    out += line;
  }
  return out + "stop " + std::string(to_string(bt.stop)) + " " + bt.detail + "\n";
}

std::string symbol_of(const Frame& f) {
  if (f.module == nullptr || !f.module->image) return "";
  auto sym = f.module->image->symbolize(f.module->to_link(f.lookup_pc()));
  return sym ? sym->name : "";
}

class LiveSFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    void* warm[4];
    backtrace(warm, 4);  // loads libgcc_s before the module list is taken
    dl_iterate_phdr(add_module, &modules_);
    capture_.modules = &modules_;
  }

  // Frames 1.. of a walk against backtrace()'s (frame 0 is the capture point, which
  // backtrace() reports at its own call site). Under ASan backtrace() reports one more frame
  // of its own at the top: align on our frame 1. Returns the alignment shift.
  std::size_t shift_for(const Backtrace& bt) const {
    const auto& e = capture_.expected;
    if (bt.frames.size() > 1 && e.size() > 2 && e[1] != bt.frames[1].pc && e[2] == bt.frames[1].pc)
      return 1;
    return 0;
  }
  void expect_same_as_backtrace(const Backtrace& bt) {
    ASSERT_GE(capture_.expected.size(), 10u);
    ASSERT_GE(bt.frames.size(), 2u) << dump(bt);
    const std::size_t shift = shift_for(bt);
    ASSERT_EQ(bt.frames.size() + shift, capture_.expected.size()) << dump(bt);
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      EXPECT_EQ(bt.frames[i].pc, capture_.expected[i + shift]) << "frame " << i << "\n" << dump(bt);
    }
    EXPECT_EQ(bt.stop, StopReason::Outermost) << dump(bt);
  }
  // Every frame an SFrame-only walk found is tagged sframe, or signal for what the kernel's
  // signal frame gave.
  static void expect_sframe_tags(const Backtrace& bt) {
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      const FrameSource s = bt.frames[i].source;
      EXPECT_TRUE(s == FrameSource::SFrame || s == FrameSource::Signal)
          << "frame " << i << ": " << to_string(s);
    }
  }
  // V2 SFrame-only: the walk reaches the DRAP function (ehbt_live_c_drap) as backtrace()
  // does, and stops there because V2 cannot express its CFA (gcc builds only).
  void expect_v2_stops_at_drap(const Backtrace& bt) {
    if (!ehbt_live_chain_uses_drap) {
      // The C half was not built by gcc: no DRAP function, V2 expresses every frame.
      expect_same_as_backtrace(bt);
      return;
    }
    ASSERT_GE(bt.frames.size(), 2u) << dump(bt);
    const std::size_t shift = shift_for(bt);
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      ASSERT_LT(i + shift, capture_.expected.size());
      EXPECT_EQ(bt.frames[i].pc, capture_.expected[i + shift]) << "frame " << i;
    }
    EXPECT_EQ(symbol_of(bt.frames.back()), "ehbt_live_c_drap") << dump(bt);
    EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << dump(bt);
    EXPECT_NE(bt.detail.find("not expressible in SFrame V2"), std::string::npos) << bt.detail;
    EXPECT_LT(bt.frames.size() + shift, capture_.expected.size());
  }

  ModuleSet modules_;
  Capture capture_;
};

TEST_F(LiveSFrame, ChainMatchesGlibcBacktrace) {
  test::live_chain(plain_leaf, &capture_);
  {
    SCOPED_TRACE("V3, SFrame only");
    expect_same_as_backtrace(capture_.v3);
    expect_sframe_tags(capture_.v3);
    for (const Frame& f : capture_.v3.frames) EXPECT_FALSE(f.signal_trampoline);
  }
  {
    SCOPED_TRACE("V2, Auto");
    expect_same_as_backtrace(capture_.v2_auto);
    // The DRAP function's caller is the one frame .eh_frame gives.
    std::size_t eh = 0;
    for (std::size_t i = 1; i < capture_.v2_auto.frames.size(); ++i) {
      if (capture_.v2_auto.frames[i].source == FrameSource::EhFrame) {
        ++eh;
        if (ehbt_live_chain_uses_drap) {
          EXPECT_EQ(symbol_of(capture_.v2_auto.frames[i - 1]), "ehbt_live_c_drap");
        }
      } else {
        EXPECT_EQ(capture_.v2_auto.frames[i].source, FrameSource::SFrame) << "frame " << i;
      }
    }
    EXPECT_EQ(eh, ehbt_live_chain_uses_drap ? 1u : 0u) << dump(capture_.v2_auto);
  }
  {
    SCOPED_TRACE("V2, SFrame only");
    expect_sframe_tags(capture_.v2);
    expect_v2_stops_at_drap(capture_.v2);
  }
}

TEST_F(LiveSFrame, ThroughSignalHandler) {
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  test::live_chain(signal_leaf, &capture_);
  sigaction(SIGUSR1, &old, nullptr);

  SCOPED_TRACE("V3, SFrame only");
  expect_same_as_backtrace(capture_.v3);
  expect_sframe_tags(capture_.v3);
  // SFrame cannot describe __restore_rt: the trampoline is stepped by its bytes, and the
  // interrupted frame comes from the kernel's signal frame.
  std::size_t tramp = 0;
  for (std::size_t i = 0; i < capture_.v3.frames.size(); ++i) {
    if (capture_.v3.frames[i].signal_trampoline) tramp = i;
  }
  ASSERT_GT(tramp, 0u) << dump(capture_.v3);
  ASSERT_GT(capture_.v3.frames.size(), tramp + 1);
  EXPECT_EQ(capture_.v3.frames[tramp + 1].source, FrameSource::Signal);
  EXPECT_TRUE(capture_.v3.frames[tramp + 1].exact_pc);
}

}  // namespace
}  // namespace ehbt

#else
TEST(LiveSFrame, OnlyOnX86_64) {
  GTEST_SKIP() << "live unwinding tests run on x86-64 Linux";
}
#endif
