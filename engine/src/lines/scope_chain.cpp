// SPDX-License-Identifier: Apache-2.0
// Finding the scopes at a pc (see scope_chain.hpp).
#include "lines/scope_chain.hpp"

#include <dwarf.h>

namespace ehbt::lines {
namespace {

// DIEs that hold code and may have address ranges: a pc in one of them is in its scope.
bool code_scope(int tag) {
  switch (tag) {
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_lexical_block:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_entry_point:
      return true;
    default:
      return false;
  }
}

// DIEs without ranges of their own that may hold functions (C++ namespaces, Fortran modules).
bool container(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

enum class Step { Found, None, TooLarge, Error };

// The child of one of `parents` (searched in order, with the containers met on the way
// appended to it) whose ranges hold pc.
Step child_holding(std::vector<Dwarf_Die>& parents, Dwarf_Addr pc, uint32_t max_dies,
                   uint32_t& visited, Dwarf_Die& found) {
  for (std::size_t i = 0; i < parents.size(); ++i) {
    Dwarf_Die child;
    const int first = dwarf_child(&parents[i], &child);
    if (first < 0) return Step::Error;
    if (first > 0) continue;  // no children
    while (true) {
      if (++visited > max_dies) return Step::TooLarge;
      const int tag = dwarf_tag(&child);
      if (code_scope(tag)) {
        const int has = dwarf_haspc(&child, pc);
        if (has < 0) return Step::Error;
        if (has > 0) {
          found = child;
          return Step::Found;
        }
      } else if (container(tag) && dwarf_haschildren(&child) > 0) {
        parents.push_back(child);
      }
      const int next = dwarf_siblingof(&child, &child);
      if (next < 0) return Step::Error;
      if (next > 0) break;
    }
  }
  return Step::None;
}

}  // namespace

ScopeSearch find_scopes(Dwarf_Die unit, Dwarf_Addr pc, uint32_t max_dies,
                        std::vector<Dwarf_Die>& out) {
  out.clear();
  uint32_t visited = 0;
  std::vector<Dwarf_Die> parents{unit};
  while (true) {
    Dwarf_Die found;
    switch (child_holding(parents, pc, max_dies, visited, found)) {
      case Step::Found:
        // Ranges nest: the next scope is among this one's children, nowhere else.
        out.push_back(found);
        parents.assign(1, found);
        break;
      case Step::None:
        return ScopeSearch::Done;
      case Step::TooLarge:
        return ScopeSearch::TooLarge;
      case Step::Error:
        return ScopeSearch::Error;
    }
  }
}

std::optional<std::string> qualification(Dwarf_Die decl, uint32_t max_dies) {
  Dwarf_Die unit;
  if (dwarf_diecu(&decl, &unit, nullptr, nullptr) == nullptr) return std::nullopt;
  const Dwarf_Off target = dwarf_dieoffset(&decl);
  // Depth-first, iteratively: each entry is a scope to search and the qualification inside it.
  struct Open {
    Dwarf_Die die;
    std::string prefix;
  };
  std::vector<Open> todo{{unit, ""}};
  uint32_t visited = 0;
  while (!todo.empty()) {
    Open scope = std::move(todo.back());
    todo.pop_back();
    Dwarf_Die child;
    const int first = dwarf_child(&scope.die, &child);
    if (first < 0) return std::nullopt;
    if (first > 0) continue;
    while (true) {
      if (++visited > max_dies) return std::nullopt;
      if (dwarf_dieoffset(&child) == target) return scope.prefix;
      const int tag = dwarf_tag(&child);
      if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
           tag == DW_TAG_union_type) &&
          dwarf_haschildren(&child) > 0) {
        const char* name = dwarf_diename(&child);
        // An anonymous namespace is "(anonymous namespace)" in GDB's names.
        const std::string part = name != nullptr           ? name
                                 : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                           : "";
        if (!part.empty()) todo.push_back({child, scope.prefix + part + "::"});
      }
      const int next = dwarf_siblingof(&child, &child);
      if (next < 0) return std::nullopt;
      if (next > 0) break;
    }
  }
  return std::nullopt;
}

}  // namespace ehbt::lines
