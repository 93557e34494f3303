// SPDX-License-Identifier: Apache-2.0
// Helpers for the core_* tests: temporary directories, shell commands, and real cores made by
// crashing a child process (natively, or under qemu-user for other architectures).
//
// The native crash child is this very test binary, re-executed with EHBT_CORE_CHILD set: a
// static initializer in the test file calls core_test::run_child_if_requested() before
// GoogleTest starts. Running it as an executable (not just a fork) lets the gdb fallback run
// the same program when the kernel's core_pattern pipes cores elsewhere.
#pragma once

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace core_test {

// The address the crash child writes to: its si_addr must come back from the core.
inline constexpr uint64_t kFaultAddress = 0x1234;
// The value the crash child leaves in a stack slot.
inline constexpr uint64_t kStackMarker = 0x5eedf00dcafe1234ull;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ehbt-core-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    if (!path_.empty() && std::getenv("EHBT_KEEP_TEMP") == nullptr) {
      std::string cmd = "rm -rf '" + path_ + "'";
      [[maybe_unused]] int rc = std::system(cmd.c_str());
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int status = -1;  // exit status, or -1
  std::string output;
};

// Runs a /bin/sh command, capturing stdout and stderr.
inline CommandResult run(const std::string& cmd) {
  CommandResult r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline bool have_program(const std::string& name) {
  return run("command -v " + name + " >/dev/null").status == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Files in `dir` whose names start with `prefix`.
inline std::vector<std::string> files_with_prefix(const std::string& dir,
                                                  const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(prefix, 0) != 0) continue;
      struct stat st {};
      std::string p = dir + "/" + n;
      if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(p);
    }
    closedir(d);
  }
  return out;
}

// `nm -S` of a binary: symbol -> (address, size), for defined text symbols.
inline std::map<std::string, std::pair<uint64_t, uint64_t>> nm_symbols(const std::string& nm,
                                                                       const std::string& bin) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  CommandResult r = run(nm + " -S --defined-only '" + bin + "'");
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string addr, size, type, name;
    if (!(ls >> addr >> size >> type >> name)) continue;
    if (type != "T" && type != "t" && type != "W" && type != "w") continue;  // inline: weak
    out[name] = {std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return out;
}

// ---- The native crash child ----------------------------------------------------------------

// What the crash child reports (in a text file, "key value..." lines) before it dies.
struct ChildReport {
  std::map<std::string, std::string> values;
  std::vector<std::pair<uint64_t, std::string>> objects;  // dl_iterate_phdr: bias, name
  std::vector<std::pair<uint64_t, uint64_t>> stacks;      // per thread: [lo, hi)

  uint64_t hex(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? 0 : std::stoull(it->second, nullptr, 16);
  }
  static ChildReport parse(const std::string& text) {
    ChildReport r;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string key;
      ls >> key;
      if (key == "obj") {
        std::string bias, name;
        ls >> bias;
        std::getline(ls, name);
        if (!name.empty() && name[0] == ' ') name.erase(0, 1);
        r.objects.emplace_back(std::stoull(bias, nullptr, 16), name);
      } else if (key == "stack") {
        std::string lo, hi;
        ls >> lo >> hi;
        r.stacks.emplace_back(std::stoull(lo, nullptr, 16), std::stoull(hi, nullptr, 16));
      } else if (!key.empty()) {
        std::string rest;
        std::getline(ls, rest);
        if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        r.values[key] = rest;
      }
    }
    return r;
  }
};

namespace child {

inline std::atomic<int> g_started{0};
inline int g_block_pipe[2] = {-1, -1};
inline pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
inline pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
inline int g_report_fd = -1;

inline void report(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void report(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vdprintf(g_report_fd, fmt, ap);
  va_end(ap);
}

inline void report_stack() {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  pthread_mutex_lock(&g_mu);
  report("stack %lx %lx\n", reinterpret_cast<unsigned long>(addr),
         reinterpret_cast<unsigned long>(addr) + size);
  report("tid_%d %lx\n", g_started.load() + 1, static_cast<unsigned long>(syscall(SYS_gettid)));
  pthread_mutex_unlock(&g_mu);
}

// Three threads, each blocked in a different system call: read, nanosleep, futex.
inline void* in_read(void*) {
  report_stack();
  g_started++;
  char c;
  while (read(g_block_pipe[0], &c, 1) != 0) {
  }
  return nullptr;
}
inline void* in_sleep(void*) {
  report_stack();
  g_started++;
  for (;;) {
    timespec ts{1000, 0};
    nanosleep(&ts, nullptr);
  }
  return nullptr;
}
inline void* in_futex(void*) {
  report_stack();
  g_started++;
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_cv, &g_mu);
  return nullptr;
}

inline void start_threads() {
  if (pipe(g_block_pipe) != 0) _exit(3);
  pthread_t t;
  void* (*fns[3])(void*) = {in_read, in_sleep, in_futex};
  for (auto fn : fns) {
    int before = g_started.load();
    if (pthread_create(&t, nullptr, fn, nullptr) != 0) _exit(3);
    while (g_started.load() == before) sched_yield();
  }
  // Give them a moment to enter their system calls (not needed for correctness).
  usleep(50 * 1000);
}

inline int report_object(dl_phdr_info* info, size_t, void*) {
  report("obj %lx %s\n", static_cast<unsigned long>(info->dlpi_addr),
         info->dlpi_name != nullptr ? info->dlpi_name : "");
  return 0;
}

inline void report_bytes(const char* key, const void* addr, size_t n) {
  report("%s_addr %lx\n%s ", key, reinterpret_cast<unsigned long>(addr), key);
  for (size_t i = 0; i < n; ++i) report("%02x", static_cast<const unsigned char*>(addr)[i]);
  report("\n");
}

}  // namespace child

// Writes `kStackMarker` into a stack slot, reports where, then stores to kFaultAddress.
extern "C" __attribute__((noinline)) inline void ehbt_core_test_crash_fn(int fd) {
  volatile uint64_t marker = kStackMarker;
  dprintf(fd, "marker_addr %lx\n", reinterpret_cast<unsigned long>(&marker));
  close(fd);
  *reinterpret_cast<volatile int*>(kFaultAddress) = 1;
  marker = 0;  // keeps the slot live past the store
}

// The child's body for EHBT_CORE_CHILD=crash: report, then die of SIGSEGV.
[[noreturn]] inline void crash_child_main(const char* report_path) {
  rlimit rl{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_CORE, &rl);
  prctl(PR_SET_DUMPABLE, 1);
  child::g_report_fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (child::g_report_fd < 0) _exit(3);
  child::report("tid_0 %lx\n", static_cast<unsigned long>(syscall(SYS_gettid)));
  child::report_stack();
  child::start_threads();
  dl_iterate_phdr(child::report_object, nullptr);
  child::report("crash_fn %lx\n", reinterpret_cast<unsigned long>(&ehbt_core_test_crash_fn));
  child::report("fault %lx\n", static_cast<unsigned long>(kFaultAddress));
  // Text bytes from the executable and from libc: a core does not dump them, so reading them
  // back proves the memory falls back to the files.
  child::report_bytes("exe_text", reinterpret_cast<const void*>(&ehbt_core_test_crash_fn), 16);
  void* libc_fn = dlsym(RTLD_DEFAULT, "getpid");
  Dl_info di{};
  if (libc_fn != nullptr && dladdr(libc_fn, &di) != 0) {
    child::report("libc_fn_object %s\n", di.dli_fname);
    child::report_bytes("libc_text", libc_fn, 16);
  }
  child::report("done 1\n");
  ehbt_core_test_crash_fn(child::g_report_fd);
  _exit(4);  // not reached
}

// The child's body for EHBT_CORE_CHILD=live: three threads, report, wait to be told to go,
// write "done" and exit 0.
[[noreturn]] inline void live_child_main(const char* report_path, int go_fd, int done_fd) {
  child::g_report_fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (child::g_report_fd < 0) _exit(3);
  child::report("tid_0 %lx\n", static_cast<unsigned long>(syscall(SYS_gettid)));
  child::report_stack();
  child::start_threads();
  child::report("done 1\n");
  close(child::g_report_fd);
  if (write(done_fd, "R", 1) != 1) _exit(5);  // ready
  char c = 0;
  ssize_t n;
  do {
    n = read(go_fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || c != 'G') _exit(6);
  if (write(done_fd, "D", 1) != 1) _exit(7);
  _exit(0);
}

// Call from a static initializer in each test file that spawns children.
inline void run_child_if_requested() {
  const char* mode = std::getenv("EHBT_CORE_CHILD");
  if (mode == nullptr) return;
  const char* report = std::getenv("EHBT_CHILD_REPORT");
  if (report == nullptr) _exit(2);
  if (std::strcmp(mode, "crash") == 0) crash_child_main(report);
  if (std::strcmp(mode, "live") == 0) {
    const char* go = std::getenv("EHBT_CHILD_GO_FD");
    const char* done = std::getenv("EHBT_CHILD_DONE_FD");
    if (go == nullptr || done == nullptr) _exit(2);
    live_child_main(report, std::atoi(go), std::atoi(done));
  }
  _exit(2);
}

inline std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

struct NativeCore {
  std::string core;    // path of the core file
  std::string exe;     // the crashed executable
  ChildReport report;  // what the child said before dying
  std::string error;   // why no core was made
  bool via_gdb = false;
};

// Crashes a child in `dir` and returns its core. Uses the kernel's core dump when the
// core_pattern writes a file into the cwd, else gdb's gcore.
inline NativeCore make_native_core(const TempDir& dir) {
  NativeCore out;
  out.exe = self_exe();
  std::string report_path = dir.file("report.txt");
  std::string pattern = read_file("/proc/sys/kernel/core_pattern");
  bool use_gdb = (!pattern.empty() && pattern[0] == '|') || std::getenv("EHBT_TEST_FORCE_GDB");
  if (!use_gdb) {
    pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir.path().c_str()) != 0) _exit(2);
      setenv("EHBT_CORE_CHILD", "crash", 1);
      // Under AddressSanitizer, let the fault kill the child (and dump) as it would natively.
      setenv("ASAN_OPTIONS", "handle_segv=0:disable_coredump=0", 1);
      setenv("EHBT_CHILD_REPORT", report_path.c_str(), 1);
      execl(out.exe.c_str(), out.exe.c_str(), static_cast<char*>(nullptr));
      _exit(2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
      out.error = "child did not die of SIGSEGV (status " + std::to_string(status) + ")";
      return out;
    }
    auto cores = files_with_prefix(dir.path(), "core");
    if (!cores.empty()) out.core = cores.front();
  }
  if (out.core.empty()) {
    // Fallback: run the child under gdb and let gdb write the core at the fault.
    std::string core = dir.file("gdb.core");
    std::string cmd = "cd '" + dir.path() + "' && ASAN_OPTIONS=handle_segv=0 " +
                      "EHBT_CORE_CHILD=crash EHBT_CHILD_REPORT='" + report_path +
                      "' gdb -nx -batch -ex run -ex 'gcore " + core + "' -ex kill --args '" +
                      out.exe + "'";
    run(cmd);
    if (access(core.c_str(), R_OK) == 0) {
      out.core = core;
      out.via_gdb = true;
    }
  }
  if (out.core.empty()) {
    out.error = "no core: neither the kernel (core_pattern '" + pattern + "') nor gdb made one";
    return out;
  }
  out.report = ChildReport::parse(read_file(report_path));
  if (out.report.values.count("done") == 0) out.error = "child report incomplete";
  return out;
}

// A test suite whose tests share one native crash (making a core takes about a second): the
// core is made once before the suite and its directory removed after it. Base is the gtest
// fixture type (::testing::Test, or ::testing::TestWithParam<T> for parameterised suites).
template <class Base = ::testing::Test>
class SharedNativeCoreTest : public Base {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    core_ = new NativeCore(make_native_core(*dir_));
  }
  static void TearDownTestSuite() {
    delete core_;
    delete dir_;
    core_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(core_->error.empty()) << core_->error;
    ASSERT_FALSE(core_->core.empty());
  }

  static inline TempDir* dir_ = nullptr;
  static inline NativeCore* core_ = nullptr;
};

// ---- qemu-user cores -------------------------------------------------------------------------

struct QemuCore {
  std::string core;
  std::string exe;
  std::string error;
};

// The crashing guest program: a function that stores to a bad address, called from main.
inline constexpr const char* kGuestSource = R"(
#include <stdio.h>
__attribute__((noinline)) void guest_crash_here(volatile int *p) { *p = 42; }
__attribute__((noinline)) void guest_caller(void) { guest_crash_here((volatile int *)16); }
int main(void) { puts("guest"); guest_caller(); return 0; }
)";

// Compiles kGuestSource with `cc` (+ flags) in `dir` and runs it under `qemu` (+ qemu args)
// with cores enabled. qemu writes qemu_<prog>_<date>_<pid>.core itself.
inline QemuCore make_qemu_core(const TempDir& dir, const std::string& cc, const std::string& flags,
                               const std::string& qemu, const std::string& qemu_args,
                               const std::string& name) {
  QemuCore out;
  std::string src = dir.file(name + ".c");
  {
    std::ofstream f(src);
    f << kGuestSource;
  }
  out.exe = dir.file(name);
  CommandResult c = run(cc + " -O1 -g " + flags + " '" + src + "' -o '" + out.exe + "'");
  if (c.status != 0) {
    out.error = "compile failed: " + c.output;
    return out;
  }
  // qemu re-raises the signal on itself after writing the guest core; a directory named
  // "core" keeps the kernel from also writing a (large) host core of qemu here.
  mkdir(dir.file("core").c_str(), 0755);
  run("cd '" + dir.path() + "' && ulimit -c unlimited && " + qemu + " " + qemu_args + " '" +
      out.exe + "'");
  auto cores = files_with_prefix(dir.path(), "qemu_" + name + "_");
  if (cores.empty()) {
    out.error = "qemu wrote no core";
    return out;
  }
  out.core = cores.front();
  return out;
}

}  // namespace core_test
