// SPDX-License-Identifier: Apache-2.0
#include "support/unwind_live_self.hpp"

#if defined(__x86_64__) && defined(__linux__)
#include <execinfo.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "support/unwind_live_chain.hpp"

namespace ehbt::test {
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
  if (name.empty()) name = "/proc/self/exe";  // the main program has no name here
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

// What the SIGUSR1 handler calls (a handler gets no argument of ours).
struct PendingCapture {
  void (*capture)(void*) = nullptr;
  void* arg = nullptr;
};
PendingCapture g_pending;

void on_sigusr1(int) {
  g_pending.capture(g_pending.arg);
}

void raise_sigusr1(void*) {
  raise(SIGUSR1);
}

std::optional<Symbol> symbolize(const Frame& f) {
  if (f.module == nullptr || !f.module->image) return std::nullopt;
  return f.module->image->symbolize(f.module->to_link(f.lookup_pc()));
}

}  // namespace

ModuleSet self_modules() {
  void* warm[4];
  backtrace(warm, 4);
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

void capture_in_chain(void (*capture)(void*), void* arg) {
  live_chain(capture, arg);
}

bool capture_in_chain_through_signal(void (*capture)(void*), void* arg) {
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  if (sigaction(SIGUSR1, &sa, &old) != 0) return false;
  g_pending = {capture, arg};
  live_chain(raise_sigusr1, nullptr);
  sigaction(SIGUSR1, &old, nullptr);
  g_pending = {};
  return true;
}

std::string dump(const Backtrace& bt) {
  std::string out;
  for (std::size_t i = 0; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    const std::optional<Symbol> sym = symbolize(f);
    char line[512];
    std::snprintf(line, sizeof line, "#%zu pc=0x%llx cfa=0x%llx %s%s %s\n", i,
                  static_cast<unsigned long long>(f.pc), static_cast<unsigned long long>(f.cfa),
                  std::string(to_string(f.source)).c_str(),
                  f.signal_trampoline ? " [trampoline]" : "", sym ? sym->name.c_str() : "?");
    out += line;
  }
  return out + "stop " + std::string(to_string(bt.stop)) + " " + bt.detail + "\n";
}

std::string symbol_of(const Frame& f) {
  const std::optional<Symbol> sym = symbolize(f);
  return sym ? sym->name : "";
}

std::size_t backtrace_shift(const std::vector<uint64_t>& expected, const Backtrace& bt) {
  if (bt.frames.size() > 1 && expected.size() > 2 && expected[1] != bt.frames[1].pc &&
      expected[2] == bt.frames[1].pc) {
    return 1;
  }
  return 0;
}

void expect_same_as_backtrace(const std::vector<uint64_t>& expected, const Backtrace& bt) {
  if (std::getenv("EHBT_TEST_VERBOSE") != nullptr) std::fputs(dump(bt).c_str(), stdout);
  ASSERT_GE(expected.size(), 10u);
  ASSERT_GE(bt.frames.size(), 2u) << dump(bt);
  const std::size_t shift = backtrace_shift(expected, bt);
  ASSERT_EQ(bt.frames.size() + shift, expected.size()) << dump(bt);
  for (std::size_t i = 1; i < bt.frames.size(); ++i) {
    EXPECT_EQ(bt.frames[i].pc, expected[i + shift]) << "frame " << i << "\n" << dump(bt);
  }
  EXPECT_EQ(bt.stop, StopReason::Outermost) << dump(bt);
}

}  // namespace ehbt::test

#endif
