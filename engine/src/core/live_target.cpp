// SPDX-License-Identifier: Apache-2.0
// attach_process: a live process as a Target. Every thread is seized and interrupted (so the
// process notices nothing but a pause), read, and detached by release() or when the target is
// destroyed; or, one thread at a time, stopped and resumed around its own walk. Everything
// that does not need the threads stopped (maps, module files, thread names) is done before
// stopping any, so the process is stopped only for reading registers and walking stacks.
// ptrace requests must come from the thread that attached: use one target from one thread.
#include <elf.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "core/attach_diagnosis.hpp"
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

using Clock = std::chrono::steady_clock;

uint64_t micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

class LiveTarget final : public Target {
 public:
  LiveTarget(int pid, const Limits& limits) : pid_(pid), memory_(pid, limits.max_cached_pages) {}
  ~LiveTarget() override { release(); }
  Memory& memory() override { return memory_; }

  bool stop_thread(std::size_t index) override;
  void resume_thread(std::size_t index) override;
  void release() override;
  bool stacks_copied() const override { return stacks_copied_; }
  std::optional<uint64_t> stopped_us() const override { return stopped_us_; }

  static Expected<std::unique_ptr<Target>, std::string> attach(int pid,
                                                               const TargetOptions& options);

 private:
  Expected<void, std::string> seize_all();
  void wait_all();
  void read_threads();
  void copy_stacks(const Limits& limits);
  void name_threads();
  ThreadState read_thread(int tid) const;
  void find_modules(const TargetOptions& options);
  void detach_all();

  int pid_;
  core::ProcessMemory memory_;
  std::vector<Attached> attached_;
  std::map<int, std::string> names_;  // by tid, read before anything is stopped
  bool one_at_a_time_ = false;
  bool released_ = false;
  bool stacks_copied_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> mappings_;  // [start, end) from maps, ascending
  int stop_errno_ = 0;                                   // why the last stop_thread() failed
  Clock::time_point stop_start_{};
  std::optional<uint64_t> stopped_us_;
};

Expected<void, std::string> LiveTarget::seize_all() {
  std::set<int> tried;
  for (int pass = 0; pass < kAttachPasses; ++pass) {
    std::vector<int> tids = core::list_threads(pid_);
    if (pass == 0 && tids.empty()) return unexpected(core::attach_error(pid_, ESRCH));
    bool any_new = false;
    for (int tid : tids) {
      if (!tried.insert(tid).second) continue;
      any_new = true;
      if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        int err = errno;
        if (err == ESRCH) continue;  // exited meanwhile
        if (attached_.empty()) return unexpected(core::attach_error(pid_, err));
        continue;
      }
      core::guard_register(tid);
      if (attached_.empty()) stop_start_ = Clock::now();
      attached_.push_back(Attached{tid, 0});
      if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
        // Already gone; wait_all() reaps or drops it.
      }
    }
    if (!any_new) break;
  }
  if (attached_.empty()) return unexpected(core::attach_error(pid_, ESRCH));
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

ThreadState LiveTarget::read_thread(int tid) const {
  ThreadState ts;
  ts.tid = tid;
  ts.regs = RegisterSet(kNativeArch);
  std::byte buf[1024];
  iovec iov{buf, sizeof buf};
  if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) == 0) {
    auto regs = core::decode_gregset(kNativeArch, std::span<const std::byte>(buf, iov.iov_len),
                                     kHostBigEndian);
    if (regs) ts.regs = *regs;
  }
  auto name = names_.find(tid);
  if (name != names_.end()) ts.name = name->second;
  return ts;
}

void LiveTarget::read_threads() {
  for (const Attached& a : attached_) threads_.push_back(read_thread(a.tid));
}

// Thread names (/proc/PID/task/TID/comm) of the threads there are now, before stopping any.
void LiveTarget::name_threads() {
  for (int tid : core::list_threads(pid_)) {
    std::string comm = core::read_proc_file(
        "/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/comm", 64);
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    names_[tid] = std::move(comm);
  }
}

void LiveTarget::find_modules(const TargetOptions& options) {
  std::string proc = "/proc/" + std::to_string(pid_);
  auxv_ = core::read_proc_auxv(pid_);
  executable_ = core::strip_deleted(core::read_link(proc + "/exe"));
  const std::string maps_text = core::read_proc_file(proc + "/maps", kMaxMapsBytes);
  auto maps = core::parse_proc_maps(maps_text, kMaxMapsLines);
  for (const core::FileMapping& m : maps) mappings_.emplace_back(m.start, m.end);
  std::sort(mappings_.begin(), mappings_.end());
  std::vector<MemoryRegion> regions;
  regions.reserve(mappings_.size());
  for (const auto& [start, end] : mappings_) {
    if (regions.empty() || start >= regions.back().end) regions.push_back({start, end});
  }
  memory_.set_regions(std::move(regions));
  core::ModuleResolver resolver(memory_, kNativeArch, kHostBigEndian, options, kPageSize);
  resolver.set_warnings(&warnings_);
  debug_files_ = resolver.debug_files();
  resolver.set_named_by("the process");
  core::ModuleCollector collector(memory_, resolver, kHostBigEndian, options.limits, nullptr);
  collector.add_vdso(auxv_);
  std::string exe = collector.add_from_mappings(maps, auxv_);
  if (executable_.empty()) executable_ = exe;
  for (Module& m : collector.take()) modules_.add(std::move(m));
  core::add_live_jit_code(modules_, pid_, maps_text, options.perf_map, options.limits, warnings_);
}

// Every stopped thread's stack, from just below its stack pointer (the red zone) to the end of
// the mapping it is in, read into the page cache: one system call per thread instead of one
// per page the walk touches, and the walks need not keep the process stopped. Each thread
// may take an equal share of Limits::max_cached_pages; a stack longer than that, or one in
// no mapping listed before the stop, is read on demand and keeps the process stopped.
void LiveTarget::copy_stacks(const Limits& limits) {
  if (threads_.empty() || mappings_.empty()) return;
  const uint64_t share =
      std::max<uint64_t>(limits.max_cached_pages / threads_.size(), 1) * kPageSize;
  constexpr uint64_t kRedZone = 128;
  bool all = true;
  std::vector<std::pair<uint64_t, uint64_t>> stacks;
  for (const ThreadState& t : threads_) {
    const uint64_t sp = t.regs.sp();
    auto it = std::upper_bound(mappings_.begin(), mappings_.end(), std::make_pair(sp, UINT64_MAX));
    if (it == mappings_.begin() || sp >= std::prev(it)->second) {
      all = false;
      continue;
    }
    const auto [start, end] = *std::prev(it);
    const uint64_t begin = std::max(start, sp >= kRedZone ? sp - kRedZone : 0);
    if (end - begin > share) all = false;
    stacks.emplace_back(begin, std::min(end, begin + share));
  }
  // All stacks in one system call (per 1,024 pages), not one per thread.
  if (!memory_.prefetch_all(stacks)) all = false;
  stacks_copied_ = all;
}

void LiveTarget::detach_all() {
  // The process runs again: cached pages go stale. Stacks copied while every thread was
  // stopped stay, as the snapshot they are (ProcessMemory::keep_cached).
  if (!one_at_a_time_ && stacks_copied_) {
    memory_.keep_cached();
  } else {
    memory_.set_caching(false);
  }
  for (const Attached& a : attached_) {
    ptrace(PTRACE_DETACH, a.tid, nullptr,
           reinterpret_cast<void*>(static_cast<uintptr_t>(a.pending_signal)));
    core::guard_unregister(a.tid);
  }
  attached_.clear();
}

void LiveTarget::release() {
  if (released_) return;
  released_ = true;
  const bool was_stopped = !attached_.empty();
  detach_all();
  if (!one_at_a_time_ && was_stopped) stopped_us_ = micros(Clock::now() - stop_start_);
}

bool LiveTarget::stop_thread(std::size_t index) {
  // Stopped all at once: each thread's walk may follow release() when the stacks were copied.
  if (!one_at_a_time_) return !released_ || stacks_copied_;
  if (index >= threads_.size() || released_) return false;
  resume_thread(index);  // at most one thread stopped at any time
  const int tid = static_cast<int>(threads_[index].tid);
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    stop_errno_ = errno;
    return false;
  }
  core::guard_register(tid);
  stop_start_ = Clock::now();
  attached_.push_back(Attached{tid, 0});
  ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
  wait_all();
  if (attached_.empty()) {
    stop_errno_ = ESRCH;  // exited meanwhile
    return false;
  }
  ThreadState ts = read_thread(tid);
  threads_[index].regs = std::move(ts.regs);
  memory_.set_caching(true);
  return true;
}

void LiveTarget::resume_thread(std::size_t /*index*/) {
  if (!one_at_a_time_ || attached_.empty()) return;
  detach_all();
  const uint64_t us = micros(Clock::now() - stop_start_);
  stopped_us_ = std::max(stopped_us_.value_or(0), us);
  // Let whatever waits for this CPU run before the next thread is stopped. ehbt itself keeps
  // the CPU between threads (a walk, then the next seize), and the kernel's scheduler (EEVDF)
  // lets it finish its time slice first: a target thread woken meanwhile (a timer, a reply)
  // waited up to ~2 ms although no thread was stopped for more than 0.5 ms. With the yield,
  // bench/live_stop_window.py's heartbeat gap went from 1.9-2.1 ms to 0.56-0.71 ms (median of
  // 21 runs, 65 threads, 2 vCPUs), eu-stack's own being 0.7-1.0 ms.
  sched_yield();
}

Expected<std::unique_ptr<Target>, std::string> LiveTarget::attach(int pid,
                                                                  const TargetOptions& options) {
#ifdef EHBT_NO_LIVE
  (void)options;
  return unexpected("cannot attach to " + std::to_string(pid) +
                    ": live processes are not supported on this architecture");
#else
  if (pid <= 0) return unexpected(core::attach_error(pid, ESRCH));
  auto t = std::make_unique<LiveTarget>(pid, options.limits);
  t->arch_ = kNativeArch;
  t->one_at_a_time_ = options.one_thread_at_a_time;
  // Maps, module files and names first: none of it needs the threads stopped. A module
  // loaded between this and the stop is missed (its frames show no module), as it would be
  // by a tool that reads the maps after stopping but before the module's mapping.
  t->name_threads();
  if (t->names_.empty()) return unexpected(core::attach_error(pid, ESRCH));
  t->find_modules(options);
  if (t->one_at_a_time_) {
    // Nothing stopped yet: stop_thread() reads each thread's registers when its turn comes.
    for (const auto& [tid, name] : t->names_) {
      ThreadState ts;
      ts.tid = tid;
      ts.name = name;
      ts.regs = RegisterSet(kNativeArch);
      t->threads_.push_back(std::move(ts));
    }
    // The first thread is stopped now, so that a process we may not trace fails here as it
    // does in the other mode; the walk of it follows at once.
    if (!t->stop_thread(0)) return unexpected(core::attach_error(pid, t->stop_errno_));
    return std::unique_ptr<Target>(std::move(t));
  }
  // The buffers the stacks will be copied into, faulted in before anything stops: a page or
  // two per thread from its stack pointer to the end of its stack mapping is typical (64
  // threads parked 30 calls deep: 1-2), plus the main thread's environment and spares.
  t->memory_.reserve_pages(2 * t->names_.size() + 16);
  if (auto ok = t->seize_all(); !ok) return unexpected(ok.error());  // t detaches what it has
  t->wait_all();
  if (t->attached_.empty()) return unexpected(core::attach_error(pid, ESRCH));
  t->read_threads();
  t->memory_.set_caching(true);
  t->copy_stacks(options.limits);
  return std::unique_ptr<Target>(std::move(t));
#endif
}

}  // namespace

Expected<std::unique_ptr<Target>, std::string> attach_process(int pid,
                                                              const TargetOptions& options) {
  return LiveTarget::attach(pid, options);
}

std::vector<Warning> add_process_jit_code(ModuleSet& modules, int pid, const std::string& perf_map,
                                          const Limits& limits) {
  std::vector<Warning> warnings;
  const std::string maps_text =
      core::read_proc_file("/proc/" + std::to_string(pid) + "/maps", kMaxMapsBytes);
  core::add_live_jit_code(modules, pid, maps_text, perf_map, limits, warnings);
  return warnings;
}

}  // namespace ehbt
