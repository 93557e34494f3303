// SPDX-License-Identifier: Apache-2.0
// The extension module ehbt._ehbt: the engine's public API for Python. The `ehbt` package
// re-exports it and adds the pure-Python helpers (report building, register names).
#include "bindings.hpp"

PYBIND11_MODULE(_ehbt, m) {
  namespace py = ehbt::py;
  m.doc() = "ehbt engine bindings: images, modules, registers, the unwinder, cores, processes";
  pybind11::register_exception<py::EhbtError>(m, "Error", PyExc_RuntimeError);
  py::bind_basics(m);
  py::bind_image(m);
  py::bind_unwinder(m);
  py::bind_core(m);
  m.attr("STOP_REASONS") =
      pybind11::make_tuple("outermost", "max_frames", "no_module", "no_unwind_info", "memory_fault",
                           "bad_unwind_info", "unsupported", "no_progress", "bad_pc");
  m.attr("FRAME_SOURCES") = pybind11::make_tuple("context", "eh_frame", "debug_frame", "sframe",
                                                 "signal", "frame_pointer", "scan", "go_pclntab");
}
