// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe dump`: every function of an .sframe section decoded, rendered as text (close
// to binutils' `objdump --sframe`) or as the ehbt-sframe/1 JSON document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::cli {

struct SframeDumpError {
  sframe::Error error;
  std::optional<uint32_t> function;  // FDE index, when the error belongs to one
};

struct SframeDump {
  uint64_t section_addr = 0;
  sframe::Header header;
  std::vector<sframe::Function> functions;  // in FDE order; those that decoded
  std::vector<uint32_t> indices;            // FDE index of each of `functions`
  std::vector<SframeDumpError> errors;
};

// Decodes every function of `table`. A function that fails to decode is recorded in `errors`
// and left out. FDEs whose function starts go backwards are reported as `unsorted` (the
// kernel rejects such a section when its search meets them), as are the order errors the
// table's own lookup finds when searching for each function's start.
SframeDump dump_sframe(const sframe::Table& table, const SectionRef& section);

// Text: the header, then per function its line and a table of rows (pc, CFA, FP, RA), then
// any errors.
std::string render_dump_text(const std::string& file, const SframeDump& dump);
// The ehbt-sframe/1 document (see `ehbt sframe --help`).
std::string render_dump_json(const std::string& file, const SframeDump& dump);

// Names shared with the other renderings.
std::string_view abi_name(sframe::Abi abi);
std::vector<std::string> flag_names(uint8_t flags);

}  // namespace ehbt::cli
