// SPDX-License-Identifier: Apache-2.0
// Separate debug files, found the way GDB and eu-stack find them: by build-id under each
// debug directory (--debug-dir, then usr/lib/debug in each sysroot, then the host's), then by
// .gnu_debuglink next to the file, in its .debug/ directory and under each debug directory.
// Every candidate is checked: its build-id must equal the module's, and a debuglink target
// must also have the CRC-32 the link records. Nothing unchecked is ever attached.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/debuginfod_fetch.hpp"
#include "ehbt/core.hpp"

namespace ehbt::core {

// The candidate paths in lookup order, for a module named `core_path` in the target whose
// file was found at `file_path` ("" when none was). Exposed for tests.
std::vector<std::string> debug_file_candidates(const Image& image, const std::string& core_path,
                                               const std::string& file_path,
                                               const TargetOptions& options);

// Opens the first candidate that passes the checks; sets `found` to its path.
// With a debuginfod session that is on, a debug file no directory holds is fetched by
// build-id; a fetch that failed (other than "not found") is said in `warnings` when given.
std::shared_ptr<const Image> find_debug_file(const Image& image, const std::string& core_path,
                                             const std::string& file_path,
                                             const TargetOptions& options, std::string& found,
                                             DebuginfodSession* debuginfod = nullptr,
                                             std::vector<Warning>* warnings = nullptr);

// One target's debug-file lookups (an Image's DebugFileFinder): the module resolver records
// each image with the names its module goes by (defer), and the image's first user of the
// debug file -- a .debug_frame lookup, a symbol of a stripped module, source lines -- runs
// find_debug_file() then, once, with the target's options, its debuginfod session (shared
// with the resolver's fetches of executables: one budget, a server found down said once)
// and its warnings. The target owns it (Target::debug_files_); images hold it weakly.
class TargetDebugFiles final : public DebugFileFinder,
                               public std::enable_shared_from_this<TargetDebugFiles> {
 public:
  explicit TargetDebugFiles(const TargetOptions& options)
      : options_(options), debuginfod_(options) {}
  // Where warnings go (the target's); none by default. Said under the finder's lock.
  void set_warnings(std::vector<Warning>* warnings) { warnings_ = warnings; }
  DebuginfodSession& debuginfod() { return debuginfod_; }
  // Defers `image`'s lookup to its first use. `core_path`: the module's name in the target;
  // `file_path`: where its file was found ("" when none was).
  void defer(const Image& image, const std::string& core_path, const std::string& file_path);
  std::shared_ptr<const Image> find(const Image& image) override;

 private:
  struct Names {
    std::string core_path, file_path;
  };
  const TargetOptions options_;
  std::mutex mu_;  // one lookup at a time: the session and the warnings are shared
  DebuginfodSession debuginfod_;
  std::vector<Warning>* warnings_ = nullptr;
  std::unordered_map<const Image*, Names> names_;
};

// CRC-32 (the one .gnu_debuglink records) of a whole file; nothing when unreadable.
std::optional<uint32_t> file_crc32(const std::string& path);

}  // namespace ehbt::core
