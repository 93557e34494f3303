// SPDX-License-Identifier: Apache-2.0
// Source positions of a pc in Go code, from .gopclntab alone (no DWARF: stripped Go binaries
// keep it): the pc's `file:line` (the pcfile and pcln tables) and the calls inlined there
// (the inline tree, FUNCDATA_InlTree, indexed by PCDATA_InlTreeIndex), as Go's own traceback
// prints them: file names as the table records them (full paths), innermost call first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/source_location.hpp"
#include "elf/go_pclntab.hpp"

namespace ehbt::elf {

// What a Go pc's lookup needs besides the table: where the inline trees are. Go 1.18+ keeps
// them in go:func.* (an offset from moduledata.gofunc: go_func_data()), 1.16-1.17 at an
// address (gofunc 0), read through `read` (link-time addresses; an image's Image::read).
// Without them (a moduledata not found) the lookup gives positions only where nothing is
// inlined.
struct GoInlineTrees {
  uint64_t gofunc = 0;
  std::function<std::size_t(uint64_t link_addr, std::span<std::byte> out)> read;
};

// The source position of `link_pc` (the lookup pc: the pc itself for frame 0 and interrupted
// frames, pc - 1 for callers, as for symbols) and the calls inlined there. Nothing when no
// function covers the pc or its line tables are missing or malformed; an inline tree that
// cannot be read gives the position without inlined calls. Every table walk is capped by
// `limits` (max_go_pcvalue_steps per table, max_go_inline_depth calls).
std::optional<SourceInfo> go_source_info(const GoPclntab& table,
                                         const std::optional<GoInlineTrees>& trees,
                                         uint64_t link_pc, const Limits& limits);

// The same for an image: its Go table and inline trees (go_pclntab(), go_func_data()).
// Nothing for an image without a Go table.
std::optional<SourceInfo> go_source_info(const Image& image, uint64_t link_pc,
                                         const Limits& limits);

}  // namespace ehbt::elf
