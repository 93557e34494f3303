// SPDX-License-Identifier: Apache-2.0
// The unwinder and its results. Stop reasons and frame sources cross into Python as their
// lowercase names ("memory_fault", "eh_frame"), the same words the JSON format uses.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ehbt/perf_map.hpp"
#include "py_memory.hpp"

namespace ehbt::py {

namespace {

constexpr std::pair<const char*, SourcePreference> kSourcePrefs[] = {
    {"auto", SourcePreference::Auto},
    {"eh_frame", SourcePreference::EhFrame},
    {"sframe", SourcePreference::SFrame},
    {"frame_pointer", SourcePreference::FramePointer},
};

SourcePreference source_pref(const std::string& name) {
  for (const auto& [n, p] : kSourcePrefs) {
    if (name == n) return p;
  }
  throw pyb::value_error("unknown unwind source '" + name +
                         "' (auto, eh_frame, sframe, frame_pointer)");
}

// The SFrame version a conversion writes: 2 or 3.
uint8_t sframe_version(int v) {
  if (v != 2 && v != 3) {
    throw pyb::value_error("sframe_version must be 2 or 3, not " + std::to_string(v));
  }
  return static_cast<uint8_t>(v);
}

std::string source_pref_name(SourcePreference p) {
  for (const auto& [n, q] : kSourcePrefs) {
    if (p == q) return n;
  }
  return "auto";
}

}  // namespace

// What a walk's frames point into. A ModuleSet argument is copied, so that the caller may
// change its set afterwards without invalidating the frames; a Target's set is shared.
std::shared_ptr<const ModuleSet> modules_from_py(const pyb::handle& obj) {
  if (obj.is_none()) return std::make_shared<ModuleSet>();
  if (pyb::isinstance<PyTarget>(obj)) {
    auto t = obj.cast<std::shared_ptr<PyTarget>>();
    return std::shared_ptr<const ModuleSet>(t, &t->target->modules());
  }
  if (pyb::isinstance<ModuleSet>(obj))
    return std::make_shared<ModuleSet>(obj.cast<const ModuleSet&>());
  auto set = std::make_shared<ModuleSet>();
  for (const auto& item : obj) set->add(item.cast<const Module&>());
  return set;
}

namespace {

// Symbol covering a frame: (name, target start, size), or nothing.
std::optional<std::tuple<std::string, uint64_t, uint64_t>> frame_symbol(const Frame& f) {
  if (f.jit_entry != nullptr) {
    return std::make_tuple(f.jit_entry->name, f.jit_entry->start, f.jit_entry->size);
  }
  if (f.module == nullptr || !f.module->image) return std::nullopt;
  auto sym = f.module->image->symbolize(f.module->to_link(f.lookup_pc()));
  if (!sym) return std::nullopt;
  return std::make_tuple(sym->name, sym->start + f.module->bias, sym->size);
}

struct PyStepResult {
  bool ok = false;
  uint64_t cfa = 0;
  std::shared_ptr<Frame> caller;
  std::string stop;
  std::string detail;
};

// A single frame handed out on its own, owning the set its module pointer points into.
std::shared_ptr<Frame> lone_frame(Frame frame, std::shared_ptr<const ModuleSet> set) {
  auto owned = std::make_shared<OwnedBacktrace>();
  owned->bt.frames.push_back(std::move(frame));
  owned->modules = set.get();
  owned->owner = std::move(set);
  return frame_view(owned, 0);
}

template <class Fn>
auto run_engine(MemoryArg& mem, Fn&& fn) {
  auto lock = mem.lock();
  if (mem.needs_gil()) return fn();
  pyb::gil_scoped_release nogil;
  return fn();
}

}  // namespace

std::shared_ptr<Frame> frame_view(const std::shared_ptr<OwnedBacktrace>& owner, std::size_t i) {
  return std::shared_ptr<Frame>(owner, &owner->bt.frames[i]);
}

UnwindOptions options_from_py(const pyb::handle& obj) {
  if (obj.is_none()) return {};
  if (pyb::isinstance<pyb::dict>(obj)) {
    UnwindOptions o;
    for (auto [key, value] : obj.cast<pyb::dict>()) {
      std::string k = pyb::str(key);
      if (k == "source")
        o.source = source_pref(value.cast<std::string>());
      else if (k == "use_debug_frame")
        o.use_debug_frame = value.cast<bool>();
      else if (k == "frame_pointer_fallback")
        o.frame_pointer_fallback = value.cast<bool>();
      else if (k == "sframe_from_eh_frame")
        o.sframe_from_eh_frame = value.cast<bool>();
      else if (k == "sframe_version")
        o.sframe_version = sframe_version(value.cast<int>());
      else
        throw pyb::type_error("UnwindOptions has no field '" + k + "'");
    }
    return o;
  }
  return obj.cast<UnwindOptions>();
}

void bind_unwinder(pyb::module_& m) {
  pyb::class_<UnwindOptions>(m, "UnwindOptions", "Which unwind tables a walk may use.")
      .def(
          pyb::init([](const std::string& source, bool use_debug_frame, bool frame_pointer_fallback,
                       bool sframe_from_eh_frame, int sframe_version_) {
            UnwindOptions o;
            o.source = source_pref(source);
            o.use_debug_frame = use_debug_frame;
            o.frame_pointer_fallback = frame_pointer_fallback;
            o.sframe_from_eh_frame = sframe_from_eh_frame;
            o.sframe_version = sframe_version(sframe_version_);
            return o;
          }),
          pyb::arg("source") = "auto", pyb::arg("use_debug_frame") = true,
          pyb::arg("frame_pointer_fallback") = true, pyb::arg("sframe_from_eh_frame") = false,
          pyb::arg("sframe_version") = 3)
      .def_property(
          "source", [](const UnwindOptions& o) { return source_pref_name(o.source); },
          [](UnwindOptions& o, const std::string& s) { o.source = source_pref(s); })
      .def_readwrite("use_debug_frame", &UnwindOptions::use_debug_frame)
      .def_readwrite("frame_pointer_fallback", &UnwindOptions::frame_pointer_fallback)
      // Additions: walk through SFrame converted from each module's .eh_frame (version 2|3).
      .def_readwrite("sframe_from_eh_frame", &UnwindOptions::sframe_from_eh_frame)
      .def_property(
          "sframe_version", [](const UnwindOptions& o) { return int{o.sframe_version}; },
          [](UnwindOptions& o, int v) { o.sframe_version = sframe_version(v); });

  pyb::class_<Frame, std::shared_ptr<Frame>>(m, "Frame", "One frame of a walk.")
      .def_property_readonly("pc", [](const Frame& f) { return f.pc; })
      .def_property_readonly("cfa", [](const Frame& f) { return f.cfa; })
      .def_property_readonly("source",
                             [](const Frame& f) { return std::string(to_string(f.source)); })
      .def_property_readonly("exact_pc", [](const Frame& f) { return f.exact_pc; })
      .def_property_readonly("signal_trampoline",
                             [](const Frame& f) { return f.signal_trampoline; })
      .def_property_readonly("lookup_pc", &Frame::lookup_pc)
      .def_property_readonly(
          "jit", [](const Frame& f) { return f.jit; },
          "True when the pc is JIT code: executable memory no module covers.")
      .def_property_readonly(
          "regs", [](const Frame& f) -> RegisterSet { return f.regs.view(); },
          "The registers of this frame as recovered (a copy).")
      .def_property_readonly(
          "module",
          [](const std::shared_ptr<Frame>& self) { return module_view(self, self->module); },
          "The Module covering pc, or None.")
      .def_property_readonly(
          "module_offset",
          [](const Frame& f) -> std::optional<uint64_t> {
            if (f.module == nullptr) return std::nullopt;
            return f.module->to_link(f.pc);
          },
          "pc - bias: the address in the module's own ELF address space, or None.")
      .def("symbolize", &frame_symbol,
           "(name, start, size) of the symbol covering the frame, start as a target address; "
           "None when no symbol covers it.")
      .def("__repr__", [](const Frame& f) {
        return "Frame(pc=" + hex(f.pc) + ", cfa=" + hex(f.cfa) + ", " +
               std::string(to_string(f.source)) + ")";
      });

  pyb::class_<OwnedBacktrace, std::shared_ptr<OwnedBacktrace>>(
      m, "Backtrace", "Frames of one walk and why it stopped.")
      .def_property_readonly("frames",
                             [](const std::shared_ptr<OwnedBacktrace>& self) {
                               std::vector<std::shared_ptr<Frame>> out;
                               out.reserve(self->bt.frames.size());
                               for (std::size_t i = 0; i < self->bt.frames.size(); ++i) {
                                 out.push_back(frame_view(self, i));
                               }
                               return out;
                             })
      .def_property_readonly(
          "stop", [](const OwnedBacktrace& b) { return std::string(to_string(b.bt.stop)); },
          "Why the walk ended: outermost, max_frames, no_module, ...")
      .def_property_readonly("detail", [](const OwnedBacktrace& b) { return b.bt.detail; })
      .def_property_readonly(
          "complete",
          [](const OwnedBacktrace& b) {
            return b.bt.stop == StopReason::Outermost || b.bt.stop == StopReason::MaxFrames;
          },
          "True when the walk reached an outermost frame or the frame cap.")
      .def("__len__", [](const OwnedBacktrace& b) { return b.bt.frames.size(); })
      .def("__getitem__",
           [](const std::shared_ptr<OwnedBacktrace>& self, int64_t i) {
             auto n = static_cast<int64_t>(self->bt.frames.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw pyb::index_error("frame index out of range");
             return frame_view(self, static_cast<std::size_t>(i));
           })
      .def("__repr__", [](const OwnedBacktrace& b) {
        return "Backtrace(" + std::to_string(b.bt.frames.size()) + " frames, " +
               std::string(to_string(b.bt.stop)) + ")";
      });

  pyb::class_<PyStepResult>(m, "StepResult", "One step: the caller frame, or why not.")
      .def_readonly("ok", &PyStepResult::ok)
      .def_readonly("cfa", &PyStepResult::cfa)
      .def_readonly("caller", &PyStepResult::caller)
      .def_readonly("stop", &PyStepResult::stop)
      .def_readonly("detail", &PyStepResult::detail)
      .def("__bool__", [](const PyStepResult& r) { return r.ok; });

  pyb::class_<Unwinder>(m, "Unwinder", "The step loop.")
      .def(pyb::init([](const pyb::handle& limits) { return Unwinder(limits_from_py(limits)); }),
           pyb::arg("limits") = pyb::none())
      .def_property_readonly("limits", &Unwinder::limits)
      .def(
          "unwind",
          [](const Unwinder& u, const RegisterSet& regs, const pyb::handle& memory,
             const pyb::handle& modules, const pyb::handle& options, bool cache_pages,
             bool module_files, const pyb::handle& regions) {
            auto owned = std::make_shared<OwnedBacktrace>();
            auto set = modules_from_py(modules);
            owned->owner = set;
            owned->modules = set.get();
            UnwindOptions opts = options_from_py(options);
            MemoryArg mem(memory, cache_pages, regions);
            ModuleFileMemory files(*set);
            LayeredMemory layered;
            layered.push(&mem.get());
            layered.push(&files);
            Memory& use = module_files ? static_cast<Memory&>(layered) : mem.get();
            owned->bt = run_engine(mem, [&] { return u.unwind(regs, use, *set, opts); });
            mem.rethrow_interrupt();
            return owned;
          },
          pyb::arg("regs"), pyb::arg("memory"), pyb::arg("modules") = pyb::none(),
          pyb::arg("options") = pyb::none(), pyb::arg("cache_pages") = true,
          pyb::arg("module_files") = false, pyb::arg("regions") = pyb::none(),
          "Walks from regs. memory: a callable read(addr, size) -> bytes (an exception or a "
          "short result is a fault), or a Target. modules: a ModuleSet, a list of Modules, or "
          "a Target. module_files: where memory faults inside a module, read the module's "
          "file instead (code a core left out). regions: the target's mappings as (start, "
          "end) pairs, for a callable memory (a Target knows its own): a stack scan reads no "
          "word past the mapping that holds the frame's sp, and a frame found without a table "
          "keeps its CFA in it. Without them no such bound is known.")
      .def(
          "first_frame",
          [](const Unwinder& u, const RegisterSet& regs, const pyb::handle& modules) {
            auto set = modules_from_py(modules);
            return lone_frame(u.first_frame(regs, *set), set);
          },
          pyb::arg("regs"), pyb::arg("modules") = pyb::none())
      .def(
          "step",
          [](const Unwinder& u, const Frame& frame, const pyb::handle& memory,
             const pyb::handle& modules, const pyb::handle& options, const pyb::handle& regions) {
            auto set = modules_from_py(modules);
            UnwindOptions opts = options_from_py(options);
            // The frame may come from another walk: point its module into this set.
            Frame from = frame;
            from.module = set->find(from.lookup_pc());
            from.classify_jit(*set);
            MemoryArg mem(memory, /*cache_pages=*/false, regions);
            auto r = run_engine(mem, [&] { return u.step(from, mem.get(), *set, opts); });
            mem.rethrow_interrupt();
            PyStepResult out;
            if (r) {
              out.ok = true;
              out.cfa = r->cfa;
              out.caller = lone_frame(r->caller, set);
            } else {
              out.stop = std::string(to_string(r.error().reason));
              out.detail = r.error().detail;
              out.cfa = r.error().cfa;
            }
            return out;
          },
          pyb::arg("frame"), pyb::arg("memory"), pyb::arg("modules") = pyb::none(),
          pyb::arg("options") = pyb::none(), pyb::arg("regions") = pyb::none());
}

}  // namespace ehbt::py
