// SPDX-License-Identifier: Apache-2.0
// The text rendering of a backtrace report, in the style of GDB's `bt`.
#include "ehbt/report.hpp"
#include "report/json_writer.hpp"
#include "report/numbers.hpp"

namespace ehbt::report {
namespace {

// GDB numbers frames as "#0  ", "#10 ", "#100 ": the number left-aligned in three columns.
void append_frame_number(std::string& s, uint32_t index) {
  const std::size_t at = s.size();
  s += '#';
  append_decimal(s, uint64_t{index});
  const std::size_t width = s.size() - at;
  s.append(width < 4 ? 4 - width : 1, ' ');
}

// The path of the frame's module, or null.
const std::string* module_path(const BacktraceReport& r, const FrameLine& f) {
  return f.module && *f.module < r.modules.size() ? &r.modules[*f.module].path : nullptr;
}

void append_padded_address(std::string& s, uint64_t v, bool narrow) {
  const std::size_t at = s.size();
  util::append_hex16(s, v);
  if (narrow && v <= UINT32_MAX) s.erase(at + 2, 8);
}

// " at src/a.c:42", as GDB gives a position (no column: GDB prints none).
void append_position(std::string& s, const SourcePosition& at) {
  s += " at ";
  s += at.file;
  s += ':';
  append_decimal(s, uint64_t{at.line});
}

// Frames found without unwind tables are guesses; say so.
void append_source_tag(std::string& line, const FrameLine& f) {
  if (f.source == FrameSource::FramePointer || f.source == FrameSource::Scan) {
    line += " [";
    line += frame_source_name(f.source);
    line += "]";
  }
}

// A frame's lines, as GDB prints them: with calls inlined at the pc, first one line for each
// of them (innermost first, the address on the first only, since they all share it), then the
// physical function's line without an address. A position replaces "from module".
void append_frame(std::string& line, const BacktraceReport& r, const FrameLine& f, bool narrow,
                  uint32_t number) {
  append_frame_number(line, number);
  if (f.signal_trampoline) {
    line += "<signal handler called>";
    append_source_tag(line, f);
    return;
  }
  append_padded_address(line, f.pc, narrow);
  line += " in ";
  for (const InlinedCall& call : f.inlined) {
    line += call.function.empty() ? std::string_view("??") : std::string_view(call.function);
    line += " ()";
    if (call.location) append_position(line, *call.location);
    if (&call == &f.inlined.front()) append_source_tag(line, f);
    line += '\n';
    append_frame_number(line, ++number);
  }
  line += f.symbol ? std::string_view(*f.symbol) : std::string_view("??");
  line += " ()";
  if (f.location) {
    append_position(line, *f.location);
  } else if (const std::string* path = module_path(r, f)) {
    line += " from ";
    line += *path;
  }
  if (f.jit) line += " [jit]";
  if (f.inlined.empty()) append_source_tag(line, f);
}

void append_detail(std::string& out, const BacktraceReport& r, const FrameLine& f,
                   std::optional<Arch> arch) {
  out += "    cfa ";
  util::append_hex(out, f.cfa.value_or(0));
  out += ", via ";
  out += frame_source_name(f.source);
  if (f.module_offset && module_path(r, f) != nullptr) {
    out += ", module+";
    util::append_hex(out, *f.module_offset);
  }
  if (f.signal_trampoline) out += ", signal trampoline";
  if (f.registers.empty() || !arch) return;
  out += "\n   ";
  for (const auto& [reg, value] : f.registers) {
    out += ' ';
    out += register_name(*arch, reg);
    out += '=';
    util::append_hex(out, value);
  }
}

bool narrow_arch(std::optional<Arch> arch) {
  return arch && arch_info(*arch).address_size == 4;
}

// One thread's block; with a sink, handed over in pieces cut between frames.
void append_thread(std::string& out, const BacktraceReport& r, const ThreadReport& t,
                   const TextOptions& options, const RenderSink* sink) {
  const std::optional<Arch> arch = arch_from_name(r.arch);
  const bool narrow = narrow_arch(arch);
  if (options.thread_headers) {
    out += '\n';
    out += thread_header(t, r.signal);
    out += '\n';
  }
  uint32_t inlined_above = 0;  // GDB numbers inlined calls as frames of their own
  for (const FrameLine& f : t.frames) {
    append_frame(out, r, f, narrow, f.index + inlined_above);
    inlined_above += static_cast<uint32_t>(f.inlined.size());
    out += '\n';
    if (options.full) {
      append_detail(out, r, f, arch);
      out += '\n';
    }
    if (sink != nullptr && out.size() >= kRenderChunk) (*sink)(out);
  }
  if (t.stop != StopReason::Outermost) {
    out += stop_line(t.stop, t.detail);
    out += '\n';
  }
}

bool stopped_early(StopReason r) {
  return r != StopReason::Outermost && r != StopReason::MaxFrames;
}

}  // namespace

std::string padded_address(uint64_t value, std::optional<Arch> arch) {
  std::string s;
  append_padded_address(s, value, narrow_arch(arch));
  return s;
}

std::string frame_text(const BacktraceReport& r, const FrameLine& f, uint32_t number) {
  std::string line;
  append_frame(line, r, f, narrow_arch(arch_from_name(r.arch)), number);
  return line;
}

std::string frame_text(const BacktraceReport& r, const FrameLine& f) {
  return frame_text(r, f, f.index);
}

std::vector<uint32_t> frame_numbers(const ThreadReport& t) {
  std::vector<uint32_t> numbers;
  numbers.reserve(t.frames.size());
  uint32_t inlined_above = 0;
  for (const FrameLine& f : t.frames) {
    numbers.push_back(f.index + inlined_above);
    inlined_above += static_cast<uint32_t>(f.inlined.size());
  }
  return numbers;
}

std::string frame_detail(const BacktraceReport& r, const FrameLine& f) {
  std::string out;
  append_detail(out, r, f, arch_from_name(r.arch));
  return out;
}

std::string thread_header(const ThreadReport& t, const std::optional<SignalLine>& sig) {
  std::string line = "Thread " + std::to_string(t.tid);
  if (!t.name.empty()) line += " \"" + t.name + "\"";
  if (t.crashing && sig) line += " (crashed: " + describe_signal(*sig) + ")";
  return line + ":";
}

std::string stop_line(StopReason stop, std::string_view detail) {
  if (stop == StopReason::Outermost) return "";
  std::string line = "Backtrace stopped: " + std::string(stop_reason_name(stop));
  if (!detail.empty()) {
    line += ": ";
    line += detail;
  }
  return line;
}

std::string render_text(const BacktraceReport& r, const TextOptions& options) {
  std::string out;
  render_text(
      r,
      [&out](std::string& piece) {
        out += piece;
        piece.clear();
      },
      options);
  return out;
}

void render_text(const BacktraceReport& r, const RenderSink& sink, const TextOptions& options) {
  std::string out;
  out.reserve(kRenderChunk + 4096);
  if (options.header) {
    if (r.core) out += "Core: " + *r.core + "\n";
    if (r.pid) out += "Process: " + std::to_string(*r.pid) + "\n";
    out += "Executable: " + (r.executable.empty() ? std::string("??") : r.executable);
    if (!r.executable.empty()) {
      if (r.executable_state == ExecutableState::Missing) out += " (not found)";
      if (r.executable_state == ExecutableState::OtherBuild) out += " (build-id differs, not used)";
    }
    out += "\n";
    out += "Arch: " + r.arch + "\n";
    if (r.signal) {
      out += "Signal: " + describe_signal(*r.signal) + "\n";
    } else if (r.snapshot_signal) {
      out += "Signal: none (no thread crashed: a snapshot, e.g. by gcore; threads stopped by " +
             describe_signal(*r.snapshot_signal) + ")\n";
    } else {
      out += "Signal: none\n";
    }
  }
  for (const ThreadReport& t : r.threads) append_thread(out, r, t, options, &sink);
  sink(out);
}

std::string render_thread(const BacktraceReport& r, const ThreadReport& t,
                          const TextOptions& options) {
  std::string out;
  append_thread(out, r, t, options, nullptr);
  return out;
}

std::string render_warnings(const BacktraceReport& r) {
  std::string out;
  for (const Warning& x : r.warnings) out += "warning: " + x.line() + "\n";
  return out;
}

int exit_status(const BacktraceReport& r) {
  for (const ThreadReport& t : r.threads) {
    if (stopped_early(t.stop)) return 1;
  }
  return 0;
}

}  // namespace ehbt::report
