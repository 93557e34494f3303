// SPDX-License-Identifier: Apache-2.0
// `ehbt core CORE` and `ehbt pid PID`: unwind the threads of a core file or a live process and
// print them as GDB-like text or as the ehbt-backtrace/1 JSON document.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_command.hpp"
#include "cli_paths.hpp"
#include "ehbt/core.hpp"
#include "ehbt/report.hpp"

namespace ehbt::cli {
namespace {

using report::CollectOptions;
using report::RenderSink;

constexpr OptionSpec kOptions[] = {
    {"--sysroot", true, true},
    {"--debug-dir", true, true},
    {"--debuginfod", false, false},
    {"--debuginfod-timeout", true, false},
    {"--exe", true, false},
    {"--perf-map", true, false},
    {"--no-lines", false, false},
    {"--no-debug-cache", false, false},
    {"--json", false, false},
    {"--all-threads", false, false},
    {"--thread", true, false},
    {"--max-frames", true, false},
    {"--source", true, false},
    {"--help", false, false},
    {"-h", false, false},
    {"--sframe-from-eh-frame", false, false},
    {"--sframe-version", true, false},
    {"--one-thread-at-a-time", false, false},
};

constexpr std::string_view kOutputHelp = R"(options:
  --sysroot DIR      look up every file the target names inside DIR
                     first, as a chroot would (links and '..' never lead
                     out of DIR), then as named (may repeat)
  --debug-dir DIR    look for separate debug files in DIR first, like
                     GDB's debug-file-directory:
                     DIR/.build-id/xx/rest.debug by build-id, then
                     DIR/<module's directory>/<.gnu_debuglink name>; then
                     usr/lib/debug in each --sysroot and on the host (may
                     repeat)
  --debuginfod       fetch by build-id from the servers in
                     DEBUGINFOD_URLS (also on when that variable is set):
                     the executable of a module whose file is missing or
                     another build, the debuginfo no --debug-dir holds
                     (only for modules a frame needs it for);
                     cached as debuginfod's client caches
                     ($DEBUGINFOD_CACHE_PATH, else
                     ~/.cache/debuginfod_client)
  --debuginfod-timeout S
                     seconds all fetches for one target may take together
                     (default 30); past them, or once a server refuses
                     connections, nothing more is fetched and the trace
                     is printed with a warning
  --exe PATH         use PATH as the main executable
  --perf-map FILE    name JIT code from FILE, a perf map (`START SIZE
                     NAME` lines, hex without 0x, as node
                     --perf-basic-prof and the JVM's perf agents write to
                     /tmp/perf-PID.map); `ehbt pid` reads
                     /tmp/perf-PID.map by itself, `ehbt core` (without
                     --perf-map) the one inside a --sysroot, PID being
                     the core's process. Executable memory no file
                     backs is JIT code: stepped by the frame pointer,
                     shown with `[jit]` (JSON: "jit": true, "module":
                     null)
  --no-lines         no source lines: open no debug info for them (by
                     default a frame shows `at FILE:LINE` and the calls
                     inlined at its pc: in Go code from .gopclntab,
                     stripped binaries too; in C, C++ and Rust code from
                     the DWARF of the module's own file, else of its
                     separate debug file, found as --debug-dir says,
                     with its dwz file)
  --no-debug-cache   read compressed debug files as they are: no cached
                     copy (by default a debug file whose DWARF is
                     compressed, as Debian's -dbg and -dbgsym files are,
                     is read from an uncompressed copy made on first use,
                     keyed by build-id, in $EHBT_CACHE_DIR, else
                     $XDG_CACHE_HOME/ehbt, else ~/.cache/ehbt (debug/,
                     made mode 0700), up to 2 GiB, the least recently
                     used removed first), and no kept line answers
                     (lines/ there: what each debug file said for the
                     pcs earlier runs looked up); the same lines either
                     way, and a directory that cannot be used is
                     silently done without
  --json             print the ehbt-backtrace/1 JSON document instead of
                     text
  --all-threads      print every thread (default: the crashing thread,
                     else the first)
  --thread TID       print only thread TID (an unknown TID is an error,
                     exit 2)
  --max-frames N     stop each walk after N frames (default 2048)
  --source S         auto (default): per frame, .eh_frame / .debug_frame,
                     else the module's own .sframe row where one covers
                     the pc, else (a Go function, x86-64, arm64 or s390x)
                     Go's frame-size table in .gopclntab (frames tagged
                     go_pclntab), else frame pointers; a .sframe found
                     corrupt is dropped for that module; eh_frame: DWARF
                     CFI only; sframe: SFrame rows only (frames tagged
                     sframe; a sigreturn trampoline is still stepped by
                     its bytes; a pc without a row stops with
                     no_unwind_info, or bad_unwind_info for a corrupt
                     .sframe, saying why); frame_pointer: the
                     frame-pointer chain only
  --sframe-from-eh-frame
                     convert each module's .eh_frame to SFrame in memory
                     and use that in place of the module's own .sframe
                     (so --source sframe can be tried on any target; with
                     auto, the converted rows come first); functions the
                     version cannot express are left out, and a walk that
                     needs one stops saying why
  --sframe-version V the SFrame version the conversion writes: 3
                     (default) or 2

paths: a --sysroot or --debug-dir that is not a directory, an --exe that
is not a regular file, and a --perf-map that exists but is not a regular
file (a FIFO) are usage errors (exit 2). FIFOs, devices and other
special files are never opened, wherever their path comes from (the
operand, an option, a sysroot, the core's file list): CORE is then
refused (`not a regular file`, exit 2), a module's file is reported as
unreadable.

text output, one block per thread, in the style of GDB's `bt`:
  Thread 4242 (crashed: SIGSEGV, SEGV_MAPERR at 0x0):
  #0  0x000055d4c0a01234 in fx_level3 () from /opt/app/bin/server
  #1  0x000055d4c0a01300 in ?? () from /opt/app/bin/server
  #2  <signal handler called>
  #3  0x00007f4c63e29eec in ?? ()
  Backtrace stopped: no_module: <detail>
- With debug info (not with --no-lines) a frame shows `at FILE:LINE`
  instead of `from MODULE`, and each call inlined at its pc comes first
  as a frame of its own, as GDB numbers them:
  #4  0x000055d4c0a01400 in inner () at a.c:5
  #5  outer () at a.c:20
- `??`: no symbol covers the pc (never a neighbouring function's name);
  no `from`: no module covers the pc. Frame 0 shows the thread's pc,
  every other frame its return address; symbols of callers are looked up
  at pc - 1.
- Frames found without unwind tables end in `[frame_pointer]` or
  `[scan]`; frames in JIT code carry `[jit]`. `scan`: a return address
  found on the stack right after a call instruction (whose target, where
  direct, is the function scanned from), or inferred where the function
  provably only pushed it; used only where no table covers the pc and the
  frame-pointer chain fails.
- `Backtrace stopped: REASON[: DETAIL]` ends a walk that did not reach
  the outermost frame; REASON is one of max_frames, no_module,
  no_unwind_info, memory_fault, bad_unwind_info, unsupported,
  no_progress, bad_pc.
- A header comes first: Core (or Process), Executable (marked "not found"
  when its file is missing, "build-id differs, not used" when the file
  found is another build), Arch, Signal (without a code when the core has
  no NT_SIGINFO: an unknown code is not shown as SI_USER).
- What could not be known -- a missing, mismatched or unreadable file, a
  truncated core, absent signal details -- is said once on stderr before
  the trace, one line each: `warning: MESSAGE (use --sysroot DIR)` with
  the option that would help, if any. A walk that ends in a module whose
  file is missing stops with no_module saying so. A core whose notes are
  cut off is unusable (exit 2).

JSON output (--json): the ehbt-backtrace/1 document (docs/formats.md):
format, core (or pid, and stopped_us: microseconds the process was
stopped), arch, executable, signal, modules [{path, file, base, bias,
build_id, build_id_match}], warnings [{kind, message, path, option}],
threads [{tid, crashing, stop_reason, stop_detail, frames [{index, pc,
cfa, source, module, module_offset, symbol, symbol_offset, location
{file, line, column}, inlined [{function, location}], jit (JIT frames
only)}]}]. Addresses are lowercase hex strings with 0x;
module_offset = pc - bias; symbol_offset = pc - symbol start. null marks
what is unknown: no module, no symbol, no file found, no recorded
build-id, a build-id match that cannot be decided, a signal code without
NT_SIGINFO, a CFA the unwinder did not compute. Warning kinds:
missing_file, mismatched_file, executable_mismatch, unreadable_file,
truncated_core, no_signal_info, debuginfod_failed, bad_debug_info.

exit status:
  0  every printed thread reached its outermost frame (or --max-frames)
  1  some printed thread stopped early (see its stop reason)
  2  unusable input or usage error (one line on stderr)
)";

constexpr std::string_view kCoreHelp =
    "CORE is an ELF core file, plain or compressed (zstd, xz, lz4 frame or\n"
    "gzip, told by content: decompressed into a sparse temporary file in\n"
    "$TMPDIR, removed afterwards; a truncated or corrupt stream is an error\n"
    "saying how many bytes were recovered). The files it names are opened\n"
    "from --sysroot or as named; separate debug files (build-id directory,\n"
    "then .gnu_debuglink with its CRC checked) supply .debug_frame and\n"
    "symbols. A file whose build-id differs from the core's record is not\n"
    "used: it is reported with build_id_match false and a warning.\n"
    "CORE may also be a minidump (MDMP: Crashpad, Breakpad, LLDB's\n"
    "save-core), told by content and compressed too: its threads, signal\n"
    "and the memory it kept (stacks), its modules found by the build-ids\n"
    "it lists. --json says which: \"input_format\": \"elf_core\" or\n"
    "\"minidump\".\n\n";
constexpr std::string_view kPidHelp =
    "Attaches to every thread of process PID (ptrace), unwinds them, and\n"
    "detaches; the process then runs on as before. Maps and module files are\n"
    "read before anything is stopped; once all threads are stopped their\n"
    "registers and stacks are copied and the process runs again before the\n"
    "walks (a stack too long to copy is walked first); --json reports how\n"
    "long it was stopped (stopped_us).\n"
    "An attach that fails says why: no such process; a zombie (no memory or\n"
    "registers left); a kernel thread (no user-space stack); already traced\n"
    "by another tracer (its pid and name: a debugger or strace); else the\n"
    "system's reason (for a permission error: kernel.yama.ptrace_scope,\n"
    "CAP_SYS_PTRACE). Exit 2 in every case.\n"
    "  --one-thread-at-a-time\n"
    "                     stop one thread at a time, each only for its own\n"
    "                     walk (as eu-stack does): the shortest pause for\n"
    "                     any one thread, but the threads are not seen at\n"
    "                     one instant; stopped_us is then the longest any\n"
    "                     one thread was stopped\n\n";

// The options both subcommands share, checked; the usage error message otherwise.
struct OutputOptions {
  TargetOptions target;
  CollectOptions collect;
  bool json = false;
};

// The paths the options name, checked before anything is opened. A --perf-map that does not
// exist (yet) is only a warning, as a JIT may not have written it; one that exists and is not
// a regular file is a mistake.
Expected<void, std::string> check_paths(const ParsedArgs& args) {
  for (const char* option : {"--sysroot", "--debug-dir"}) {
    for (const std::string& dir : args.values(option)) {
      if (auto bad = check_option_path(option, dir, PathKind::Directory)) return unexpected(*bad);
    }
  }
  if (auto exe = args.value("--exe")) {
    if (auto bad = check_option_path("--exe", *exe, PathKind::RegularFile)) {
      return unexpected(*bad);
    }
  }
  if (auto map = args.value("--perf-map")) {
    auto bad = check_option_path("--perf-map", *map, PathKind::RegularFile);
    if (bad && path_exists(*map)) return unexpected(*bad);
  }
  return {};
}

Expected<OutputOptions, std::string> output_options(const ParsedArgs& args) {
  if (auto ok = check_paths(args); !ok) return unexpected(ok.error());
  OutputOptions o;
  o.target.sysroots = args.values("--sysroot");
  o.target.debug_dirs = args.values("--debug-dir");
  o.target.debuginfod = args.has("--debuginfod");
  o.target.debuginfod_progress = !args.has("--json");
  if (auto t = args.value("--debuginfod-timeout")) {
    auto n = parse_decimal(*t);
    if (!n || *n == 0 || *n > 86400) return unexpected("bad timeout '" + *t + "'");
    o.target.debuginfod_timeout = static_cast<double>(*n);
  }
  o.target.exe = args.value("--exe").value_or("");
  o.target.perf_map = args.value("--perf-map").value_or("");
  o.collect.lines = !args.has("--no-lines");
  if (args.has("--no-debug-cache")) o.collect.limits.max_debug_cache_bytes = 0;
  o.target.one_thread_at_a_time = args.has("--one-thread-at-a-time");
  o.json = args.has("--json");
  o.collect.all_threads = args.has("--all-threads");
  if (auto tid = args.value("--thread")) {
    if (o.collect.all_threads) {
      return unexpected(std::string("--all-threads and --thread exclude each other"));
    }
    auto n = parse_decimal(*tid);
    if (!n || *n > static_cast<uint64_t>(INT64_MAX)) {
      return unexpected("bad thread id '" + *tid + "'");
    }
    o.collect.tid = static_cast<int64_t>(*n);
  }
  if (auto max = args.value("--max-frames")) {
    auto n = parse_decimal(*max);
    if (!n || *n == 0 || *n > UINT32_MAX) return unexpected("bad frame count '" + *max + "'");
    o.collect.limits.max_frames = static_cast<uint32_t>(*n);
  }
  if (auto src = args.value("--source")) {
    if (*src == "auto") {
      o.collect.unwind.source = SourcePreference::Auto;
    } else if (*src == "eh_frame") {
      o.collect.unwind.source = SourcePreference::EhFrame;
    } else if (*src == "sframe") {
      o.collect.unwind.source = SourcePreference::SFrame;
    } else if (*src == "frame_pointer") {
      o.collect.unwind.source = SourcePreference::FramePointer;
    } else {
      return unexpected("unknown source '" + *src + "'");
    }
  }
  o.collect.unwind.sframe_from_eh_frame = args.has("--sframe-from-eh-frame");
  if (auto v = args.value("--sframe-version")) {
    if (*v != "2" && *v != "3") return unexpected("bad SFrame version '" + *v + "' (2 or 3)");
    if (!o.collect.unwind.sframe_from_eh_frame) {
      return unexpected(std::string("--sframe-version needs --sframe-from-eh-frame"));
    }
    o.collect.unwind.sframe_version = static_cast<uint8_t>(*v == "2" ? 2 : 3);
  }
  o.target.limits = o.collect.limits;
  return o;
}

// What the command line asked for: the operand (CORE or PID) and the output options.
struct Invocation {
  bool help = false;
  std::string operand;
  OutputOptions options;
};

Expected<Invocation, std::string> parse_invocation(std::span<const std::string> argv) {
  auto args = parse_args(argv, kOptions);
  if (!args) return unexpected(args.error());
  Invocation inv;
  inv.help = args->has("--help") || args->has("-h");
  if (inv.help) return inv;
  if (args->positionals.size() != 1) {
    return unexpected(
        std::string(args->positionals.empty() ? "missing argument" : "too many arguments"));
  }
  inv.operand = args->positionals[0];
  auto o = output_options(*args);
  if (!o) return unexpected(o.error());
  inv.options = std::move(*o);
  return inv;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EHBT_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(EHBT_UNDER_ASAN)
constexpr bool kFreeAtExit = true;
#else
constexpr bool kFreeAtExit = false;
#endif

// Lets the process go, then leaves the target's mappings and heap to the kernel at exit: one
// by one, unmapping the core and every module file and freeing the tables took longer than
// the walk on small cores, and exit drops the whole address space at once. Sanitizer builds
// still free everything, so leak checks keep their meaning.
void drop_target(std::unique_ptr<Target> target) {
  target->release();
  if (kFreeAtExit) {
    target.reset();
  } else {
    (void)target.release();
  }
}

// Unwinds, then releases the target before anything is written (a live process is detached
// as soon as its stacks are read, whatever happens to our stdout), then prints. The report
// names the target by its core path or its pid.
int print_target(std::unique_ptr<Target> target, const OutputOptions& o, const std::string& subject,
                 std::optional<std::string> core, std::optional<int64_t> pid) {
  auto doc = report::collect_backtraces(*target, o.collect);
  drop_target(std::move(target));
  if (!doc) return input_error(subject, doc.error());
  doc->core = std::move(core);
  doc->pid = pid;
  // Text mode says what is missing on stderr, before the trace it qualifies.
  if (!o.json) std::fputs(report::render_warnings(*doc).c_str(), stderr);
  const RenderSink to_stdout = [](std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    piece.clear();
  };
  if (o.json) {
    report::render_json(*doc, to_stdout);
  } else {
    report::render_text(*doc, to_stdout);
  }
  std::fflush(stdout);
  return report::exit_status(*doc);
}

int run_core(const Command& self, std::span<const std::string> argv) {
  auto inv = parse_invocation(argv);
  if (!inv) return usage_error(self, inv.error());
  if (inv->help) return print_command_help(self);
  const std::string& path = inv->operand;
  if (inv->options.target.one_thread_at_a_time) {
    return usage_error(self, "--one-thread-at-a-time is for live processes (ehbt pid)");
  }
  auto target = open_core(path, inv->options.target);
  if (!target) return input_error(path, target.error());
  return print_target(std::move(*target), inv->options, path, path, std::nullopt);
}

int run_pid(const Command& self, std::span<const std::string> argv) {
  auto inv = parse_invocation(argv);
  if (!inv) return usage_error(self, inv.error());
  if (inv->help) return print_command_help(self);
  auto pid = parse_decimal(inv->operand);
  if (!pid || *pid == 0 || *pid > INT32_MAX) {
    return usage_error(self, "bad pid '" + inv->operand + "'");
  }
  std::string subject = "pid " + inv->operand;
  // The target detaches from the process when destroyed, on every path.
  auto target = attach_process(static_cast<int>(*pid), inv->options.target);
  if (!target) return input_error(subject, target.error());
  return print_target(std::move(*target), inv->options, subject, std::nullopt,
                      static_cast<int64_t>(*pid));
}

const CommandRegistrar kCore{
    Command{"core", 10,
            "ehbt core CORE [--sysroot DIR]... [--debug-dir DIR]... [--debuginfod "
            "[--debuginfod-timeout S]] [--exe PATH] [--perf-map FILE] [--no-lines] "
            "[--no-debug-cache] [--json] "
            "[--all-threads | "
            "--thread TID] "
            "[--max-frames N] [--source auto|eh_frame|sframe|frame_pointer] "
            "[--sframe-from-eh-frame [--sframe-version 2|3]]",
            "Backtraces of the threads in an ELF core file.", kCoreHelp, run_core, kOutputHelp}};

const CommandRegistrar kPid{Command{
    "pid", 20,
    "ehbt pid PID [--sysroot DIR]... [--debug-dir DIR]... [--debuginfod "
    "[--debuginfod-timeout S]] [--exe PATH] [--perf-map FILE] [--no-lines] "
    "[--no-debug-cache] [--json] "
    "[--all-threads | "
    "--thread TID] "
    "[--max-frames N] [--source auto|eh_frame|sframe|frame_pointer] "
    "[--sframe-from-eh-frame [--sframe-version 2|3]] [--one-thread-at-a-time]",
    "Backtraces of a live process (attach, unwind, detach).", kPidHelp, run_pid, kOutputHelp}};

}  // namespace
}  // namespace ehbt::cli
