// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe convert`: an image's .eh_frame turned into an .sframe section
// (sframe::convert_cfi + sframe::encode), written as a file and optionally added to a copy of
// the ELF file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::cli {

struct SframeConversion {
  uint8_t version = 3;
  uint64_t section_addr = 0;  // the link-time address the section bytes are encoded for
  sframe::Conversion conversion;
  std::vector<std::byte> bytes;
  uint64_t functions_written = 0;
  uint64_t functions_left_out = 0;          // distinct functions among `inexpressible`
  std::map<std::string, uint64_t> reasons;  // why -> functions left out for it
};

// Converts `image`'s .eh_frame into SFrame `version` encoded at `section_addr`. Fails (one
// line) when the image has no .eh_frame or the encoder refuses the result.
Expected<SframeConversion, std::string> convert_image(const Image& image, uint8_t version,
                                                      uint64_t section_addr, const Limits& limits);

// Writes `bytes` to `path` (replacing it).
Expected<void, std::string> write_bytes(const std::string& path, std::span<const std::byte> bytes);

// Copies ELF `in` to `out` with `sframe_file`'s bytes added as a non-allocated `.sframe`
// section (sh_addr 0, no SHF_ALLOC: not part of any segment), using binutils' objcopy for
// `arch` ($EHBT_OBJCOPY, else `objcopy`, `aarch64-linux-gnu-objcopy` or
// `s390x-linux-gnu-objcopy` on PATH). An existing .sframe is kept, renamed to .sframe.orig
// (its PT_GNU_SFRAME still points at it), so that readers that look the section up by name
// find the new one.
Expected<void, std::string> add_sframe_section(const std::string& in, const std::string& out,
                                               const std::string& sframe_file, bool rename_existing,
                                               Arch arch);

// Text: what was written, counts, a reasons histogram and each function left out with its
// address and symbol.
std::string render_convert_text(const std::string& file, const Image& image,
                                const SframeConversion& c, const std::string& output,
                                const std::string& elf_output);
// {"format": "ehbt-sframe-convert/1", "file", "output", "elf_output" (null without --elf),
//  "version", "abi", "section_addr", "section_bytes", "functions_written",
//  "functions_left_out", "reasons": {why: count},
//  "left_out": [{"function", "symbol", "pc", "why"}]}
std::string render_convert_json(const std::string& file, const Image& image,
                                const SframeConversion& c, const std::string& output,
                                const std::string& elf_output);

}  // namespace ehbt::cli
