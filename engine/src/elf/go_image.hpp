// SPDX-License-Identifier: Apache-2.0
// Go's function table of an image, and the names it gives where the symbol tables are gone.
#pragma once

#include "ehbt/image.hpp"
#include "elf/go_pclntab.hpp"
#include "elf/symbol_table.hpp"

namespace ehbt::elf {

// The image's Go function table, or null (no Go code, or a table this reader does not know).
// Found once: the .gopclntab section (.data.rel.ro.gopclntab in position-independent builds);
// without section headers, the first non-executable PT_LOAD position holding a valid table header
// whose first function lies in executable code (searched at pointer alignment, at most
// Limits::max_image_bytes bytes).
const GoPclntab* go_pclntab(const Image& image);

// The link-time address funcdata values count from: Go 1.18+, moduledata.gofunc (the start
// of the go:func.* data that holds the inline trees), or nothing; 1.16-1.17 (addresses): 0. Found
// once: the runtime's moduledata, in a non-executable PT_LOAD, is the pointer-aligned place whose
// first word is the table's address and whose second (funcnametab's data) that of its name table,
// and whose `text` field is the table's text start. Searched in at most Limits::max_image_bytes
// bytes. Position-independent builds leave those words to dynamic relocations: nothing there.
std::optional<uint64_t> go_func_data(const Image& image);

// Adds one symbol per Go function (size up to the next function's entry), bound LOCAL so that
// any ELF symbol at the same place is preferred. Returns how many it added.
std::size_t add_go_symbols(const Image& image, SymbolSink& sink, const Limits& limits);

}  // namespace ehbt::elf
