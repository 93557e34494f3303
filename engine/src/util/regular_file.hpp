// SPDX-License-Identifier: Apache-2.0
// Opening a file the engine reads (a core, a module, a debug file, a perf map) only when it is
// a regular file. A FIFO blocks open(2) until a writer comes (forever, for `ehbt core FIFO`),
// a device may act on being opened, and a core's file list is written by whoever owned the
// crashed process: any path the engine opens may name either. So the path is stat'ed first
// and not opened at all unless it is a regular file; the open itself does not block
// (O_NONBLOCK) and the descriptor is checked again, for a path swapped in between.
#pragma once

#include <string>

#include "ehbt/expected.hpp"

namespace ehbt::util {

struct OpenFailure {
  int error = 0;  // errno of the failed stat or open; 0 when the path is not a regular file
  // "not a regular file", else strerror(error) ("No such file or directory", ...).
  std::string message() const;
};

// A read-only descriptor (O_CLOEXEC) of `path`, which must be a regular file after links are
// followed; the caller closes it. O_NONBLOCK stays set: it changes nothing for a regular file.
Expected<int, OpenFailure> open_regular_file(const std::string& path);

// stat(2) only: whether `path` is a regular file after links are followed.
bool is_regular_file(const std::string& path);

}  // namespace ehbt::util
