// SPDX-License-Identifier: Apache-2.0
// Targets (cores and live processes), their threads and signal, and the shared image store.
// Unwinding a target's thread runs entirely in C++ with the GIL released.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "bindings.hpp"

namespace ehbt::py {

namespace {

using TargetPtr = std::shared_ptr<PyTarget>;

Target& live(PyTarget& t) {
  if (!t.target) throw pyb::value_error("target is closed");
  return *t.target;
}

TargetOptions target_options(const std::vector<std::string>& sysroots, const std::string& exe,
                             const Limits& limits, const std::shared_ptr<ImageStore>& store,
                             const std::vector<std::string>& debug_dirs = {}) {
  TargetOptions o;
  o.sysroots = sysroots;
  o.debug_dirs = debug_dirs;
  o.exe = exe;
  o.limits = limits;
  o.store = store.get();
  return o;
}

TargetPtr wrap(Expected<std::unique_ptr<Target>, std::string> r, std::string path, int pid,
               const Limits& limits, std::shared_ptr<ImageStore> store) {
  if (!r) throw EhbtError(r.error());
  auto t = std::make_shared<PyTarget>();
  t->target = std::move(r).value();
  t->path = std::move(path);
  t->pid = pid;
  t->limits = limits;
  t->store = std::move(store);
  return t;
}

// Target memory at `addr`, at most `size` bytes (capped at 1 GiB); shorter where it faults.
pyb::bytes read_memory(PyTarget& t, uint64_t addr, std::size_t size) {
  std::vector<std::byte> buf;
  {
    pyb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(t.mu);
    buf = read_prefix(live(t).memory(), addr, std::min<std::size_t>(size, 1u << 30));
  }
  return pyb::bytes(reinterpret_cast<const char*>(buf.data()), buf.size());
}

}  // namespace

std::shared_ptr<OwnedBacktrace> unwind_target_thread(const TargetPtr& target, std::size_t index,
                                                     const Limits& limits,
                                                     const UnwindOptions& options) {
  std::lock_guard<std::mutex> lock(target->mu);
  Target& t = live(*target);
  if (index >= t.threads().size()) throw pyb::index_error("thread index out of range");
  auto owned = std::make_shared<OwnedBacktrace>();
  owned->owner = target;
  owned->modules = &t.modules();
  Unwinder unwinder(limits);
  owned->bt = unwinder.unwind(t.threads()[index].regs, t.memory(), t.modules(), options);
  return owned;
}

void bind_core(pyb::module_& m) {
  m.def(
      "signal_name", [](int number) { return signal_name(number); }, pyb::arg("number"),
      "'SIGSEGV' for 11; 'SIG<n>' when unknown.");
  m.def(
      "signal_has_fault_address", [](int number) { return signal_has_fault_address(number); },
      pyb::arg("number"),
      "Whether the siginfo of signal `number` holds a fault address (si_addr): SIGILL, "
      "SIGTRAP, SIGBUS, SIGFPE, SIGSEGV.");

  pyb::class_<ImageStore, std::shared_ptr<ImageStore>>(
      m, "ImageStore",
      "Opened images shared across targets (one parse of libc per batch): a least-recently-"
      "used cache of at most max_images images and max_bytes bytes of their files (0: no cap).")
      .def(pyb::init([](std::optional<uint64_t> max_images, std::optional<uint64_t> max_bytes) {
             Limits caps;
             if (max_images)
               caps.max_stored_images =
                   static_cast<uint32_t>(std::min<uint64_t>(*max_images, UINT32_MAX));
             if (max_bytes) caps.max_stored_image_bytes = *max_bytes;
             return std::make_shared<ImageStore>(caps);
           }),
           pyb::arg("max_images") = pyb::none(), pyb::arg("max_bytes") = pyb::none(),
           "ImageStore(max_images=None, max_bytes=None): None keeps Limits' default "
           "(max_stored_images, max_stored_image_bytes).")
      .def("__len__", &ImageStore::size)
      .def_property_readonly("bytes", &ImageStore::bytes, "File bytes of the images held.")
      .def_property_readonly("max_images", &ImageStore::max_images)
      .def_property_readonly("max_bytes", &ImageStore::max_bytes);

  pyb::class_<ThreadState>(m, "Thread", "A thread of a target: id, registers, signal, name.")
      .def_readonly("tid", &ThreadState::tid)
      .def_readonly("regs", &ThreadState::regs)
      .def_readonly("signal", &ThreadState::signal)
      .def_readonly("name", &ThreadState::name)
      .def("__repr__", [](const ThreadState& t) {
        return "Thread(tid=" + std::to_string(t.tid) + ", pc=" + hex(t.regs.pc()) + ")";
      });

  pyb::class_<SignalSender>(m, "SignalSender", "The process that sent a signal: si_pid and si_uid.")
      .def_readonly("pid", &SignalSender::pid)
      .def_readonly("uid", &SignalSender::uid)
      .def("__repr__", [](const SignalSender& s) {
        return "SignalSender(pid=" + std::to_string(s.pid) + ", uid=" + std::to_string(s.uid) + ")";
      });

  pyb::class_<SignalInfo>(m, "Signal", "The signal that stopped the target.")
      .def_readonly("number", &SignalInfo::number)
      .def_readonly("code", &SignalInfo::code, "si_code; None when the target does not say.")
      .def_readonly("address", &SignalInfo::address,
                    "The fault address; None unless the signal carries one (a fault the kernel "
                    "raised, not a signal a process sent).")
      .def_readonly("sender", &SignalInfo::sender,
                    "A SignalSender for a signal a process sent (SI_USER, SI_TKILL, SI_QUEUE, "
                    "...), else None.")
      .def_property_readonly("name", [](const SignalInfo& s) { return signal_name(s.number); })
      .def("__repr__", [](const SignalInfo& s) {
        return "Signal(" + signal_name(s.number) +
               ", code=" + (s.code ? std::to_string(*s.code) : std::string("None")) + ")";
      });

  pyb::class_<Warning>(m, "Warning",
                       "Something the target could not tell or the engine could not find: "
                       "kind (missing_file, mismatched_file, unreadable_file, "
                       "executable_mismatch, truncated_core, no_signal_info, debuginfod_failed), "
                       "message, path ('' when none), option ('--exe', '--sysroot', "
                       "'--debuginfod' or '').")
      .def_readonly("kind", &Warning::kind)
      .def_readonly("message", &Warning::message)
      .def_readonly("path", &Warning::path)
      .def_readonly("option", &Warning::option)
      .def("__str__", &Warning::line, "The message with the option that would help.")
      .def(
          "as_dict",
          [](const Warning& w) {
            auto or_none = [](const std::string& s) -> pyb::object {
              if (s.empty()) return pyb::none();
              return pyb::str(s);
            };
            pyb::dict d;
            d["kind"] = w.kind;
            d["message"] = w.message;
            d["path"] = or_none(w.path);
            d["option"] = or_none(w.option);
            return d;
          },
          "The warning as in ehbt-backtrace/1: {kind, message, path, option}, None for "
          "an empty path or option.")
      .def("__repr__",
           [](const Warning& w) { return "Warning(" + w.kind + ": " + w.line() + ")"; });

  pyb::class_<PyTarget, TargetPtr>(m, "Target", "A core file or a live process.")
      .def_readonly("path", &PyTarget::path, "The core file; '' for a live process.")
      .def_readonly("pid", &PyTarget::pid, "The live process; 0 for a core.")
      .def_readonly("limits", &PyTarget::limits)
      .def_property_readonly("arch", [](PyTarget& t) { return live(t).arch(); })
      .def_property_readonly("threads", [](PyTarget& t) { return live(t).threads(); })
      .def_property_readonly(
          "crashing_thread", [](PyTarget& t) { return live(t).crashing_thread(); },
          "Index into threads of the thread that took the signal.")
      .def_property_readonly("signal", [](PyTarget& t) { return live(t).signal(); })
      .def_property_readonly(
          "snapshot_signal", [](PyTarget& t) { return live(t).snapshot_signal(); },
          "A snapshot (a core gcore wrote while the process ran on): the signal its threads "
          "were stopped with (signal is then None: no thread crashed); else None.")
      .def_property_readonly(
          "warnings", [](PyTarget& t) { return live(t).warnings(); },
          "What could not be known (missing, mismatched or unreadable files, a truncated core, "
          "no signal details, failed fetches): a list of Warning, each once.")
      .def_property_readonly("executable", [](PyTarget& t) { return live(t).executable(); })
      .def_property_readonly(
          "input_format",
          [](PyTarget& t) -> std::optional<std::string> {
            const std::string& f = live(t).input_format();
            if (f.empty()) return std::nullopt;
            return f;
          },
          "What the target was read from: \"elf_core\" or \"minidump\"; None for a live "
          "process.")
      .def_property_readonly(
          "modules", [](PyTarget& t) { return live(t).modules(); },
          "A copy of the target's ModuleSet.")
      .def_property_readonly("auxv", [](PyTarget& t) { return live(t).auxv(); })
      .def("read", &read_memory, pyb::arg("addr"), pyb::arg("size"),
           "Target memory; shorter than asked where it faults. Usable as a memory callable.")
      .def("__call__", &read_memory)
      .def(
          "unwind_thread",
          [](const TargetPtr& t, std::size_t index, const pyb::handle& options,
             const pyb::handle& limits) {
            UnwindOptions opts = options_from_py(options);
            Limits l = limits_from_py(limits, t->limits);
            pyb::gil_scoped_release nogil;
            return unwind_target_thread(t, index, l, opts);
          },
          pyb::arg("index"), pyb::arg("options") = pyb::none(), pyb::arg("limits") = pyb::none(),
          "Backtrace of threads[index], computed in C++ without the GIL.")
      .def(
          "unwind_all",
          [](const TargetPtr& t, const pyb::handle& options, const pyb::handle& limits) {
            UnwindOptions opts = options_from_py(options);
            Limits l = limits_from_py(limits, t->limits);
            std::vector<std::shared_ptr<OwnedBacktrace>> out;
            pyb::gil_scoped_release nogil;
            std::size_t n = 0;
            {
              std::lock_guard<std::mutex> lock(t->mu);
              n = live(*t).threads().size();
            }
            for (std::size_t i = 0; i < n; ++i) out.push_back(unwind_target_thread(t, i, l, opts));
            return out;
          },
          pyb::arg("options") = pyb::none(), pyb::arg("limits") = pyb::none())
      .def(
          "close",
          [](PyTarget& t) {
            pyb::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(t.mu);
            t.target.reset();
          },
          "Releases the core (or detaches from the process). Backtraces keep working.")
      .def_property_readonly("closed", [](const PyTarget& t) { return !t.target; })
      .def("__enter__", [](const TargetPtr& t) { return t; })
      .def("__exit__", [](PyTarget& t, const pyb::args&) {
        pyb::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(t.mu);
        t.target.reset();
      });

  m.def(
      "open_core",
      [](const std::string& path, const std::vector<std::string>& sysroots, const std::string& exe,
         const pyb::handle& limits, std::shared_ptr<ImageStore> store,
         const std::vector<std::string>& debug_dirs, bool debuginfod, double debuginfod_timeout,
         const std::string& perf_map) {
        Limits l = limits_from_py(limits);
        TargetOptions o = target_options(sysroots, exe, l, store, debug_dirs);
        o.perf_map = perf_map;
        o.debuginfod = debuginfod;
        if (debuginfod_timeout > 0) o.debuginfod_timeout = debuginfod_timeout;
        Expected<std::unique_ptr<Target>, std::string> r = unexpected(std::string());
        {
          pyb::gil_scoped_release nogil;
          r = open_core(path, o);
        }
        return wrap(std::move(r), path, 0, l, std::move(store));
      },
      pyb::arg("path"), pyb::arg("sysroots") = std::vector<std::string>{}, pyb::arg("exe") = "",
      pyb::arg("limits") = pyb::none(), pyb::arg("store") = nullptr,
      pyb::arg("debug_dirs") = std::vector<std::string>{}, pyb::arg("debuginfod") = false,
      pyb::arg("debuginfod_timeout") = 30.0, pyb::arg("perf_map") = "",
      "Opens an ELF core, plain or compressed (zstd, xz, lz4, gzip: told by content).\n"
      "debug_dirs: directories searched first for separate debug files (like --debug-dir).\n"
      "debuginfod: fetch missing files by build-id (also on when DEBUGINFOD_URLS is set);\n"
      "debuginfod_timeout: seconds all fetches of this core may take together.\n"
      "perf_map: a perf map file (START SIZE NAME lines) naming JIT code (like --perf-map).\n"
      "Raises ehbt.Error (one line saying why) when unusable.");

  m.def(
      "attach_process",
      [](int pid, const std::vector<std::string>& sysroots, const pyb::handle& limits,
         std::shared_ptr<ImageStore> store, const std::string& perf_map) {
        Limits l = limits_from_py(limits);
        TargetOptions o = target_options(sysroots, "", l, store);
        o.perf_map = perf_map;
        Expected<std::unique_ptr<Target>, std::string> r = unexpected(std::string());
        {
          pyb::gil_scoped_release nogil;
          r = attach_process(pid, o);
        }
        return wrap(std::move(r), "", pid, l, std::move(store));
      },
      pyb::arg("pid"), pyb::arg("sysroots") = std::vector<std::string>{},
      pyb::arg("limits") = pyb::none(), pyb::arg("store") = nullptr, pyb::arg("perf_map") = "",
      "Attaches to every thread of a live process; close() (or the last reference) detaches.\n"
      "perf_map: names for JIT code (default: /tmp/perf-PID.map when it exists).");
}

}  // namespace ehbt::py
