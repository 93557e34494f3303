// SPDX-License-Identifier: Apache-2.0
// Targets: an ELF core file or a live process, seen the same way by the CLI and the front
// ends: threads with registers, the signal, memory, and the modules with their files.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ehbt/arch.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"

namespace ehbt {

struct ThreadState {
  int64_t tid = 0;
  RegisterSet regs;
  int signal = 0;  // pr_cursig for cores; 0 when the thread was not signalled
  std::string name;
};

// The process that sent a signal (siginfo's si_pid and si_uid), as the kernel recorded it:
// the pid is in the sender's pid namespace as seen from the receiver's.
struct SignalSender {
  int32_t pid = 0;
  uint32_t uid = 0;
  bool operator==(const SignalSender&) const = default;
};

struct SignalInfo {
  int number = 0;
  // si_code from NT_SIGINFO (or from PRSTATUS's pr_info when it describes the same signal);
  // nothing when the core does not say: an unknown code is unknown, not SI_USER (0).
  std::optional<int> code;
  // The fault address: only for a fault the kernel raised (SIGSEGV/SIGBUS/SIGILL/SIGFPE/
  // SIGTRAP with a positive si_code; SI_KERNEL only when the kernel put a non-zero address
  // there). Never for a signal a process sent: that word of siginfo is the sender's pid.
  std::optional<uint64_t> address;
  // Who sent it, for a signal a process sent (si_code <= 0: SI_USER, SI_TKILL, SI_QUEUE, ...,
  // but not SI_TIMER or SI_SIGIO, whose siginfo holds no sender).
  std::optional<SignalSender> sender;
};

std::string signal_name(int number);  // "SIGSEGV"; "SIG<n>" when unknown
// Whether the kernel's siginfo for `number` holds a fault address (si_addr of the _sigfault
// member): SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV. For others the union holds something else.
bool signal_has_fault_address(int number);

// Which member of siginfo's union a signal's si_code says holds (<asm-generic/siginfo.h>).
// A fault address: SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP with a positive code the kernel set
// for the fault; SI_KERNEL only with a non-zero `address` (force_sig() leaves si_pid = si_uid =
// 0 there: no address). Nothing is known of an unknown code.
bool signal_carries_address(int number, std::optional<int> code, uint64_t address);
// A sender (si_pid, si_uid): a signal a process sent, si_code <= 0 (SI_USER, SI_TKILL,
// SI_QUEUE, SI_MESGQ, ...) but SI_TIMER and SI_SIGIO, whose union holds timer or poll data.
bool signal_carries_sender(std::optional<int> code);

// Something the target could not tell or the engine could not find, said once. `kind` is one
// of the kWarning* names below; `path` is the file concerned ("" when none); `option` the
// command-line option that would help ("--exe", "--sysroot", "--debuginfod", or "").
struct Warning {
  std::string kind;
  std::string message;
  std::string path;
  std::string option;

  // The message with the helping option: "libc.so.6 ... not found (use --sysroot DIR)".
  std::string line() const;
  bool operator==(const Warning&) const = default;
};

// The fixed set of warning kinds (docs/formats.md lists them for users).
inline constexpr const char* kWarningMissingFile = "missing_file";        // named, not found
inline constexpr const char* kWarningMismatchedFile = "mismatched_file";  // found, another build
inline constexpr const char* kWarningUnreadableFile = "unreadable_file";  // found, cannot be read
inline constexpr const char* kWarningExecutableMismatch = "executable_mismatch";  // --exe is not it
inline constexpr const char* kWarningTruncatedCore = "truncated_core";  // segments/notes cut off
inline constexpr const char* kWarningNoSignalInfo = "no_signal_info";   // no NT_SIGINFO
inline constexpr const char* kWarningDebuginfodFailed = "debuginfod_failed";
// A module's DWARF (lines, inlined calls) is malformed or too large: its frames get no source
// location. Said once per module.
inline constexpr const char* kWarningBadDebugInfo = "bad_debug_info";

// Opened images keyed by file identity (device, inode, size, modification time), shared across
// targets so that a batch of cores from one build parses each library once. Files that are
// not ELF at all are remembered too, and not opened again.
//
// Bounded, for processes that live for weeks (ehbt-triage watch): a least-recently-used cache
// of at most `max_stored_images` images and `max_stored_image_bytes` bytes of their files
// (the caps of the Limits given at construction; 0: no cap). Past a cap the image opened
// longest ago goes first; the store only lets go of its reference, so a target that still
// uses the image keeps it, and a later open() parses the file afresh. The most recently
// opened image always stays, even alone past the byte cap. Files known not to be ELF are
// remembered for at most `max_stored_images` files too.
class ImageStore {
 public:
  explicit ImageStore(const Limits& limits = {})
      : max_images_(limits.max_stored_images), max_bytes_(limits.max_stored_image_bytes) {}
  std::shared_ptr<const Image> open(const std::string& path, const Limits& limits);
  std::size_t size() const;
  uint64_t bytes() const;  // file bytes of the images held
  std::size_t max_images() const { return max_images_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  struct Held {
    std::string key;
    std::shared_ptr<const Image> image;
    uint64_t bytes = 0;
  };
  void evict_locked();  // drops least recently opened entries past the caps; mu_ held

  const std::size_t max_images_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Held> recency_;  // most recently opened first
  std::unordered_map<std::string, std::list<Held>::iterator> images_;
  uint64_t bytes_ = 0;
  // Files that did not open as an image (same identity key), oldest first, bounded alike.
  std::list<std::string> unusable_order_;
  std::set<std::string> unusable_;
};

struct TargetOptions {
  std::vector<std::string> sysroots;  // looked up first, in order
  std::string exe;                    // overrides the main executable's file
  // Separate debug files: each directory is searched like GDB's debug-file-directory
  // (DIR/.build-id/xx/rest.debug, DIR/<module dir>/<debuglink>), before usr/lib/debug
  // inside each sysroot and on the host.
  std::vector<std::string> debug_dirs;
  // debuginfod: a module whose file is missing or whose build-id differs is fetched by
  // build-id (the executable), and so is a debug file no directory holds (the debuginfo).
  // On with `debuginfod`, or when DEBUGINFOD_URLS names a server. Each fetch gives up after
  // debuginfod_timeout seconds; progress of long downloads goes to stderr when asked.
  bool debuginfod = false;
  double debuginfod_timeout = 30;
  bool debuginfod_progress = false;
  Limits limits;
  ImageStore* store = nullptr;  // optional shared cache
  // Names for JIT code (`START SIZE NAME` lines, as /tmp/perf-PID.map). Empty: none for a
  // core; /tmp/perf-PID.map, when it exists, for a live process.
  std::string perf_map;
  // Live processes: stop one thread at a time (stop_thread/resume_thread), as eu-stack does,
  // instead of the whole process at once: each thread pauses only for its own walk, but the
  // threads are not seen at one instant.
  bool one_thread_at_a_time = false;
};

class Target {
 public:
  virtual ~Target() = default;
  Arch arch() const { return arch_; }
  const std::vector<ThreadState>& threads() const { return threads_; }
  // Index into threads() of the thread that took the signal (0 when none did).
  std::size_t crashing_thread() const { return crashing_; }
  // The signal that killed the process; nothing for a live process, a core that records no
  // signal, or a snapshot (then no thread crashed).
  const std::optional<SignalInfo>& signal() const { return signal_; }
  // A core written while the process ran on (gcore, other dumpers): the signal its threads
  // were stopped with is one the kernel never dumps a core for (SIGSTOP), so nothing crashed.
  // That stop signal, kept for the report's header; signal() is then nothing.
  const std::optional<SignalInfo>& snapshot_signal() const { return snapshot_signal_; }
  const std::string& executable() const { return executable_; }
  // What the target was read from: "elf_core", "minidump"; "" for a live process.
  const std::string& input_format() const { return input_format_; }
  const ModuleSet& modules() const { return modules_; }
  const std::vector<std::pair<uint64_t, uint64_t>>& auxv() const { return auxv_; }
  // What could not be known: missing, mismatched or unreadable files, a truncated core,
  // absent signal details, failed fetches. Each once, in the order found. Debug files are
  // looked up when a frame first needs one: a failed fetch of one is added then.
  const std::vector<Warning>& warnings() const { return warnings_; }
  virtual Memory& memory() = 0;

  // Live processes. Every thread is stopped from attach_process() until release(), unless
  // TargetOptions::one_thread_at_a_time: then none is, and stop_thread(i) stops thread i
  // and reads its registers into threads()[i] (false: it could not be stopped, e.g. it
  // exited), resume_thread(i) lets it run again. After release() the process runs and
  // memory() reads see it changing: call it once the walks are done, before the slower
  // work of naming and printing frames. For cores all three do nothing.
  virtual bool stop_thread(std::size_t /*index*/) { return true; }
  virtual void resume_thread(std::size_t /*index*/) {}
  virtual void release() {}
  // Live processes stopped all at once: true when every thread's stack (from its stack
  // pointer to the end of its mapping) was copied while the process was stopped. The walks
  // may then follow release() (stop_thread() still says yes): they read the stacks as they
  // were at the stop, and only other memory from the running process. Cores: false.
  virtual bool stacks_copied() const { return false; }
  // How long the process was stopped, in microseconds: the whole-process window, or in
  // one-thread-at-a-time mode the longest any one thread was stopped. Nothing for cores,
  // and before release().
  virtual std::optional<uint64_t> stopped_us() const { return std::nullopt; }

 protected:
  Arch arch_ = Arch::X86_64;
  std::vector<ThreadState> threads_;
  std::size_t crashing_ = 0;
  std::optional<SignalInfo> signal_;
  std::optional<SignalInfo> snapshot_signal_;
  std::string executable_;
  std::string input_format_;
  ModuleSet modules_;
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;
  std::vector<Warning> warnings_;
  // The lookups of the modules' separate debug files, deferred to their first use (made by
  // the module resolver; the images hold it weakly). Its warnings land in warnings_, so the
  // list grows while frames are walked and named.
  std::shared_ptr<DebugFileFinder> debug_files_;
};

// Opens an ELF core (mapped, not read whole) or a minidump (MDMP), plain or compressed, told
// by content. Errors are one line saying why the input is unusable.
Expected<std::unique_ptr<Target>, std::string> open_core(const std::string& path,
                                                         const TargetOptions& options = {});

// Attaches to every thread of a live process (PTRACE_SEIZE + interrupt); the returned target
// detaches when destroyed, and also on SIGINT/SIGTERM while attached.
Expected<std::unique_ptr<Target>, std::string> attach_process(int pid,
                                                              const TargetOptions& options = {});

// The JIT code of a live process on this machine that the caller does not attach to (a
// debugger holds it): the executable mappings no file backs in /proc/PID/maps and the perf
// map naming them (`perf_map`; empty: /tmp/perf-PID.map when it exists), added to `modules`
// by the rule attach_process uses for its target's. Returns the warnings a target would
// record (a `perf_map` named but unreadable). Maps it cannot read add nothing.
std::vector<Warning> add_process_jit_code(ModuleSet& modules, int pid,
                                          const std::string& perf_map = "",
                                          const Limits& limits = {});

}  // namespace ehbt
