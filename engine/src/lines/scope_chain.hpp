// SPDX-License-Identifier: Apache-2.0
// The DIEs whose address ranges hold a pc, found by descending from a unit's DIE: the
// function, then the inlined calls and lexical blocks nested in it. What dwarf_getscopes()
// finds, but iterative and bounded by a count of DIEs visited (libdw's own walk recurses
// once per level of nesting, which hostile input can make as deep as it likes).
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ehbt::lines {

enum class ScopeSearch {
  Done,      // `out` holds the scopes found (possibly none), outermost first
  TooLarge,  // more than max_dies DIEs visited
  Error,     // libdw could not read a DIE
};

ScopeSearch find_scopes(Dwarf_Die unit, Dwarf_Addr pc, uint32_t max_dies,
                        std::vector<Dwarf_Die>& out);

// The C++ qualification of `decl` ("fx::Box<long>::", "" at the top level): the names of the
// namespaces, classes, structures and unions around it, found by descending from its unit's
// DIE to it (libdw keeps no parent links). Nothing when it is not found within max_dies DIEs
// or a DIE cannot be read.
std::optional<std::string> qualification(Dwarf_Die decl, uint32_t max_dies);

}  // namespace ehbt::lines
