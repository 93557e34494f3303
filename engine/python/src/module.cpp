// SPDX-License-Identifier: Apache-2.0
// The extension module ehbt._ehbt: the engine's public API for Python. The `ehbt` package
// re-exports it; the report (text, JSON, names) is the engine's, bound in bind_report.cpp.
#include "bindings.hpp"

PYBIND11_MODULE(_ehbt, m) {
  namespace py = ehbt::py;
  m.doc() = "ehbt engine bindings: images, modules, registers, the unwinder, cores, processes";
  pybind11::register_exception<py::EhbtError>(m, "Error", PyExc_RuntimeError);
  py::bind_basics(m);
  py::bind_image(m);
  py::bind_unwinder(m);
  py::bind_core(m);
  py::bind_content_key(m);
  py::bind_report(m);  // also STOP_REASONS and FRAME_SOURCES, from the report's names
}
