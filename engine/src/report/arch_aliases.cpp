// SPDX-License-Identifier: Apache-2.0
// Architecture names as debuggers and target triples spell them. GDB names architectures by
// BFD's printable names ("i386:x86-64", "i386:intel", "aarch64", "s390:64-bit"); LLDB by
// triples whose first part is "x86_64", "arm64"/"aarch64", "i386"/"i686" or "s390x".
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

struct Alias {
  std::string_view name;
  Arch arch;
};

constexpr std::array<Alias, 12> kExact{{
    {"i386:x86-64", Arch::X86_64},
    {"x86-64", Arch::X86_64},
    {"x86_64", Arch::X86_64},
    {"amd64", Arch::X86_64},
    {"i386", Arch::I386},
    {"i486", Arch::I386},
    {"i586", Arch::I386},
    {"i686", Arch::I386},
    {"aarch64", Arch::AArch64},
    {"arm64", Arch::AArch64},
    {"s390:64-bit", Arch::S390x},
    {"s390x", Arch::S390x},
}};

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::optional<Arch> arch_from_alias(std::string_view spelled) {
  std::string lower(spelled);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string_view name = lower;
  for (const Alias& a : kExact) {
    if (a.name == name) return a.arch;
  }
  if (auto engine = arch_from_name(name)) return engine;
  // Prefixes: variants ("aarch64_be", "arm64e", "s390:31-bit" is not ours but s390 is the
  // family), and triples given whole ("x86_64-pc-linux-gnu").
  if (starts_with(name, "aarch64") || starts_with(name, "arm64")) return Arch::AArch64;
  if (starts_with(name, "s390")) return Arch::S390x;
  if (name.find("x86-64") != std::string_view::npos ||
      name.find("x86_64") != std::string_view::npos) {
    return Arch::X86_64;
  }
  if (starts_with(name, "i386") || starts_with(name, "i686")) return Arch::I386;  // "i386:intel"
  return std::nullopt;
}

}  // namespace ehbt::report
