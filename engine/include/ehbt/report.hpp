// SPDX-License-Identifier: Apache-2.0
// The backtrace report, once for every front end: what `ehbt core`/`ehbt pid`, the Python
// module, the debugger plugins and ehbt-triage print, as plain data (BacktraceReport), how it
// is built from a target or from walks driven by someone else (collect_backtraces,
// add_thread), and its two renderings: GDB-like text and the ehbt-backtrace/1 JSON document
// (docs/formats.md). The names those renderings use (stop reasons, frame sources, signal
// codes, register names, architecture spellings of debuggers) live here too, so no front end
// keeps a table of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ehbt/arch.hpp"
#include "ehbt/core.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/image.hpp"
#include "ehbt/source_location.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::report {

// ---- the model ------------------------------------------------------------------------------

// Every field is settable: a front end may complete a frame before rendering (a debugger's
// own symbol where the engine has none).
struct FrameLine {
  uint32_t index = 0;
  uint64_t pc = 0;
  std::optional<uint64_t> cfa;  // absent when the unwinder did not compute it
  FrameSource source = FrameSource::Context;
  bool signal_trampoline = false;
  // The frame's module: an index into BacktraceReport::modules (its path, as the target names
  // it), not a copy of the path for every frame of a deep trace.
  std::optional<uint32_t> module;
  std::optional<uint64_t> module_offset;  // pc - bias
  std::optional<std::string> symbol;
  std::optional<uint64_t> symbol_offset;  // pc - symbol start
  bool jit = false;                       // JIT code: no module, named (if at all) from a perf map
  // From debug info, when the frame's module has some (SourceInfo): the position in the
  // physical function and the calls inlined at the pc, innermost first. Nothing and empty
  // without debug info (and with CollectOptions::lines off).
  std::optional<SourcePosition> location;
  std::vector<InlinedCall> inlined;
  // (DWARF number, value) of the frame's general registers (general_registers()), ascending;
  // only the `full` text shows them. Empty when the walk kept no registers (the CLI's): an
  // empty vector allocates nothing.
  std::vector<std::pair<uint16_t, uint64_t>> registers;
};

struct ThreadReport {
  int64_t tid = 0;
  std::string name;
  bool crashing = false;
  StopReason stop = StopReason::Outermost;
  std::string detail;
  std::vector<FrameLine> frames;
};

struct ModuleLine {
  std::string path;
  std::string file;  // "" when no file was found
  uint64_t base = 0;
  uint64_t bias = 0;
  std::string build_id;                // "" when unknown
  std::optional<bool> build_id_match;  // nothing: a build-id is unknown on either side
};

struct SignalLine {
  int number = 0;
  std::string name;         // "SIGSEGV"
  std::optional<int> code;  // nothing when the target does not say
  // Only for a signal that carries a fault address (signal_carries_address).
  std::optional<uint64_t> address;
  // Only for a signal a process sent (signal_carries_sender): si_pid and si_uid.
  std::optional<SignalSender> sender;
};

// Whether the executable's file backs the report.
enum class ExecutableState : uint8_t {
  Found,
  Missing,     // no file: "(not found)"
  OtherBuild,  // a file was found but its build-id differs: "(build-id differs, not used)"
};

struct BacktraceReport {
  // The target is named by `core` or `pid`; with neither, JSON says "core": null.
  std::optional<std::string> core;  // the core's path, as given
  // What the core file is: "elf_core" or "minidump" (nothing for a live process).
  std::optional<std::string> input_format;
  std::optional<int64_t> pid;          // or the live process
  std::optional<uint64_t> stopped_us;  // how long the live process was stopped
  std::string arch;
  std::string executable;
  ExecutableState executable_state = ExecutableState::Found;
  std::optional<SignalLine> signal;
  // A snapshot (a core gcore wrote while the process ran on): the signal its threads were
  // stopped with. `signal` is then nothing and no thread is crashing.
  std::optional<SignalLine> snapshot_signal;
  std::vector<ModuleLine> modules;
  std::vector<ThreadReport> threads;
  std::vector<Warning> warnings;  // what could not be known, each once
};

// ---- building it ----------------------------------------------------------------------------

struct CollectOptions {
  bool all_threads = false;
  std::optional<int64_t> tid;                       // only this thread
  std::optional<std::vector<std::size_t>> indexes;  // only these threads (indexes)
  UnwindOptions unwind;
  Limits limits;
  // Keep each frame's general registers (for the `full` text); the CLI does not.
  bool registers = false;
  // Look up source lines and inlined calls where debug info exists (`--no-lines` turns it
  // off: no debug file is then opened).
  bool lines = true;
  // Let a live process run once its stacks are read (the CLI). A caller that keeps using the
  // target afterwards (the Python module) leaves it stopped.
  bool release_target = true;
};

// One frame as the report shows it. Symbols are looked up at frame.lookup_pc() (pc - 1 for
// return addresses) but offsets are computed from the pc itself, as GDB shows `fn+0x10c`.
// Without `with_symbol` the symbol is left for the caller to look up in a batch. `module` is
// the index of the frame's module in `modules`, which must be the set the report lists.
FrameLine describe_frame(const Frame& frame, uint32_t index, const ModuleSet& modules,
                         bool with_symbol = true);

// The signal line of a signal number (nothing for 0: no signal). What the code says the
// siginfo does not hold is dropped, so no front end reports a fault address for a signal a
// process sent (whose address word is the sender's pid) or a sender for a fault.
std::optional<SignalLine> signal_line(int number, std::optional<int> code = std::nullopt,
                                      std::optional<uint64_t> address = std::nullopt,
                                      std::optional<SignalSender> sender = std::nullopt);
// The same for a target's signal.
SignalLine signal_line(const SignalInfo& signal);

// Lists `modules` in the report (in the set's order, which describe_frame's indexes follow)
// and says whether the executable's file was found or is another build.
void set_modules(BacktraceReport& report, const ModuleSet& modules);

// Adds a warning (a "missing_file" one naming the executable also marks it missing).
void add_warning(BacktraceReport& report, Warning warning);

// The whole report of a target: header, modules, warnings and the selected threads unwound.
// Fills everything but `core`/`pid`. Fails (one line) only when no thread is selected.
Expected<BacktraceReport, std::string> collect_backtraces(Target& target,
                                                          const CollectOptions& options);

// A thread walked by someone else (a debugger plugin reading memory through its debugger):
// every frame described against `modules`, which must be the set set_modules() listed.
// `lines`: source locations and inlined calls from the modules' debug info, as
// CollectOptions::lines (a module with malformed debug info adds one warning).
ThreadReport& add_thread(BacktraceReport& report, int64_t tid, std::string name, bool crashing,
                         const Backtrace& backtrace, const ModuleSet& modules, bool lines = true,
                         const Limits& limits = {});

// ---- rendering ------------------------------------------------------------------------------

struct TextOptions {
  // The "Core:/Executable:/Arch:/Signal:" block (the debugger commands print only threads).
  bool header = true;
  // Each thread's "\nThread 4242 "name" (crashed: ...):" line.
  bool thread_headers = true;
  // After each frame: "    cfa 0x..., via eh_frame, module+0x...[, signal trampoline]" and,
  // when the frame kept registers, a line of "name=0x..." pairs (GDB's `ehbt -full`).
  bool full = false;
};

struct JsonOptions {
  // One line without spaces (what the debugger commands print); else indented (the CLI's).
  bool compact = false;
};

// Takes the text rendered so far and empties the string (its capacity may stay).
using RenderSink = std::function<void(std::string&)>;
// The documents handed to a sink in pieces of about kRenderChunk bytes, cut between frames:
// a deep trace's document (hundreds of KB) is never held whole, so the CLI does not fault in
// fresh pages for it as it grows (~12 us each on a VM).
inline constexpr std::size_t kRenderChunk = 64 * 1024;

// A header (core or process, executable, arch, signal: "Signal: none (no thread crashed: a
// snapshot, e.g. by gcore; threads stopped by SIGSTOP, SI_KERNEL)" for a snapshot), then one
// block per thread:
//   Thread 4242 "name" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):
//   #0  0x000055d4c0a01234 in fx_level3 () from /opt/app/bin/server
//   #1  0x00007f0000001000 in ?? ()
//   #2  0x000055d4c0a01300 in inner () at src/a.c:5      (inlined into outer at this pc)
//   #3  outer () at src/a.c:20                           (the physical frame: no address)
//   Backtrace stopped: memory_fault: <detail>
std::string render_text(const BacktraceReport& report, const TextOptions& options = {});
void render_text(const BacktraceReport& report, const RenderSink& sink,
                 const TextOptions& options = {});
// One thread's block of render_text (its header line after a blank line, as `thread_headers`
// says, its frames, its stop line).
std::string render_thread(const BacktraceReport& report, const ThreadReport& thread,
                          const TextOptions& options = {});
// The ehbt-backtrace/1 document, newline-terminated.
std::string render_json(const BacktraceReport& report, const JsonOptions& options = {});
void render_json(const BacktraceReport& report, const RenderSink& sink,
                 const JsonOptions& options = {});
// The ehbt-backtrace/1 document as a sequence of events, for a front end that builds its own
// objects from it (the Python module's Report.to_dict: a dict without the JSON text and its
// parse). render_json is this sequence written as JSON: one renderer decides every field.
// Strings arrive as the report holds them (any bytes); document_string() gives the text a
// JSON reader gets back from render_json for them.
class DocumentEvents {
 public:
  virtual ~DocumentEvents() = default;
  // `one_line`: a layout hint for text (a frame, a module on one line).
  virtual void begin_object(bool one_line) = 0;
  virtual void end_object() = 0;
  virtual void begin_array(bool one_line) = 0;
  virtual void end_array() = 0;
  // Inside an object: the key of the next value.
  virtual void key(std::string_view k) = 0;
  virtual void string(std::string_view s) = 0;
  virtual void integer(int64_t v) = 0;
  virtual void unsigned_integer(uint64_t v) = 0;
  virtual void boolean(bool v) = 0;
  virtual void null() = 0;
  // An address, whose value in the document is the string "0x" and lowercase hex digits
  // without padding. By default handed to string(); a writer may render it without making
  // that string first (a frame has four).
  virtual void address(uint64_t v);
  // After each frame's object: where a writer of text may hand out what it has so far.
  virtual void after_frame() {}
  // A frame's members after its "cfa" are often the same as the frame's before it (a
  // recursion repeats one pc hundreds of times). The renderer writes them between
  // begin_shared() and end_shared(); for a frame whose members there equal the previous
  // frame's (in the same thread), it first asks repeat_shared(): a writer that kept what it
  // wrote for the previous frame writes that again and returns true, and the renderer goes on
  // with the frame's end. By default false: the members are written as events.
  virtual void begin_shared() {}
  virtual void end_shared() {}
  virtual bool repeat_shared() { return false; }
};
void render_document(const BacktraceReport& report, DocumentEvents& events);
// The text of an address in the document ("0x" and lowercase hex digits, no padding), written
// at `out`; returns its length (at most 18).
std::size_t document_address(char (&out)[18], uint64_t v);
// `s` as a JSON reader reads it back from the document: `s` itself where it is valid UTF-8,
// each byte outside a valid sequence as the code point of the same value (U+0080-U+00FF),
// encoded in UTF-8. Always valid UTF-8.
std::string document_string(std::string_view s);

// The warnings for stderr in text mode: "warning: <message> (use --sysroot DIR)", one a line.
std::string render_warnings(const BacktraceReport& report);
// 0 when every thread ended at an outermost frame or at max_frames, 1 otherwise.
int exit_status(const BacktraceReport& report);

// The pieces of the text, for front ends that lay out their own pages.
// "Thread 4242 "name" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):"
std::string thread_header(const ThreadReport& thread, const std::optional<SignalLine>& signal);
// "#3  0x000055d4c0a01234 in check () from /opt/app/bin/server [scan]", or with debug info
// "#3  0x000055d4c0a01234 in check () at src/check.c:42"; a frame with calls inlined at its pc
// gives one line for each of them first, numbered on from `number` (GDB's frames), so the
// result may hold several lines (no final newline). `number` is the first line's frame number:
// frame.index plus the inlined calls of the frames before it (frame_numbers()).
std::string frame_text(const BacktraceReport& report, const FrameLine& frame, uint32_t number);
std::string frame_text(const BacktraceReport& report, const FrameLine& frame);
// The GDB frame number of each frame's first text line: index plus every inlined call above.
std::vector<uint32_t> frame_numbers(const ThreadReport& thread);
// The `full` lines after a frame (without a final newline).
std::string frame_detail(const BacktraceReport& report, const FrameLine& frame);
// "Backtrace stopped: memory_fault: <detail>"; "" for a walk that reached its outermost frame.
std::string stop_line(StopReason stop, std::string_view detail);
// A frame address as GDB prints it: 16 hex digits, 8 on a 32-bit target (a value that does not
// fit keeps all its digits).
std::string padded_address(uint64_t value, std::optional<Arch> arch);

// ---- names ----------------------------------------------------------------------------------

// Exactly the strings docs/formats.md lists for `stop_reason` and `source`.
std::string_view stop_reason_name(StopReason reason);
std::string_view frame_source_name(FrameSource source);
std::span<const StopReason> all_stop_reasons();
std::span<const FrameSource> all_frame_sources();

// "SEGV_MAPERR", "SI_TKILL", ...; "" when the code means nothing known for this signal.
std::string_view signal_code_name(int signo, int code);
// "SIGSEGV, SEGV_MAPERR at 0x0": name, code name (or "code N"; nothing when unknown), fault
// address when known; "SIGSEGV, SI_USER sent by pid 1 (uid 0)" for a signal a process sent.
std::string describe_signal(const SignalLine& signal);

// The DWARF register `reg` of `arch` by its assembler name ("rsp", "x29", "sp", "r15").
// Numbers without a name print as "reg<N>".
std::string register_name(Arch arch, uint16_t reg);
// The general-purpose registers a debugger front end reads and restores (DWARF numbers
// 0..count-1, named by register_name), and the debugger's names of the program counter and
// the stack pointer ("rip"/"rsp", "eip"/"esp", "pc"/"sp", "pswa"/"r15").
struct GeneralRegisters {
  uint16_t count;
  std::string_view pc;
  std::string_view sp;
};
GeneralRegisters general_registers(Arch arch);
// Other names a debugger gives the register called `name` above: LLDB's "fp", "lr" and "x31"
// for aarch64's x29, x30 and sp; GDB's s390x pseudo register "pc" beside pswa. Usually none.
std::span<const std::string_view> register_aliases(Arch arch, std::string_view name);

// The architecture a debugger or a triple names: the engine's names ("x86_64"), GDB's
// ("i386:x86-64", "aarch64", "s390:64-bit", "i386:intel"), LLDB triples' first part
// ("x86_64", "arm64", "i686", "s390x"), and common spellings ("amd64", "x86-64").
std::optional<Arch> arch_from_alias(std::string_view name);

}  // namespace ehbt::report
