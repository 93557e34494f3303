// SPDX-License-Identifier: Apache-2.0
// Scaffolding shared by the live (in-process) unwinding tests on x86-64 Linux: this process's
// modules, the registers of a getcontext() capture, a readable dump of a walk, and the check
// that a walk gives the frames glibc's backtrace() gave at the same point.
//
// The capture itself (getcontext() + backtrace() + Unwinder::unwind) stays in each test's own
// noinline function: moving it here would add a frame of ours above the chain.
#pragma once

#if defined(__x86_64__) && defined(__linux__)
#include <gtest/gtest.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ehbt/unwinder.hpp"

namespace ehbt::test {

// Every module of this process (dl_iterate_phdr), with its image opened from the file, or
// from memory for the vDSO. Calls backtrace() once first, so that libgcc_s (which it loads
// lazily) is in the list.
ModuleSet self_modules();

// The callee-saved registers, sp and pc of a getcontext() capture.
RegisterSet regs_from(const ucontext_t& uc);

// Runs the chain of support/unwind_live_chain.hpp with capture(arg) called at its bottom:
// directly, or from a SIGUSR1 handler the bottom raises, so that the walk from there crosses
// the kernel's signal frame and the sigreturn trampoline. The latter is false when the
// handler could not be installed.
void capture_in_chain(void (*capture)(void*), void* arg);
bool capture_in_chain_through_signal(void (*capture)(void*), void* arg);

// One line a frame (index, pc, cfa, source, trampoline mark, symbol), then the stop reason.
std::string dump(const Backtrace& bt);

// The symbol the frame's lookup pc falls in, "" when unknown.
std::string symbol_of(const Frame& f);

// How far `expected` (backtrace()'s pcs) is ahead of `bt`: under ASan backtrace() is an
// interceptor that reports one frame of its own at the top; we align on our frame 1.
std::size_t backtrace_shift(const std::vector<uint64_t>& expected, const Backtrace& bt);

// GoogleTest checks: frames 1.. of `bt` are backtrace()'s (frame 0 is the capture point,
// which backtrace() reports at its own call site), the same number of them, and the walk
// ended at the outermost frame. Prints the walk when EHBT_TEST_VERBOSE is set.
void expect_same_as_backtrace(const std::vector<uint64_t>& expected, const Backtrace& bt);

// A fixture for walks captured at the bottom of the live chain: this process's modules (taken
// once per test), and a Capture, with at least `modules` (set to them) and `expected`
// (backtrace()'s pcs), that the test's capture function fills in.
template <class Capture>
class LiveChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    modules_ = self_modules();
    capture_.modules = &modules_;
  }
  void expect_same_as_backtrace(const Backtrace& bt) {
    ::ehbt::test::expect_same_as_backtrace(capture_.expected, bt);
  }

  ModuleSet modules_;
  Capture capture_;
};

}  // namespace ehbt::test

#endif
