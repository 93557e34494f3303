// SPDX-License-Identifier: Apache-2.0
// One ELF file's DWARF opened with libdw (elfutils), with its dwz alternate file attached:
// the image's own .debug_info when it has one, else its separate debug file's. Opened once
// per image (module_lines.hpp); everything a lookup reads comes through the Dwarf handle.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <memory>
#include <string>

#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::lines {

// An Elf and the Dwarf over it, and the file descriptor under both when the file was opened
// by name. Closes them in the right order. A file whose DWARF is compressed is read from its
// uncompressed copy in the debug cache (debug_cache.hpp) when there is one; `path` still
// names the file itself, as reports do.
class DwarfFile {
 public:
  DwarfFile() = default;
  ~DwarfFile();
  DwarfFile(const DwarfFile&) = delete;
  DwarfFile& operator=(const DwarfFile&) = delete;

  Dwarf* dwarf() const { return dwarf_; }
  const std::string& path() const { return path_; }
  // The descriptor the Elf was opened from (the cached copy's when there is one); -1 for an
  // image's own bytes.
  int fd() const { return fd_; }
  Dwarf* alt_dwarf() const { return alt_ ? alt_->dwarf_ : nullptr; }
  // Whether the file names a dwz file (.gnu_debugaltlink), and the path of the one attached
  // ("" when none was found): answers without it lack what it holds.
  bool names_alt() const { return names_alt_; }
  std::string alt_path() const { return alt_ ? alt_->path_ : std::string(); }

 private:
  friend struct DwarfOpener;
  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf* dwarf_ = nullptr;
  std::string path_;
  std::unique_ptr<DwarfFile> alt_;  // the dwz file (.gnu_debugaltlink), set as dwarf_'s alt
  bool names_alt_ = false;
};

struct OpenedDwarf {
  std::unique_ptr<DwarfFile> file;  // null: no DWARF (then `problem` may say why)
  // Why DWARF that exists cannot be used ("" when there is none at all): malformed, too large.
  std::string problem;
};

// The DWARF of `image`: its own file when that holds .debug_info, else its attached debug
// file's (Image::debug_file()). MiniDebugInfo holds no lines and is not looked at.
OpenedDwarf open_image_dwarf(const Image& image, const Limits& limits);

}  // namespace ehbt::lines
