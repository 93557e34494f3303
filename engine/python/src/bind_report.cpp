// SPDX-License-Identifier: Apache-2.0
// The report layer (ehbt/report.hpp) for Python: ehbt.Report, ehbt.target_report and the
// report's names. Every front end written in Python (the debugger plugins, ehbt-triage)
// prints what these render; none keeps a table or a format of its own.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "bindings.hpp"
#include "document_dict.hpp"
#include "ehbt/report.hpp"

namespace ehbt::py {

namespace {

namespace rep = ehbt::report;

// A report and the module set its frames are described against (add_thread needs the set
// set_modules listed: frames name their module by its index in that list).
struct PyReport {
  rep::BacktraceReport r;
  std::shared_ptr<const void> set_owner;
  const ModuleSet* set = nullptr;
};
using ReportPtr = std::shared_ptr<PyReport>;

// A thread of a report, and a frame of it, as Python reads them (views: the report owns them).
struct ThreadView {
  ReportPtr report;
  std::size_t index = 0;
  rep::ThreadReport& get() const { return report->r.threads.at(index); }
};
struct FrameView {
  ReportPtr report;
  std::size_t thread = 0, index = 0;
  rep::FrameLine& get() const { return report->r.threads.at(thread).frames.at(index); }
};

const ModuleSet kNoModules;

// (file, line, column) with column None when unknown, or None.
pyb::object position_tuple(const std::optional<SourcePosition>& at) {
  if (!at) return pyb::none();
  pyb::object column = at->column != 0 ? pyb::object(pyb::int_(at->column)) : pyb::none();
  return pyb::make_tuple(at->file, at->line, column);
}

void use_modules(PyReport& p, std::shared_ptr<const void> owner, const ModuleSet* set) {
  p.set_owner = std::move(owner);
  p.set = set;
  rep::set_modules(p.r, *set);
}

Warning warning_from_py(const pyb::handle& obj) {
  if (pyb::isinstance<Warning>(obj)) return obj.cast<Warning>();
  // A front end's own remark (a plain message): kind "other", no file, no option.
  return Warning{"other", pyb::str(obj).cast<std::string>(), "", ""};
}

// A signal's sender from set_signal's sender_pid/sender_uid (nothing without a pid).
std::optional<SignalSender> sender(std::optional<int32_t> pid, std::optional<uint32_t> uid) {
  if (!pid) return std::nullopt;
  return SignalSender{*pid, uid.value_or(0)};
}

std::optional<uint64_t> optional_address(const pyb::handle& obj) {
  if (obj.is_none()) return std::nullopt;
  return obj.cast<uint64_t>();
}

// The threads "crashing" | "all" | [indexes] of a target_report call, as CollectOptions.
void select_threads(const pyb::handle& threads, rep::CollectOptions& o) {
  if (pyb::isinstance<pyb::str>(threads)) {
    const std::string which = threads.cast<std::string>();
    if (which == "all") {
      o.all_threads = true;
    } else if (which != "crashing") {
      throw pyb::value_error("threads must be 'crashing', 'all' or a list of indexes, not '" +
                             which + "'");
    }
    return;
  }
  o.indexes = threads.cast<std::vector<std::size_t>>();
}

ReportPtr target_report(const std::shared_ptr<PyTarget>& t, const pyb::handle& threads,
                        const pyb::handle& options, const pyb::handle& limits,
                        const std::optional<std::string>& core, bool registers, bool lines) {
  rep::CollectOptions o;
  o.lines = lines;
  select_threads(threads, o);
  o.unwind = options_from_py(options);
  o.limits = limits_from_py(limits, t->limits);
  o.registers = registers;
  // The target stays usable (and a live process stopped) for the caller.
  o.release_target = false;
  auto p = std::make_shared<PyReport>();
  std::string error;
  {
    pyb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(t->mu);
    if (!t->target) {
      error = "the target is closed";
    } else {
      auto r = rep::collect_backtraces(*t->target, o);
      if (r) {
        p->r = std::move(*r);
        // A copy of the target's set: the report outlives a closed target.
        auto set = std::make_shared<ModuleSet>(t->target->modules());
        p->set = set.get();
        p->set_owner = std::move(set);
      } else {
        error = r.error();
      }
    }
  }
  if (!error.empty()) {
    if (o.indexes) throw pyb::index_error(error);
    throw EhbtError(error);
  }
  if (core) {
    p->r.core = *core;
  } else if (!t->path.empty()) {
    p->r.core = t->path;
  } else if (t->pid != 0) {
    p->r.pid = t->pid;
  }
  return p;
}

void add_thread(PyReport& p, int64_t tid, const pyb::handle& walk, bool crashing,
                const std::string& name, const pyb::handle& symbol_of, bool lines,
                const Limits& limits) {
  if (walk.is_none()) {  // a thread without a walk: its header only
    static const Backtrace kEmpty;
    if (p.set == nullptr) use_modules(p, nullptr, &kNoModules);
    rep::add_thread(p.r, tid, name, crashing, kEmpty, *p.set);
    return;
  }
  const auto bt = walk.cast<std::shared_ptr<OwnedBacktrace>>();
  // A report without modules takes the set the walk used (a debugger front end's).
  if (p.set == nullptr) {
    if (bt->modules != nullptr) {
      use_modules(p, bt->owner, bt->modules);
    } else {
      use_modules(p, nullptr, &kNoModules);
    }
  }
  // With the GIL held: the report is a Python object other threads may be using.
  rep::ThreadReport* t = &rep::add_thread(p.r, tid, name, crashing, bt->bt, *p.set, lines, limits);
  if (symbol_of.is_none()) return;
  // The front end names what the engine could not (LLDB's own symbol tables).
  for (std::size_t k = 0; k < t->frames.size(); ++k) {
    rep::FrameLine& line = t->frames[k];
    if (line.symbol || line.signal_trampoline) continue;
    pyb::object got = symbol_of(frame_view(bt, k));
    if (got.is_none()) continue;
    auto pair = got.cast<pyb::sequence>();
    line.symbol = pair[0].cast<std::string>();
    line.symbol_offset = line.pc - pair[1].cast<uint64_t>();
  }
}

pyb::tuple names_tuple(auto all, auto name) {
  pyb::list out;
  for (auto v : all) out.append(std::string(name(v)));
  return pyb::tuple(out);
}

}  // namespace

void bind_report(pyb::module_& m) {
  m.attr("STOP_REASONS") = names_tuple(rep::all_stop_reasons(), rep::stop_reason_name);
  m.attr("FRAME_SOURCES") = names_tuple(rep::all_frame_sources(), rep::frame_source_name);

  m.def(
      "describe_signal",
      [](int number, std::optional<int> code, const pyb::handle& address,
         std::optional<int32_t> pid, std::optional<uint32_t> uid) {
        auto sig = rep::signal_line(number, code, optional_address(address), sender(pid, uid));
        return sig ? rep::describe_signal(*sig) : std::string("none");
      },
      pyb::arg("number"), pyb::arg("code") = pyb::none(), pyb::arg("address") = pyb::none(),
      pyb::arg("sender_pid") = pyb::none(), pyb::arg("sender_uid") = pyb::none(),
      "The signal as the text reports say it: 'SIGSEGV, SEGV_MAPERR at 0x0' (no code or "
      "address when unknown; 'none' for 0).");
  m.def(
      "signal_code_name",
      [](int number, int code) -> std::optional<std::string> {
        std::string_view name = rep::signal_code_name(number, code);
        if (name.empty()) return std::nullopt;
        return std::string(name);
      },
      pyb::arg("number"), pyb::arg("code"),
      "'SEGV_MAPERR', 'SI_TKILL', ... for a signal's si_code; None when it names nothing known.");
  m.def(
      "register_name",
      [](const pyb::handle& arch, uint16_t reg) {
        return rep::register_name(arch_from_py(arch), reg);
      },
      pyb::arg("arch"), pyb::arg("dwarf_number"),
      "The DWARF register of `arch` by its assembler name ('rsp', 'x29', 'r15'); 'reg<N>' "
      "when it has none.");
  m.def(
      "general_registers",
      [](const pyb::handle& arch) {
        const Arch a = arch_from_py(arch);
        const rep::GeneralRegisters g = rep::general_registers(a);
        pyb::dict names;
        for (uint16_t n = 0; n < g.count; ++n) names[pyb::str(rep::register_name(a, n))] = n;
        return pyb::make_tuple(names, std::string(g.pc), std::string(g.sp));
      },
      pyb::arg("arch"),
      "({name: DWARF number} of the registers a debugger front end reads and restores, the "
      "program counter's name, the stack pointer's name) for `arch`.");
  m.def(
      "register_aliases",
      [](const pyb::handle& arch, const std::string& name) {
        pyb::list out;
        for (std::string_view alias : rep::register_aliases(arch_from_py(arch), name)) {
          out.append(std::string(alias));
        }
        return pyb::tuple(out);
      },
      pyb::arg("arch"), pyb::arg("name"),
      "Other names a debugger gives the register `name` (from general_registers): LLDB's "
      "('fp',) for aarch64's 'x29', GDB's ('pc',) for s390x's 'pswa'; () for most.");
  m.def(
      "padded_address",
      [](uint64_t value, const pyb::handle& arch) {
        std::optional<Arch> a;
        if (!arch.is_none()) a = arch_from_py(arch);
        return rep::padded_address(value, a);
      },
      pyb::arg("value"), pyb::arg("arch") = pyb::none(),
      "A frame address as the text prints it: 16 hex digits, 8 on a 32-bit target.");

  pyb::class_<FrameView>(m, "ReportFrame",
                         "A frame of a Report: what its text line and JSON record say.")
      .def_property_readonly("index", [](const FrameView& f) { return f.get().index; })
      .def_property_readonly("pc", [](const FrameView& f) { return f.get().pc; })
      .def_property_readonly("cfa", [](const FrameView& f) { return f.get().cfa; })
      .def_property_readonly(
          "source", [](const FrameView& f) { return std::string(to_string(f.get().source)); })
      .def_property_readonly("signal_trampoline",
                             [](const FrameView& f) { return f.get().signal_trampoline; })
      .def_property_readonly("jit", [](const FrameView& f) { return f.get().jit; })
      .def_property_readonly(
          "location", [](const FrameView& f) { return position_tuple(f.get().location); },
          "(file, line, column) in the physical function from debug info (column None when "
          "unknown), or None.")
      .def_property_readonly(
          "inlined",
          [](const FrameView& f) {
            pyb::list calls;
            for (const ehbt::InlinedCall& c : f.get().inlined) {
              calls.append(pyb::make_tuple(c.function, position_tuple(c.location)));
            }
            return calls;
          },
          "[(function, location)] of the calls inlined at the pc, innermost first.")
      .def_property_readonly("module",
                             [](const FrameView& f) -> std::optional<std::string> {
                               const auto& line = f.get();
                               const auto& mods = f.report->r.modules;
                               if (!line.module || *line.module >= mods.size()) return std::nullopt;
                               return mods[*line.module].path;
                             })
      .def_property_readonly("module_offset",
                             [](const FrameView& f) { return f.get().module_offset; })
      .def_property(
          "symbol", [](const FrameView& f) { return f.get().symbol; },
          [](const FrameView& f, std::optional<std::string> s) { f.get().symbol = std::move(s); },
          "The symbol's name; settable (a debugger's name where the engine has none).")
      .def_property(
          "symbol_offset", [](const FrameView& f) { return f.get().symbol_offset; },
          [](const FrameView& f, std::optional<uint64_t> v) { f.get().symbol_offset = v; },
          "pc - the symbol's start; settable with `symbol`.")
      .def_property_readonly(
          "registers", [](const FrameView& f) { return f.get().registers; },
          "[(DWARF number, value)] of the general registers, when kept.")
      .def(
          "text",
          [](const FrameView& f) {
            // Numbered as in its thread's text: inlined calls above count as frames (GDB's).
            const rep::ThreadReport& t = f.report->r.threads.at(f.thread);
            return rep::frame_text(f.report->r, f.get(), rep::frame_numbers(t).at(f.index));
          },
          "The frame's line: '#3  0x000055d4... in check () from /opt/app/bin/server'; with "
          "calls inlined at its pc, one line for each first (numbered as in the thread's "
          "text).")
      .def(
          "detail", [](const FrameView& f) { return rep::frame_detail(f.report->r, f.get()); },
          "The `full` lines after it: '    cfa 0x..., via eh_frame, module+0x...' and its "
          "registers.");

  pyb::class_<ThreadView>(m, "ReportThread", "A thread of a Report.")
      .def_property_readonly("tid", [](const ThreadView& t) { return t.get().tid; })
      .def_property_readonly("name", [](const ThreadView& t) { return t.get().name; })
      .def_property_readonly("crashing", [](const ThreadView& t) { return t.get().crashing; })
      .def_property_readonly(
          "stop", [](const ThreadView& t) { return std::string(to_string(t.get().stop)); })
      .def_property_readonly("detail", [](const ThreadView& t) { return t.get().detail; })
      .def_property_readonly("frames",
                             [](const ThreadView& t) {
                               std::vector<FrameView> out;
                               for (std::size_t k = 0; k < t.get().frames.size(); ++k) {
                                 out.push_back(FrameView{t.report, t.index, k});
                               }
                               return out;
                             })
      .def(
          "header",
          [](const ThreadView& t) { return rep::thread_header(t.get(), t.report->r.signal); },
          "'Thread 4242 \"name\" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):'")
      .def(
          "stop_line",
          [](const ThreadView& t) -> std::optional<std::string> {
            std::string line = rep::stop_line(t.get().stop, t.get().detail);
            if (line.empty()) return std::nullopt;
            return line;
          },
          "'Backtrace stopped: memory_fault: <detail>', or None after an outermost frame.")
      .def(
          "text",
          [](const ThreadView& t, bool header, bool full) {
            rep::TextOptions o;
            o.thread_headers = header;
            o.full = full;
            return rep::render_thread(t.report->r, t.get(), o);
          },
          pyb::arg("header") = true, pyb::arg("full") = false,
          "The thread's block of Report.text(): header line (after a blank line), frames, "
          "stop line.")
      .def("__len__", [](const ThreadView& t) { return t.get().frames.size(); });

  pyb::class_<PyReport, ReportPtr>(
      m, "Report",
      "A backtrace report: header, modules, warnings, threads; rendered as GDB-like text or "
      "as the ehbt-backtrace/1 document, exactly as the ehbt CLI prints them.")
      .def(pyb::init([](const pyb::handle& arch, std::optional<std::string> core,
                        std::optional<int64_t> pid, std::optional<std::string> executable,
                        std::optional<std::string> input_format) {
             auto p = std::make_shared<PyReport>();
             p->r.arch = std::string(arch_info(arch_from_py(arch)).name);
             p->r.core = std::move(core);
             if (pid && *pid != 0) p->r.pid = pid;
             p->r.executable = executable.value_or("");
             if (input_format && !input_format->empty()) p->r.input_format = input_format;
             return p;
           }),
           pyb::arg("arch"), pyb::arg("core") = pyb::none(), pyb::arg("pid") = pyb::none(),
           pyb::arg("executable") = pyb::none(), pyb::arg("input_format") = pyb::none())
      .def(
          "set_signal",
          [](PyReport& p, std::optional<int> number, std::optional<int> code,
             const pyb::handle& address, std::optional<int32_t> sender_pid,
             std::optional<uint32_t> sender_uid) {
            p.r.signal = rep::signal_line(number.value_or(0), code, optional_address(address),
                                          sender(sender_pid, sender_uid));
          },
          pyb::arg("number"), pyb::arg("code") = pyb::none(), pyb::arg("address") = pyb::none(),
          pyb::arg("sender_pid") = pyb::none(), pyb::arg("sender_uid") = pyb::none(),
          "The signal that stopped the target (None or 0: none). The code decides what is kept: "
          "the address only for a fault (si_code > 0 of SIGSEGV, SIGBUS, SIGILL, SIGFPE, "
          "SIGTRAP; SI_KERNEL when non-zero), the sender (si_pid, si_uid) only for a signal a "
          "process sent (si_code <= 0 but SI_TIMER, SI_SIGIO). code None: unknown (no "
          "siginfo), not SI_USER.")
      .def(
          "set_modules",
          [](PyReport& p, const pyb::handle& modules) {
            auto set = modules_from_py(modules);
            use_modules(p, set, set.get());
          },
          pyb::arg("modules"),
          "The target's modules (a ModuleSet, a list of Module, or a Target); threads added "
          "afterwards are described against them.")
      .def(
          "add_warning",
          [](PyReport& p, const pyb::handle& w, std::optional<std::size_t> at) {
            rep::add_warning(p.r, warning_from_py(w));
            // At a place of its own: a target's warnings said while the threads were added
            // (a debug file looked up late) go with the target's, before the threads' own.
            if (at && *at + 1 < p.r.warnings.size()) {
              std::rotate(p.r.warnings.begin() + static_cast<std::ptrdiff_t>(*at),
                          p.r.warnings.end() - 1, p.r.warnings.end());
            }
          },
          pyb::arg("warning"), pyb::arg("at") = pyb::none(),
          "An ehbt.Warning, or a message (kind 'other'); at: its index among the warnings "
          "(default: the last).")
      .def(
          "add_thread",
          [](PyReport& p, int64_t tid, const pyb::handle& bt, bool crashing,
             const std::string& name, const pyb::handle& symbol_of, bool lines,
             const pyb::handle& limits) {
            add_thread(p, tid, bt, crashing, name, symbol_of, lines, limits_from_py(limits));
          },
          pyb::arg("tid"), pyb::arg("backtrace"), pyb::arg("crashing") = false,
          pyb::arg("name") = "", pyb::arg("symbol_of") = pyb::none(), pyb::arg("lines") = true,
          pyb::arg("limits") = pyb::none(),
          "A thread walked by the caller (backtrace: an ehbt.Backtrace, or None for a thread "
          "shown by its header only). symbol_of(frame) -> (name, target start) | None is "
          "asked only for frames the engine has no symbol for. Without set_modules the walk's "
          "own modules are listed. lines: source lines and inlined calls from the modules' debug "
          "info (False: none looked up). limits: an ehbt.Limits for the lines "
          "(max_debug_cache_bytes=0: no debug cache, as --no-debug-cache).")
      .def_property_readonly("arch", [](const PyReport& p) { return p.r.arch; })
      .def_property_readonly("core", [](const PyReport& p) { return p.r.core; })
      .def_property_readonly("pid", [](const PyReport& p) { return p.r.pid; })
      .def_property_readonly("executable", [](const PyReport& p) { return p.r.executable; })
      .def_property_readonly("input_format", [](const PyReport& p) { return p.r.input_format; })
      .def_property_readonly("threads",
                             [](const ReportPtr& p) {
                               std::vector<ThreadView> out;
                               for (std::size_t i = 0; i < p->r.threads.size(); ++i) {
                                 out.push_back(ThreadView{p, i});
                               }
                               return out;
                             })
      .def_property_readonly(
          "exit_status", [](const PyReport& p) { return rep::exit_status(p.r); },
          "0 when every thread reached its outermost frame or the frame cap, else 1 (the "
          "CLI's exit status).")
      .def_property_readonly("warnings", [](const PyReport& p) { return p.r.warnings; })
      .def(
          "text",
          [](const PyReport& p, bool header, bool full) {
            rep::TextOptions o;
            o.header = header;
            o.full = full;
            return rep::render_text(p.r, o);
          },
          pyb::arg("header") = true, pyb::arg("full") = false,
          "The text `ehbt core --all-threads` prints. header=False: the thread blocks only "
          "(the debugger commands'); full=True: after each frame how it was found (cfa, "
          "source, module offset) and its registers.")
      .def(
          "json",
          [](const PyReport& p, bool compact) {
            rep::JsonOptions o;
            o.compact = compact;
            return rep::render_json(p.r, o);
          },
          pyb::arg("compact") = false,
          "The ehbt-backtrace/1 document, newline-terminated: indented as the CLI prints it, "
          "or on one line (compact=True, as the debugger commands print it).")
      .def(
          "to_dict", [](const PyReport& p) { return document_dict(p.r); },
          "The document as a dict, equal to json.loads(self.json()) (built without the text).")
      .def("__repr__", [](const PyReport& p) {
        return "Report(" + p.r.arch + ", " + std::to_string(p.r.threads.size()) + " threads)";
      });

  m.def(
      "target_report",
      [](const std::shared_ptr<PyTarget>& target, const pyb::handle& threads,
         const pyb::handle& options, const pyb::handle& limits, std::optional<std::string> core,
         bool registers, bool lines) {
        return target_report(target, threads, options, limits, core, registers, lines);
      },
      pyb::arg("target"), pyb::arg("threads") = "crashing", pyb::arg("options") = pyb::none(),
      pyb::arg("limits") = pyb::none(), pyb::arg("core") = pyb::none(),
      pyb::arg("registers") = false, pyb::arg("lines") = true,
      "The report of a Target, unwound without the GIL: threads 'crashing' (the crashing "
      "thread, else the first), 'all', or a list of indexes. core names the core in the "
      "report (default: the target's path; a live process is named by its pid). registers: "
      "keep each frame's registers for text(full=True). lines: source lines and inlined calls "
      "from the modules' debug info (False: none looked up, as --no-lines).");
}

}  // namespace ehbt::py
