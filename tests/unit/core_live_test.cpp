// SPDX-License-Identifier: Apache-2.0
// A live process: a child (this binary, re-executed) with three threads blocked in different
// system calls is attached, inspected and detached; afterwards it must carry on and exit 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using namespace core_test;

const bool g_child = (run_child_if_requested(), true);

struct LiveChild {
  pid_t pid = -1;
  int go_w = -1;    // parent writes 'G' to let the child finish
  int done_r = -1;  // child writes 'R' when ready, 'D' when finishing
  ChildReport report;

  bool start(const TempDir& dir) {
    int go[2], done[2];
    if (pipe(go) != 0 || pipe(done) != 0) return false;
    std::string report_path = dir.file("live-report.txt");
    std::string exe = self_exe();
    pid = fork();
    if (pid == 0) {
      close(go[1]);
      close(done[0]);
      setenv("EHBT_CORE_CHILD", "live", 1);
      setenv("EHBT_CHILD_REPORT", report_path.c_str(), 1);
      setenv("EHBT_CHILD_GO_FD", std::to_string(go[0]).c_str(), 1);
      setenv("EHBT_CHILD_DONE_FD", std::to_string(done[1]).c_str(), 1);
      execl(exe.c_str(), exe.c_str(), static_cast<char*>(nullptr));
      _exit(2);
    }
    close(go[0]);
    close(done[1]);
    go_w = go[1];
    done_r = done[0];
    char c = 0;
    if (read(done_r, &c, 1) != 1 || c != 'R') return false;
    report = ChildReport::parse(read_file(report_path));
    return report.values.count("done") == 1;
  }
  // Lets the child finish; returns its exit status, or -1 if it did not exit normally after
  // writing 'D'.
  int finish() {
    if (write(go_w, "G", 1) != 1) return -1;
    char c = 0;
    // A guard against hanging forever if the child stays stopped (not a timing check: a
    // healthy child answers at once).
    pollfd p{done_r, POLLIN, 0};
    if (poll(&p, 1, 60 * 1000) != 1) return -1;
    ssize_t n = read(done_r, &c, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    if (n != 1 || c != 'D' || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }
  ~LiveChild() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (go_w >= 0) close(go_w);
    if (done_r >= 0) close(done_r);
  }
};

TEST(LiveProcess, AttachReadsEveryThreadAndDetaches) {
  TempDir dir;
  LiveChild child;
  ASSERT_TRUE(child.start(dir));
  {
    auto t = ehbt::attach_process(child.pid);
    ASSERT_TRUE(t.has_value()) << t.error();
    ehbt::Target& target = *t.value();
    ASSERT_EQ(target.threads().size(), 4u);
    EXPECT_EQ(target.threads()[0].tid, child.pid);  // the main thread first
    EXPECT_FALSE(target.signal().has_value());
    ASSERT_EQ(child.report.stacks.size(), 4u);
    for (const auto& th : target.threads()) {
      // Each thread's sp lies in the stack the child reported for some thread, and the
      // reported tids are the ones attached.
      uint64_t sp = th.regs.sp();
      bool inside = false;
      for (auto [lo, hi] : child.report.stacks) inside |= sp >= lo && sp < hi;
      EXPECT_TRUE(inside) << "tid " << th.tid << " sp " << std::hex << sp;
      bool reported = false;
      for (int i = 0; i < 4; ++i) {
        reported |= child.report.hex("tid_" + std::to_string(i)) == static_cast<uint64_t>(th.tid);
      }
      EXPECT_TRUE(reported) << th.tid;
      EXPECT_NE(th.regs.pc(), 0u);
      EXPECT_FALSE(th.name.empty());
    }
    // Each sp in a distinct stack: four threads, four stacks.
    std::set<std::pair<uint64_t, uint64_t>> used;
    for (const auto& th : target.threads()) {
      for (auto range : child.report.stacks) {
        if (th.regs.sp() >= range.first && th.regs.sp() < range.second) used.insert(range);
      }
    }
    EXPECT_EQ(used.size(), 4u);

    // Memory and modules: the executable and libc, with their files and build-ids checked.
    EXPECT_EQ(std::filesystem::path(target.executable()), std::filesystem::path(self_exe()));
    bool libc = false, vdso = false;
    for (const auto& m : target.modules().modules()) {
      if (m.path.find("/libc.so") != std::string::npos) {
        libc = true;
        EXPECT_EQ(m.build_id_match, true);
        EXPECT_NE(m.image, nullptr);
        EXPECT_FALSE(m.build_id.empty());
      }
      vdso |= m.path == "[vdso]" && m.image != nullptr;
    }
    EXPECT_TRUE(libc);
    EXPECT_TRUE(vdso);
    uint64_t word = 0;
    EXPECT_TRUE(target.memory().read_uint(target.threads()[0].regs.sp(), 8, false, word));
    // The stack of the main thread holds what /proc/PID/mem says it holds.
    std::string mem = "/proc/" + std::to_string(child.pid) + "/mem";
    int fd = open(mem.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    uint64_t direct = 0;
    ASSERT_EQ(pread(fd, &direct, 8, static_cast<off_t>(target.threads()[0].regs.sp())), 8);
    close(fd);
    EXPECT_EQ(word, direct);
    // Unmapped memory faults instead of crashing.
    std::byte buf[8];
    EXPECT_EQ(target.memory().read(16, buf), 0u);
    // Attached threads are in a ptrace stop (/proc/PID/task/TID/stat state 't').
    for (const auto& th : target.threads()) {
      std::string stat = read_file("/proc/" + std::to_string(child.pid) + "/task/" +
                                   std::to_string(th.tid) + "/stat");
      auto close_paren = stat.rfind(')');
      ASSERT_NE(close_paren, std::string::npos);
      EXPECT_EQ(stat.substr(close_paren + 2, 1), "t") << th.tid;
    }
  }  // detached here
  // The child runs on: it reads our 'G', writes 'D' and exits 0.
  EXPECT_EQ(child.finish(), 0);
}

TEST(LiveProcess, ClearErrors) {
  // A pid that does not exist.
  auto t = ehbt::attach_process(0x3ffffffe);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().find("cannot attach to"), std::string::npos) << t.error();
  EXPECT_EQ(t.error().find('\n'), std::string::npos);
  // Ourselves: a process cannot trace its own thread group.
  auto self = ehbt::attach_process(getpid());
  ASSERT_FALSE(self.has_value());
  EXPECT_NE(self.error().find("Operation not permitted (ptrace_scope? CAP_SYS_PTRACE?)"),
            std::string::npos)
      << self.error();
}

int g_term_pipe = -1;
void tool_on_term(int) {
  char t = 'T';
  [[maybe_unused]] ssize_t n = write(g_term_pipe, &t, 1);
}

TEST(LiveProcess, InterruptDetachesAndReraises) {
  // A tool interrupted while attached must not leave the target stopped. The "tool" here is
  // a forked process whose own SIGTERM handler only reports and carries on: the engine's
  // handler must detach, restore that handler and re-raise, and the target must run again
  // while the tool is still alive (so the kernel's detach-on-exit cannot be what freed it).
  TempDir dir;
  LiveChild child;
  ASSERT_TRUE(child.start(dir));
  int ready[2], term[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(term), 0);
  pid_t tool = fork();
  if (tool == 0) {
    close(ready[0]);
    close(term[0]);
    g_term_pipe = term[1];
    signal(SIGTERM, tool_on_term);
    auto t = ehbt::attach_process(child.pid);
    char c = t.has_value() && t.value()->threads().size() == 4 ? 'A' : 'E';
    if (write(ready[1], &c, 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(ready[1]);
  close(term[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, 'A');
  kill(tool, SIGTERM);
  ASSERT_EQ(read(term[0], &c, 1), 1);  // the tool's own handler ran after ours
  EXPECT_EQ(c, 'T');
  // The tool lives on, and the child runs: it reads 'G', writes 'D' and exits 0.
  EXPECT_EQ(kill(tool, 0), 0);
  EXPECT_EQ(child.finish(), 0);
  kill(tool, SIGKILL);
  waitpid(tool, nullptr, 0);
  close(ready[0]);
  close(term[0]);
}

}  // namespace
