// SPDX-License-Identifier: Apache-2.0
// What `ehbt core` and `ehbt pid` print, as plain data, and its two renderings: GDB-like text
// and the ehbt-backtrace/1 JSON document. Kept free of targets and images so that the
// formatting is tested on hand-made reports.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ehbt/core.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::cli {

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
  std::optional<uint64_t> symbol_offset;  // pc - symbol start (link-time)
  bool jit = false;                       // JIT code: no module, named (if at all) from a perf map
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
  std::optional<uint64_t> address;
};

struct BacktraceReport {
  std::optional<std::string> core;     // the core's path, as given
  std::optional<int64_t> pid;          // or the live process
  std::optional<uint64_t> stopped_us;  // how long the live process was stopped
  std::string arch;
  std::string executable;
  bool executable_found = true;  // false: its file is missing or another build
  std::optional<SignalLine> signal;
  std::vector<ModuleLine> modules;
  std::vector<ThreadReport> threads;
  std::vector<Warning> warnings;  // what could not be known, each once
};

// "SIGSEGV, SEGV_MAPERR at 0x0": name, code name (or "code N"; nothing when unknown), fault
// address when known.
std::string describe_signal(const SignalLine& sig);

// A header (core or process, executable, arch, signal), then one block per thread:
//   Thread 4242 "name" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):
//   #0  0x000055d4c0a01234 in fx_level3 () from /opt/app/bin/server
//   #1  0x00007f0000001000 in ?? ()
//   Backtrace stopped: memory_fault: <detail>
std::string render_text(const BacktraceReport& report);
// The ehbt-backtrace/1 document, newline-terminated.
std::string render_json(const BacktraceReport& report);

// Takes the text rendered so far and empties the string (its capacity may stay).
using RenderSink = std::function<void(std::string&)>;
// The same documents handed to `sink` in pieces of about kRenderChunk bytes, cut between
// frames: a deep trace's document (hundreds of KB) is never held whole, so the CLI does not
// fault in fresh pages for it as it grows (~12 us each on a VM).
inline constexpr std::size_t kRenderChunk = 64 * 1024;
void render_text(const BacktraceReport& report, const RenderSink& sink);
void render_json(const BacktraceReport& report, const RenderSink& sink);
// The warnings for stderr in text mode: "warning: <message> (use --sysroot DIR)", one a line.
std::string render_warnings(const BacktraceReport& report);

// 0 when every thread ended at an outermost frame or at max_frames, 1 otherwise.
int exit_status(const BacktraceReport& report);

}  // namespace ehbt::cli
