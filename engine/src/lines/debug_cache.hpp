// SPDX-License-Identifier: Apache-2.0
// The debug cache: uncompressed copies (uncompressed_copy.hpp) of debug files whose DWARF is
// compressed, kept by build-id in `debug/` of ehbt's cache directory (cache_dir.hpp), so that
// only the first process to read such a file pays for inflating it. Like debuginfod's client
// cache and GDB's index cache it is a pure speed-up: a copy is used only when it carries the
// source's build-id and the section layout made from the source (names and inflated sizes),
// anything else there is ignored and made again, and a directory that cannot be used leaves
// the source file to libdw as before. Copies are written to a temporary name and renamed into
// place (concurrent processes never see half a file), touched when used, and the least
// recently used are removed when a new one would take the directory past
// Limits::max_debug_cache_bytes (0: no cache at all).
#pragma once

#include <libelf.h>

#include <optional>

#include "ehbt/limits.hpp"
#include "lines/debug_sections.hpp"

namespace ehbt::lines {

struct CachedCopy {
  int fd = -1;         // the copy, open read-only; the caller closes it after elf_end
  Elf* elf = nullptr;  // elf_begin(ELF_C_READ_MMAP) over it
  bool made = false;   // written by this call (a miss), not found
};

// The cached copy of `source` (a file with build-id whose `sections` have compressed ones),
// found or made now; nullopt when there is none to be had (no cache directory, no build-id, a
// section libelf cannot inflate, larger than the cap). Making it inflates the kept sections
// of `source` in place.
std::optional<CachedCopy> cached_uncompressed_copy(Elf* source, const DebugSections& sections,
                                                   const Limits& limits);

}  // namespace ehbt::lines
