// SPDX-License-Identifier: Apache-2.0
// A pc's position and inline chain from DWARF (see dwarf_lookup.hpp).
#include "lines/dwarf_lookup.hpp"

#include <dwarf.h>

#include <vector>

#include "elf/symbol_table.hpp"  // elf::demangle, as symbols are demangled
#include "lines/scope_chain.hpp"

namespace ehbt::lines {

std::string display_file_name(std::string_view path, std::string_view comp_dir,
                              std::string_view unit_name, int dwarf_version, bool recorded_dir) {
  while (comp_dir.size() > 1 && comp_dir.back() == '/') comp_dir.remove_suffix(1);
  // `path` is DIR/NAME with DIR the compilation directory: NAME, else nothing.
  auto under_comp_dir = [&]() -> std::optional<std::string_view> {
    if (comp_dir.empty() || path.size() <= comp_dir.size() + 1 || !path.starts_with(comp_dir) ||
        path[comp_dir.size()] != '/') {
      return std::nullopt;
    }
    return path.substr(comp_dir.size() + 1);
  };
  const std::optional<std::string_view> rest = under_comp_dir();
  // Only where the joined name is absolute: GDB matches a line-table file to the unit's own
  // by absolute names (glibc's comp dir "./nptl" gives "./nptl/pthread_kill.c").
  if (rest && comp_dir.front() == '/' && !unit_name.empty() && unit_name.front() != '/' &&
      *rest == unit_name) {
    return std::string(unit_name);
  }
  if (rest && dwarf_version < 5 && !recorded_dir) return std::string(*rest);
  return std::string(path);
}

namespace {

// What the lookups of one pc share: the unit, its compilation directory and file table.
struct UnitView {
  Dwarf_Die unit;                   // the DIE tree to search (a skeleton's split unit)
  Dwarf_Die line_cu;                // the unit whose line table covers the pc
  std::string_view comp_dir, name;  // the unit's DW_AT_comp_dir and DW_AT_name
  int version = 0;                  // of the unit's header
  Dwarf_Files* files = nullptr;     // the file table DW_AT_call_file indexes (loaded on demand)
  std::size_t file_count = 0;
  bool files_read = false;
};

// Whether `path` lies in a directory the table records explicitly (an absolute entry other than
// DWARF 4's implicit entry 0, the compilation directory): gcc writes the source directory so
// when it was given absolute paths, and GDB then shows the joined, absolute name.
bool in_recorded_dir(std::string_view path, Dwarf_Files* files) {
  const char* const* dirs = nullptr;
  std::size_t count = 0;
  if (files == nullptr || dwarf_getsrcdirs(files, &dirs, &count) != 0) return false;
  for (std::size_t k = 1; k < count; ++k) {
    const std::string_view dir = dirs[k] != nullptr ? dirs[k] : "";
    if (!dir.empty() && dir.front() == '/' && path.size() > dir.size() && path.starts_with(dir) &&
        path[dir.size()] == '/') {
      return true;
    }
  }
  return false;
}

std::optional<SourcePosition> position(const char* file, int line, int column, const UnitView& u,
                                       Dwarf_Files* files) {
  if (file == nullptr || line <= 0) return std::nullopt;
  SourcePosition p;
  p.file = display_file_name(file, u.comp_dir, u.name, u.version,
                             u.version < 5 && in_recorded_dir(file, files));
  p.line = static_cast<uint32_t>(line);
  p.column = column > 0 ? static_cast<uint32_t>(column) : 0;
  return p;
}

// Where an inlined call is: its DW_AT_call_file/line/column, in the caller's unit.
std::optional<SourcePosition> call_site(Dwarf_Die& scope, UnitView& u) {
  Dwarf_Attribute attr;
  Dwarf_Word file = 0, line = 0, column = 0;
  if (dwarf_formudata(dwarf_attr(&scope, DW_AT_call_file, &attr), &file) != 0) return std::nullopt;
  if (dwarf_formudata(dwarf_attr(&scope, DW_AT_call_line, &attr), &line) != 0) return std::nullopt;
  if (dwarf_formudata(dwarf_attr(&scope, DW_AT_call_column, &attr), &column) != 0) column = 0;
  if (!u.files_read) {
    u.files_read = true;
    if (dwarf_getsrcfiles(&u.unit, &u.files, &u.file_count) != 0) u.files = nullptr;
  }
  if (u.files == nullptr || file >= u.file_count || line > UINT32_MAX) return std::nullopt;
  const char* name = dwarf_filesrc(u.files, file, nullptr, nullptr);
  return position(name, static_cast<int>(line), column > UINT32_MAX ? 0 : static_cast<int>(column),
                  u, u.files);
}

// The inlined function's name: its linkage name demangled (as symbols are), else its name,
// both through the abstract origin (dwarf_attr_integrate follows it, and a bounded chain of
// specifications, into the dwz file too).
std::string function_name(Dwarf_Die& scope, uint32_t max_dies) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (const char* s = dwarf_formstring(dwarf_attr_integrate(&scope, at, &attr))) {
      return elf::demangle(s);
    }
  }
  const char* s = dwarf_formstring(dwarf_attr_integrate(&scope, DW_AT_name, &attr));
  if (s == nullptr) return std::string();
  // No linkage name (a template instantiated for a lambda, a static function in a namespace):
  // qualified by where its declaration sits, as GDB names it ("fx::apply<...>").
  Dwarf_Die decl = scope;
  for (int hop = 0; hop < 8; ++hop) {
    Dwarf_Die next;
    if (dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &next) == nullptr &&
        dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &next) == nullptr) {
      break;
    }
    decl = next;
  }
  if (auto prefix = qualification(decl, max_dies)) return *prefix + s;
  return std::string(s);
}

// The row GDB shows for a pc: of the rows at the address libdw's row starts at, the last that
// begins a statement (is_stmt), else libdw's own (the last one). Compilers put several rows at
// one address (a header's inline helper, then the caller's line as a non-statement row):
// libdw and addr2line take the last, GDB the statement.
Dwarf_Line* statement_row(Dwarf_Lines* table, std::size_t rows, Dwarf_Line* row) {
  Dwarf_Addr at = 0;
  if (dwarf_lineaddr(row, &at) != 0) return row;
  // The table is sorted by address: the first row at `at`, by bisection.
  std::size_t lo = 0, hi = rows;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    Dwarf_Addr a = 0;
    Dwarf_Line* line = dwarf_onesrcline(table, mid);
    if (line == nullptr || dwarf_lineaddr(line, &a) != 0) return row;
    if (a < at) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  Dwarf_Line* best = nullptr;
  for (std::size_t i = lo; i < rows; ++i) {
    Dwarf_Line* line = dwarf_onesrcline(table, i);
    Dwarf_Addr a = 0;
    if (line == nullptr || dwarf_lineaddr(line, &a) != 0 || a != at) break;
    bool stmt = false, end = false;
    if (dwarf_lineendsequence(line, &end) == 0 && end) continue;
    if (dwarf_linebeginstatement(line, &stmt) == 0 && stmt) best = line;
  }
  return best != nullptr ? best : row;
}

}  // namespace

DwarfLookup lookup_dwarf(UnitIndex& units, Dwarf_Addr pc, const Limits& limits, Dwarf* sparse) {
  DwarfLookup out;
  UnitView u;
  const UnitSearch search = sparse != nullptr ? units.find_in(sparse, pc, limits, u.line_cu)
                                              : units.find(pc, limits, u.line_cu);
  switch (search) {
    case UnitSearch::Found:
      break;
    case UnitSearch::None:
      return out;
    case UnitSearch::Error:
      out.problem = std::string("unreadable unit: ") + dwarf_errmsg(-1);
      return out;
  }
  u.unit = u.line_cu;
  // Split DWARF: the skeleton has the line table, the .dwo/.dwp unit the DIEs (when libdw
  // finds it; else only lines).
  uint8_t unit_type = 0;
  Dwarf_Half version = 0;
  Dwarf_Die split{};  // zeroed by libdw when no split unit is found
  if (dwarf_cu_info(u.line_cu.cu, &version, &unit_type, nullptr, &split, nullptr, nullptr,
                    nullptr) == 0 &&
      unit_type == DW_UT_skeleton && split.cu != nullptr &&
      dwarf_tag(&split) == DW_TAG_compile_unit) {
    u.unit = split;
  }
  Dwarf_Attribute attr;
  if (const char* dir = dwarf_formstring(dwarf_attr(&u.line_cu, DW_AT_comp_dir, &attr))) {
    u.comp_dir = dir;
  }
  // A split unit's skeleton has no DW_AT_name: the .dwo unit carries it.
  for (Dwarf_Die* die : {&u.line_cu, &u.unit}) {
    if (const char* name = dwarf_formstring(dwarf_attr(die, DW_AT_name, &attr))) {
      u.name = name;
      break;
    }
  }
  u.version = version;

  std::optional<SourcePosition> here;
  Dwarf_Lines* table = nullptr;
  std::size_t rows = 0;
  if (dwarf_hasattr(&u.line_cu, DW_AT_stmt_list) &&
      dwarf_getsrclines(&u.line_cu, &table, &rows) != 0) {
    out.problem = std::string("unreadable line table: ") + dwarf_errmsg(-1);
    return out;
  }
  if (Dwarf_Line* row = table != nullptr ? dwarf_getsrc_die(&u.line_cu, pc) : nullptr) {
    row = statement_row(table, rows, row);
    int line = 0, column = 0;
    dwarf_lineno(row, &line);
    dwarf_linecol(row, &column);
    Dwarf_Files* row_files = nullptr;
    std::size_t row_file = 0;
    if (dwarf_line_file(row, &row_files, &row_file) != 0) row_files = nullptr;
    here = position(dwarf_linesrc(row, nullptr, nullptr), line, column, u, row_files);
  }

  std::vector<Dwarf_Die> scopes;
  switch (find_scopes(u.unit, pc, limits.max_line_dies, scopes)) {
    case ScopeSearch::Done:
      break;
    case ScopeSearch::TooLarge:
      out.problem =
          "more than " + std::to_string(limits.max_line_dies) + " DIEs to visit for one pc";
      return out;
    case ScopeSearch::Error:
      out.problem = std::string("malformed DIEs: ") + dwarf_errmsg(-1);
      return out;
  }

  SourceInfo info;
  // Innermost scope first: each inlined call gets the position inside it (the pc's own line
  // for the innermost), and its call site becomes the position in the scope around it.
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    const int tag = dwarf_tag(&*it);
    if (tag == DW_TAG_subprogram) break;             // the physical function: the chain ends here
    if (tag != DW_TAG_inlined_subroutine) continue;  // a lexical block
    if (info.inlined.size() >= limits.max_inline_depth) {
      out.problem =
          "more than " + std::to_string(limits.max_inline_depth) + " calls inlined at one pc";
      return out;
    }
    info.inlined.push_back(InlinedCall{function_name(*it, limits.max_line_dies), std::move(here)});
    here = call_site(*it, u);
  }
  info.location = std::move(here);
  if (!info.location && info.inlined.empty()) return out;
  out.info = std::move(info);
  return out;
}

}  // namespace ehbt::lines
