// SPDX-License-Identifier: Apache-2.0
// The offsets of Go's runtime structures a walk needs to go from a thread's g0 back to its
// goroutine (elf/go_runtime_layout.hpp), for one Go binary:
// 1. the Go version the binary records (.go.buildinfo: "\xff Go buildinf:", then, since
//    Go 1.18, the version as a length-prefixed string 32 bytes in), looked up in a table of
//    versions whose layout was checked against their sources (runtime2.go) and against the
//    DWARF of a build of each (cheap: no debug section inflated);
// 2. else its DWARF (an unstripped build, or its debug file): the members of runtime.g,
//    runtime.m and runtime.gobuf, read with libdw;
// 3. else nothing, with the reason: a walk must not guess where m.curg lies.
// Found once per image and kept while the image lives.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "ehbt/arch.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "elf/go_runtime_layout.hpp"

namespace ehbt::lines {

struct GoRuntimeLayoutResult {
  std::optional<elf::GoRuntimeLayout> layout;
  std::string why_not;  // when there is no layout: what was looked at
};

GoRuntimeLayoutResult go_runtime_layout(const std::shared_ptr<const Image>& image, Arch arch,
                                        const Limits& limits);

// Only the parts, for tests: the layout from the image's DWARF alone; the recorded version.
std::optional<elf::GoRuntimeLayout> go_runtime_layout_from_dwarf(const Image& image,
                                                                 const Limits& limits);
std::optional<std::string> go_build_version(const Image& image);
// The table: the layout of a version checked against its sources, for a 64-bit architecture.
std::optional<elf::GoRuntimeLayout> go_runtime_layout_of_version(const std::string& version,
                                                                 Arch arch);

}  // namespace ehbt::lines
