// SPDX-License-Identifier: Apache-2.0
// Why an attach failed, from /proc files written here by hand (a copy of what the kernel
// writes for each case), so every branch is reached on any machine. The live cases (strace,
// a zombie, kthreadd) are in tests/integration/test_rough_edges.py.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/attach_diagnosis.hpp"
#include "core_test_support.hpp"

namespace {

class FakeProc {
 public:
  void write(int pid, const std::string& name, const std::string& text) {
    const std::string dir = tmp_.file(std::to_string(pid));
    mkdir(dir.c_str(), 0700);
    std::ofstream(dir + "/" + name) << text;
  }
  // status and stat of a process in `state` with `flags`, traced by `tracer` (0: none).
  void process(int pid, const std::string& comm, char state, unsigned long flags, int tracer) {
    write(pid, "status",
          "Name:\t" + comm + "\nUmask:\t0022\nState:\t" + state + " (whatever)\nTgid:\t" +
              std::to_string(pid) + "\nPid:\t" + std::to_string(pid) + "\nPPid:\t1\nTracerPid:\t" +
              std::to_string(tracer) + "\nUid:\t0\t0\t0\t0\n");
    // pid (comm) state ppid pgrp session tty_nr tpgid flags ...
    write(pid, "stat",
          std::to_string(pid) + " (" + comm + ") " + state + " 1 1 1 0 -1 " +
              std::to_string(flags) + " 0 0 0 0 0 0 0 0 20 0 1 0 32\n");
  }
  const std::string& root() const { return tmp_.path(); }

 private:
  core_test::TempDir tmp_;
};

using ehbt::core::attach_error_from;

TEST(AttachDiagnosis, NoSuchProcess) {
  FakeProc proc;
  EXPECT_EQ(attach_error_from(4242, ESRCH, proc.root()), "cannot attach to 4242: no such process");
}

TEST(AttachDiagnosis, AlreadyTraced) {
  FakeProc proc;
  proc.process(100, "server", 't', 0x400100, 77);
  proc.write(77, "comm", "strace\n");
  EXPECT_EQ(attach_error_from(100, EPERM, proc.root()),
            "cannot attach to 100 (server): already traced by pid 77 (strace)");
}

TEST(AttachDiagnosis, Zombie) {
  FakeProc proc;
  proc.process(101, "worker", 'Z', 0x400104, 0);
  EXPECT_EQ(attach_error_from(101, EPERM, proc.root()),
            "cannot attach to 101 (worker): it is a zombie: it has no memory or registers left "
            "to unwind");
}

TEST(AttachDiagnosis, KernelThread) {
  FakeProc proc;
  // kthreadd's flags as Linux 6.1 shows them: PF_KTHREAD (0x00200000) | PF_NOFREEZE | ...
  proc.process(2, "kthreadd", 'S', 2129984, 0);
  EXPECT_EQ(attach_error_from(2, EPERM, proc.root()),
            "cannot attach to 2 (kthreadd): it is a kernel thread: no user-space stack");
}

TEST(AttachDiagnosis, NameWithSpacesAndParenthesesDoesNotShiftTheFlags) {
  FakeProc proc;
  proc.process(103, "a) b (c", 'S', 0x400000, 0);
  EXPECT_EQ(attach_error_from(103, EPERM, proc.root()),
            "cannot attach to 103 (a) b (c): Operation not permitted (ptrace_scope? "
            "CAP_SYS_PTRACE?)");
}

TEST(AttachDiagnosis, PermissionOnlyWhenNothingElseExplainsIt) {
  FakeProc proc;
  proc.process(102, "app", 'S', 0x400000, 0);
  EXPECT_EQ(attach_error_from(102, EPERM, proc.root()),
            "cannot attach to 102 (app): Operation not permitted (ptrace_scope? CAP_SYS_PTRACE?)");
  EXPECT_EQ(attach_error_from(102, EIO, proc.root()),
            "cannot attach to 102 (app): " + std::string(std::strerror(EIO)));
}

}  // namespace
