// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe dump|check`: an ELF file opened and its .sframe parsed, or why that failed.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::cli {

struct LoadedSframe {
  std::shared_ptr<Image> image;
  SectionRef section;                  // the bytes the table reads (owned by the image)
  std::optional<sframe::Table> table;  // set when the section parsed
};

// Opens `file` and parses its .sframe (the section of that name, else PT_GNU_SFRAME, as
// Image finds it). On failure returns the one-line reason ("no .sframe section",
// ".sframe: bad_magic at section offset 0x0", or the image's own error).
Expected<LoadedSframe, std::string> load_sframe(const std::string& file, const Limits& limits);

}  // namespace ehbt::cli
