// SPDX-License-Identifier: Apache-2.0
// Builds small ELF shared objects for the unwinding tests with the native or a cross
// toolchain at test time, and reads their symbols back with the toolchain's own `nm` (an
// oracle independent of the engine's ELF reader).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ehbt/image.hpp"

namespace ehbt::test {

struct Toolchain {
  std::string prefix;  // "" (native), "aarch64-linux-gnu-", "s390x-linux-gnu-"
  std::string gcc() const { return prefix + "gcc"; }
  std::string nm() const { return prefix + "nm"; }
  bool available() const;
};

struct BuiltObject {
  std::string path;                             // the linked .so
  std::map<std::string, uint64_t> symbols;      // link-time addresses from nm
  uint64_t sym(const std::string& name) const;  // 0 when absent
};

// Writes `source` to a fresh temp dir as `name` (".s" or ".c" decides the language), links
// it as a shared object with `flags`, reads the symbol table. Empty with `error` filled when
// a step fails.
std::optional<BuiltObject> build_shared_object(const Toolchain& tc, const std::string& name,
                                               const std::string& source, const std::string& flags,
                                               std::string* error);

// Places an image at `bias` and returns the module covering its PT_LOAD segments.
Module place_image(std::shared_ptr<const Image> image, uint64_t bias, const std::string& path);

// Runs a shell command, returns its stdout (nullopt when it exits non-zero).
std::optional<std::string> run_capture(const std::string& command);

// A fresh directory under /tmp, removed when the test process exits. "" on failure.
std::string make_temp_dir();

}  // namespace ehbt::test
