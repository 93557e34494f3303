// SPDX-License-Identifier: Apache-2.0
// attach_process: a live process as a Target. Every thread is seized and interrupted (so the
// process notices nothing but a pause), read, and detached when the target is destroyed.
// ptrace requests must come from the thread that attached: use one target from one thread.
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "core/attach_guard.hpp"
#include "core/jit_code.hpp"
#include "core/module_discovery.hpp"
#include "core/module_resolver.hpp"
#include "core/proc_files.hpp"
#include "core/process_memory.hpp"
#include "core/prstatus.hpp"
#include "ehbt/core.hpp"

namespace ehbt {
namespace {

// Attach passes: threads created while we attach are picked up by listing again.
constexpr int kAttachPasses = 4;
constexpr std::size_t kMaxMapsBytes = 64u << 20;
constexpr std::size_t kMaxMapsLines = 1u << 20;
constexpr uint64_t kPageSize = 4096;

#if defined(__x86_64__)
constexpr Arch kNativeArch = Arch::X86_64;
#elif defined(__aarch64__)
constexpr Arch kNativeArch = Arch::AArch64;
#elif defined(__s390x__)
constexpr Arch kNativeArch = Arch::S390x;
#else
#define EHBT_NO_LIVE 1
constexpr Arch kNativeArch = Arch::X86_64;
#endif
constexpr bool kHostBigEndian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

struct Attached {
  int tid = 0;
  int pending_signal = 0;  // a signal that stopped it instead of our interrupt: re-deliver
};

class LiveTarget final : public Target {
 public:
  explicit LiveTarget(int pid) : pid_(pid), memory_(pid) {}
  ~LiveTarget() override { detach_all(); }
  Memory& memory() override { return memory_; }

  static Expected<std::unique_ptr<Target>, std::string> attach(int pid,
                                                               const TargetOptions& options);

 private:
  Expected<void, std::string> seize_all();
  void wait_all();
  void read_threads();
  void find_modules(const TargetOptions& options);
  void detach_all();

  int pid_;
  core::ProcessMemory memory_;
  std::vector<Attached> attached_;
};

std::string attach_error(int pid, int err) {
  std::string msg = "cannot attach to " + std::to_string(pid) + ": " + std::strerror(err);
  if (err == EPERM) msg += " (ptrace_scope? CAP_SYS_PTRACE?)";
  return msg;
}

Expected<void, std::string> LiveTarget::seize_all() {
  std::set<int> tried;
  for (int pass = 0; pass < kAttachPasses; ++pass) {
    std::vector<int> tids = core::list_threads(pid_);
    if (pass == 0 && tids.empty()) return unexpected(attach_error(pid_, ESRCH));
    bool any_new = false;
    for (int tid : tids) {
      if (!tried.insert(tid).second) continue;
      any_new = true;
      if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        int err = errno;
        if (err == ESRCH) continue;  // exited meanwhile
        if (attached_.empty()) return unexpected(attach_error(pid_, err));
        continue;
      }
      core::guard_register(tid);
      attached_.push_back(Attached{tid, 0});
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
        // Already gone; wait_all() reaps or drops it.
      }
    }
    if (!any_new) break;
  }
  if (attached_.empty()) return unexpected(attach_error(pid_, ESRCH));
  return {};
}

void LiveTarget::wait_all() {
  std::vector<Attached> stopped;
  for (Attached a : attached_) {
    for (;;) {
      int status = 0;
      pid_t r = waitpid(a.tid, &status, __WALL);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
        core::guard_unregister(a.tid);  // exited during the attach: skip it
        break;
      }
      if (WIFSTOPPED(status)) {
        int event = status >> 16;
        int sig = WSTOPSIG(status);
        // PTRACE_EVENT_STOP is our interrupt (or a group stop); anything else is a signal on
        // its way to the thread, which must reach it after we detach.
        if (event != PTRACE_EVENT_STOP && sig != SIGTRAP) a.pending_signal = sig;
        stopped.push_back(a);
        break;
      }
    }
  }
  attached_ = std::move(stopped);
}

void LiveTarget::read_threads() {
  for (const Attached& a : attached_) {
    ThreadState ts;
    ts.tid = a.tid;
    ts.regs = RegisterSet(kNativeArch);
    std::byte buf[1024];
    iovec iov{buf, sizeof buf};
    if (ptrace(PTRACE_GETREGSET, a.tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) == 0) {
      auto regs = core::decode_gregset(kNativeArch, std::span<const std::byte>(buf, iov.iov_len),
                                       kHostBigEndian);
      if (regs) ts.regs = *regs;
    }
    std::string comm = core::read_proc_file(
        "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(a.tid) + "/comm", 64);
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    ts.name = comm;
    threads_.push_back(std::move(ts));
  }
}

void LiveTarget::find_modules(const TargetOptions& options) {
  std::string proc = "/proc/" + std::to_string(pid_);
  auxv_ = core::read_proc_auxv(pid_);
  executable_ = core::strip_deleted(core::read_link(proc + "/exe"));
  const std::string maps_text = core::read_proc_file(proc + "/maps", kMaxMapsBytes);
  auto maps = core::parse_proc_maps(maps_text, kMaxMapsLines);
  core::ModuleResolver resolver(memory_, kNativeArch, kHostBigEndian, options, kPageSize);
  resolver.set_warnings(&warnings_);
  resolver.set_named_by("the process");
  core::ModuleCollector collector(memory_, resolver, kHostBigEndian, options.limits, nullptr);
  collector.add_vdso(auxv_);
  std::string exe = collector.add_from_mappings(maps, auxv_);
  if (executable_.empty()) executable_ = exe;
  for (Module& m : collector.take()) modules_.add(std::move(m));
  // JITs write their perf map to /tmp/perf-PID.map (perf's convention, not a sysroot path).
  const bool named = !options.perf_map.empty();
  core::add_jit_code(modules_, core::anonymous_code_from_maps(maps_text, options.limits),
                     named ? options.perf_map : "/tmp/perf-" + std::to_string(pid_) + ".map", named,
                     options.limits, warnings_);
}

void LiveTarget::detach_all() {
  for (const Attached& a : attached_) {
    ptrace(PTRACE_DETACH, a.tid, nullptr,
           reinterpret_cast<void*>(static_cast<uintptr_t>(a.pending_signal)));
    core::guard_unregister(a.tid);
  }
  attached_.clear();
}

Expected<std::unique_ptr<Target>, std::string> LiveTarget::attach(int pid,
                                                                  const TargetOptions& options) {
#ifdef EHBT_NO_LIVE
  (void)options;
  return unexpected("cannot attach to " + std::to_string(pid) +
                    ": live processes are not supported on this architecture");
#else
  if (pid <= 0) return unexpected(attach_error(pid, ESRCH));
  auto t = std::make_unique<LiveTarget>(pid);
  t->arch_ = kNativeArch;
  if (auto ok = t->seize_all(); !ok) return unexpected(ok.error());  // t detaches what it has
  t->wait_all();
  if (t->attached_.empty()) return unexpected(attach_error(pid, ESRCH));
  t->read_threads();
  t->find_modules(options);
  return std::unique_ptr<Target>(std::move(t));
#endif
}

}  // namespace

Expected<std::unique_ptr<Target>, std::string> attach_process(int pid,
                                                              const TargetOptions& options) {
  return LiveTarget::attach(pid, options);
}

}  // namespace ehbt
