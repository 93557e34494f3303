// SPDX-License-Identifier: Apache-2.0
// Report.to_dict: the report's document (report::render_document) built as Python objects.
#pragma once

#include <pybind11/pybind11.h>

#include "ehbt/report.hpp"

namespace ehbt::py {

// The ehbt-backtrace/1 document of `report` as dicts, lists, str, int, bool and None: equal to
// json.loads(render_json(report)), without the text and its parse (a stack overflow's
// thousand frames: most of what analysing such a core costs ehbt-triage's workers).
pybind11::object document_dict(const report::BacktraceReport& report);

}  // namespace ehbt::py
