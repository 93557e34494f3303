// SPDX-License-Identifier: Apache-2.0
// A minidump as a Target, the way an ELF core is one: open_core() hands a file whose bytes
// (after decompression) start with "MDMP" here.
#pragma once

#include <memory>
#include <string>

#include "core/mapped_file.hpp"
#include "ehbt/core.hpp"
#include "ehbt/expected.hpp"

namespace ehbt::minidump {

// `file` holds the minidump's bytes (its descriptor reads them); `path` names it in messages.
Expected<std::unique_ptr<Target>, std::string> open_minidump(core::MappedFile file,
                                                             const std::string& path,
                                                             const TargetOptions& options);

}  // namespace ehbt::minidump
