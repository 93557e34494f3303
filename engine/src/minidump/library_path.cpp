// SPDX-License-Identifier: Apache-2.0
// Crashpad names the shared objects in its module list by soname ("libglib-2.0.so.0"), as
// the dynamic linker's list does for libraries found through the search path: only the
// executable has a path. Such a name is looked for in the library directories of the
// target's Debian multiarch layout, in each sysroot first and then on this machine; the
// build-id the dump recorded still decides whether the file found is the one.
#include "minidump/library_path.hpp"

#include <array>

#include "arch/multiarch.hpp"
#include "core/sysroot_path.hpp"
#include "util/regular_file.hpp"

namespace ehbt::minidump {

std::string library_path(const std::string& name, Arch arch, const TargetOptions& options) {
  if (name.empty() || name.find('/') != std::string::npos || name.starts_with('[')) return name;
  // The vDSO under the name the kernel gives its soname (linux-gate.so.1 on i386): no file.
  if (name.starts_with("linux-vdso") || name.starts_with("linux-gate")) return "[vdso]";
  const std::string multiarch(arch::multiarch_name(arch));
  const std::array<std::string, 6> dirs = {
      "/lib/" + multiarch, "/usr/lib/" + multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  for (const std::string& root : options.sysroots) {
    for (const std::string& dir : dirs) {
      auto inside = core::resolve_in_root(root, dir + "/" + name);
      if (inside && util::is_regular_file(*inside)) return dir + "/" + name;
    }
  }
  for (const std::string& dir : dirs) {
    if (util::is_regular_file(dir + "/" + name)) return dir + "/" + name;
  }
  return name;
}

}  // namespace ehbt::minidump
