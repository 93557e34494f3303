// SPDX-License-Identifier: Apache-2.0
// Shared declarations of the pybind11 module `ehbt._ehbt`: the binding functions of each area
// and the small owner types that keep engine objects alive while Python holds views into them.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ehbt/arch.hpp"
#include "ehbt/core.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::py {

namespace pyb = pybind11;

// Raised as ehbt.Error (a RuntimeError) when the engine reports an unusable input.
class EhbtError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One registration function per area, called in this order from the module init.
void bind_basics(pyb::module_& m);       // Arch, Limits, RegisterSet
void bind_image(pyb::module_& m);        // Segment, Symbol, Image, Module, ModuleSet
void bind_unwinder(pyb::module_& m);     // UnwindOptions, Frame, Backtrace, StepResult, Unwinder
void bind_core(pyb::module_& m);         // ImageStore, Thread, Signal, Target, open_core, ...
void bind_content_key(pyb::module_& m);  // content_key, ContentKeyJob
void bind_report(pyb::module_& m);       // Report, target_report, the report's names

// Arch accepted either as the bound enum or as its name ("x86_64", "arm64", and the debuggers'
// spellings report::arch_from_alias knows: "i386:x86-64", "s390:64-bit", ...).
Arch arch_from_py(const pyb::handle& obj);

// A walk's result together with what its frames point into: Frame::module points into a
// ModuleSet, which is either a private snapshot taken at unwind time or a Target's own set.
struct OwnedBacktrace {
  Backtrace bt;
  std::shared_ptr<const void> owner;
  const ModuleSet* modules = nullptr;  // the set the frames point into (kept by `owner`)
};

// A target as Python holds it: the engine object plus what it was opened with. Calls into the
// target are serialised, because a live process may only be read by one thread at a time.
struct PyTarget {
  std::unique_ptr<Target> target;
  std::string path;  // core file, or "" for a live process
  int pid = 0;       // live process, or 0 for a core
  Limits limits;
  std::shared_ptr<ImageStore> store;  // kept alive: the target's images may live in it
  std::mutex mu;
};

// Unwinds one thread of a target without touching Python (the caller releases the GIL).
std::shared_ptr<OwnedBacktrace> unwind_target_thread(const std::shared_ptr<PyTarget>& target,
                                                     std::size_t index, const Limits& limits,
                                                     const UnwindOptions& options);

// Frames and modules handed to Python share ownership with the object they live in.
std::shared_ptr<Frame> frame_view(const std::shared_ptr<OwnedBacktrace>& owner, std::size_t i);
std::shared_ptr<Module> module_view(const std::shared_ptr<const void>& owner, const Module* m);

// What a walk's frames point into: None (empty), a ModuleSet (copied), a list of Modules or a
// Target (its own set, shared).
std::shared_ptr<const ModuleSet> modules_from_py(const pyb::handle& obj);

// Converts an UnwindOptions argument: None, an UnwindOptions, or a dict of its fields.
UnwindOptions options_from_py(const pyb::handle& obj);
// Converts a Limits argument: None (defaults), a Limits, or a dict of its fields.
Limits limits_from_py(const pyb::handle& obj, const Limits& fallback = {});

// Lowercase hex with 0x, the way the JSON format writes addresses.
std::string hex(uint64_t value);

}  // namespace ehbt::py
