// SPDX-License-Identifier: Apache-2.0
// Text and JSON renderings of a backtrace report.
#include "cli_backtrace_report.hpp"

#include "cli_json.hpp"
#include "cli_names.hpp"
#include "cli_numbers.hpp"

namespace ehbt::cli {
namespace {

// GDB pads frame addresses to the target's pointer width: 16 digits, 8 on a 32-bit target.
std::string padded_address(uint64_t v, bool narrow) {
  std::string s;
  util::append_hex16(s, v);
  if (narrow && v <= UINT32_MAX) s.erase(2, 8);
  return s;
}

// GDB numbers frames as "#0  ", "#10 ", "#100 ": the number left-aligned in three columns.
std::string frame_number(uint32_t index) {
  std::string s = "#";
  append_decimal(s, uint64_t{index});
  s.append(s.size() < 4 ? 4 - s.size() : 1, ' ');
  return s;
}

// The path of the frame's module, or null.
const std::string* module_path(const BacktraceReport& r, const FrameLine& f) {
  return f.module && *f.module < r.modules.size() ? &r.modules[*f.module].path : nullptr;
}

std::string frame_text(const BacktraceReport& r, const FrameLine& f, bool narrow) {
  std::string line = frame_number(f.index);
  if (f.signal_trampoline) {
    line += "<signal handler called>";
  } else {
    line += padded_address(f.pc, narrow) + " in " + f.symbol.value_or("??") + " ()";
    if (const std::string* path = module_path(r, f)) line += " from " + *path;
    if (f.jit) line += " [jit]";
  }
  // Frames found without unwind tables are guesses; say so.
  if (f.source == FrameSource::FramePointer || f.source == FrameSource::Scan) {
    line += " [" + std::string(frame_source_name(f.source)) + "]";
  }
  return line;
}

std::string thread_header(const ThreadReport& t, const std::optional<SignalLine>& sig) {
  std::string line = "Thread " + std::to_string(t.tid);
  if (!t.name.empty()) line += " \"" + t.name + "\"";
  if (t.crashing && sig) line += " (crashed: " + describe_signal(*sig) + ")";
  return line + ":";
}

bool stopped_early(StopReason r) {
  return r != StopReason::Outermost && r != StopReason::MaxFrames;
}

}  // namespace

std::string describe_signal(const SignalLine& sig) {
  std::string s = sig.name.empty() ? "SIG" + std::to_string(sig.number) : sig.name;
  if (sig.code) {
    std::string_view code = signal_code_name(sig.number, *sig.code);
    s += ", ";
    s += code.empty() ? "code " + std::to_string(*sig.code) : std::string(code);
  }
  if (sig.address) s += " at " + hex(*sig.address);
  return s;
}

namespace {

// The whole document of a renderer that writes in pieces.
std::string whole(void (*render)(const BacktraceReport&, const RenderSink&),
                  const BacktraceReport& r) {
  std::string out;
  render(r, [&out](std::string& piece) {
    out += piece;
    piece.clear();
  });
  return out;
}

}  // namespace

std::string render_text(const BacktraceReport& r) {
  return whole(render_text, r);
}
std::string render_json(const BacktraceReport& r) {
  return whole(render_json, r);
}

void render_text(const BacktraceReport& r, const RenderSink& sink) {
  std::string out;
  out.reserve(kRenderChunk + 4096);
  if (r.core) out += "Core: " + *r.core + "\n";
  if (r.pid) out += "Process: " + std::to_string(*r.pid) + "\n";
  out += "Executable: " + (r.executable.empty() ? std::string("??") : r.executable);
  if (!r.executable.empty() && !r.executable_found) out += " (not found)";
  out += "\n";
  out += "Arch: " + r.arch + "\n";
  if (r.signal) {
    out += "Signal: " + describe_signal(*r.signal) + "\n";
  } else {
    out += "Signal: none\n";
  }
  const std::optional<Arch> arch = arch_from_name(r.arch);
  const bool narrow = arch && arch_info(*arch).address_size == 4;
  for (const ThreadReport& t : r.threads) {
    out += "\n" + thread_header(t, r.signal) + "\n";
    for (const FrameLine& f : t.frames) {
      out += frame_text(r, f, narrow);
      out += '\n';
      if (out.size() >= kRenderChunk) sink(out);
    }
    if (t.stop != StopReason::Outermost) {
      out += "Backtrace stopped: " + std::string(stop_reason_name(t.stop));
      if (!t.detail.empty()) out += ": " + t.detail;
      out += "\n";
    }
  }
  sink(out);
}

void render_json(const BacktraceReport& r, const RenderSink& sink) {
  std::string out;
  out.reserve(kRenderChunk + 4096);
  JsonWriter w(out);
  w.begin_object();
  w.field("format", "ehbt-backtrace/1");
  if (r.core) w.field("core", *r.core);
  if (r.pid) w.field("pid", *r.pid);
  if (r.stopped_us) w.field("stopped_us", *r.stopped_us);
  w.field("arch", r.arch);
  w.field("executable", r.executable);
  w.key("signal");
  if (r.signal) {
    w.begin_object(true)
        .field("number", r.signal->number)
        .field("name", r.signal->name)
        .field("code", r.signal->code)
        .address_field("address", r.signal->address)
        .end_object();
  } else {
    w.null();
  }
  w.key("modules").begin_array();
  for (const ModuleLine& m : r.modules) {
    auto or_null = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional<std::string>(s);
    };
    w.begin_object(true)
        .field("path", m.path)
        .field("file", or_null(m.file))
        .address_field("base", m.base)
        .address_field("bias", m.bias)
        .field("build_id", or_null(m.build_id))
        .field("build_id_match", m.build_id_match)
        .end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const Warning& x : r.warnings) {
    auto or_null = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional<std::string>(s);
    };
    w.begin_object(true)
        .field("kind", x.kind)
        .field("message", x.message)
        .field("path", or_null(x.path))
        .field("option", or_null(x.option))
        .end_object();
  }
  w.end_array();
  w.key("threads").begin_array();
  for (const ThreadReport& t : r.threads) {
    w.begin_object()
        .field("tid", t.tid)
        .field("crashing", t.crashing)
        .field("stop_reason", stop_reason_name(t.stop))
        .field("stop_detail", t.detail);
    w.key("frames").begin_array();
    for (const FrameLine& f : t.frames) {
      w.begin_object(true)
          .field("index", f.index)
          .address_field("pc", f.pc)
          .address_field("cfa", f.cfa)
          .field("source", frame_source_name(f.source))
          .key("module");
      if (const std::string* path = module_path(r, f)) {
        w.value(*path);
      } else {
        w.null();
      }
      w.address_field("module_offset", f.module_offset)
          .field("symbol", f.symbol)
          .address_field("symbol_offset", f.symbol_offset);
      if (f.jit) w.field("jit", true);  // only on JIT frames: other frames keep their shape
      w.end_object();
      // The writer keeps its nesting state apart from the text: emptying it is safe.
      if (out.size() >= kRenderChunk) sink(out);
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out += '\n';
  sink(out);
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

}  // namespace ehbt::cli
