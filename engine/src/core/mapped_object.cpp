// SPDX-License-Identifier: Apache-2.0
// See mapped_object.hpp.
#include "core/mapped_object.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/regular_file.hpp"

namespace ehbt::core {

bool is_module_mapping(const MappingEvidence& e) {
  if (e.first_page_elf) return *e.first_page_elf;
  switch (e.file) {
    case FileContent::kElf:
      return true;
    case FileContent::kNotElf:
    case FileContent::kNotRegular:
      return false;
    case FileContent::kUnavailable:
      break;
  }
  return e.executable;
}

FileContent file_content(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return FileContent::kUnavailable;
  if (!S_ISREG(st.st_mode)) return FileContent::kNotRegular;
  auto fd = util::open_regular_file(path);
  if (!fd) return FileContent::kUnavailable;  // unreadable, or swapped since the stat
  char magic[4] = {};
  std::size_t got = 0;
  while (got < sizeof magic) {
    ssize_t n = pread(*fd, magic + got, sizeof magic - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(*fd);
  if (got < sizeof magic && got != 0) return FileContent::kNotElf;
  if (got == 0 && st.st_size != 0) return FileContent::kUnavailable;  // a read error
  return std::memcmp(magic,
                     "\x7f"
                     "ELF",
                     4) == 0
             ? FileContent::kElf
             : FileContent::kNotElf;
}

}  // namespace ehbt::core
