// SPDX-License-Identifier: Apache-2.0
// Whether a file mapping is a module (a mapped ELF object) or data: locale archives, caches,
// POSIX and SysV shared memory, /dev/zero, memfd buffers. Only modules are resolved, listed
// and warned about when their file is missing, so the decision must rest on what the mapping
// holds, never on its name.
#pragma once

#include <optional>
#include <string>

namespace ehbt::core {

// What the file a mapping names holds, as far as the host can tell.
enum class FileContent {
  kElf,         // a regular file starting with \x7fELF
  kNotElf,      // a regular file starting with anything else (or shorter than 4 bytes)
  kNotRegular,  // exists but is a device, FIFO, socket or directory: never opened
  kUnavailable  // missing, deleted, or not readable: it says nothing
};

// What is known about one mapped object (all mappings of one file from offset 0 onwards).
struct MappingEvidence {
  // Whether the target's own bytes at file offset 0 start with \x7fELF; nothing when they
  // cannot be read (a core leaves a file mapping's pages out unless they are an ELF header,
  // anonymous or written to).
  std::optional<bool> first_page_elf;
  FileContent file = FileContent::kUnavailable;
  bool executable = false;  // any of its mappings may execute (PF_X in a core, 'x' in maps)
};

// The rule: the target's first page decides when it can be read; else the file, when it is a
// regular file the host can read; a device or other non-regular file is never a module; and
// when there is nothing to look at, only an executable mapping is evidence of code (a
// read-only mapping of a deleted file whose first page was not dumped is data: the kernel
// dumps the first page of every mapped ELF header by default, as elfutils relies on).
bool is_module_mapping(const MappingEvidence& e);

// The first bytes of `path`, opened only when it is a regular file (util/regular_file).
FileContent file_content(const std::string& path);

}  // namespace ehbt::core
