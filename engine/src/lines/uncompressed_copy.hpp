// SPDX-License-Identifier: Apache-2.0
// An ELF file that holds what libdw reads of a debug file for lines and inline chains, with
// every section inflated: libdw inflates a compressed section whole as it opens the file (all
// of them, on every run), but over a file mapped as it is stored it touches only the pages a
// lookup reads. The copy keeps the source's ELF identity (class, byte order, machine, type),
// its notes (the build-id), its .gnu_debugaltlink (the dwz file) and the .debug_* sections
// needed_for_lines() keeps; no program headers, no code, no symbols.
#pragma once

#include <libelf.h>

#include <cstdint>

#include "lines/debug_sections.hpp"

namespace ehbt::lines {

// Writes the copy of `source` (whose `sections` were scanned from it) to `fd`, an empty file
// open for writing. Inflates the kept compressed sections of `source` in place (its Elf holds
// them until elf_end). Returns the size of the file written, or 0 when a kept section cannot
// be inflated (a format this libelf does not know: libdw could not read it either) or writing
// fails.
uint64_t write_uncompressed_copy(Elf* source, const DebugSections& sections, int fd);

}  // namespace ehbt::lines
