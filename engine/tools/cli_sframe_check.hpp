// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe check`: an image's .sframe compared row by row with its .eh_frame
// (sframe::check_against_cfi), rendered with symbol names.
#pragma once

#include <cstdint>
#include <string>

#include "ehbt/image.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::cli {

// "name+0x<off>" for `pc`: the symbol covering it, else the one covering `function`, else
// the function's address ("0x401000+0x4").
std::string symbol_offset(const Image& image, uint64_t function, uint64_t pc);

// Text: one line per disagreement, `<symbol>+0x<off> (0x<pc>): <what>`, one per error, then
// a summary line.
std::string render_check_text(const std::string& file, const Image& image,
                              const sframe::CheckReport& report);
// {"format": "ehbt-sframe-check/1", "file", "functions", "rows", "eh_frame_only",
//  "sframe_only", "disagreements": [{"function", "symbol", "pc", "what"}],
//  "errors": [{"code", "where"}]}
std::string render_check_json(const std::string& file, const Image& image,
                              const sframe::CheckReport& report);

}  // namespace ehbt::cli
