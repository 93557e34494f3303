// SPDX-License-Identifier: Apache-2.0
// Text and JSON for `ehbt cfi`: the validation summary, and rows looked up by pc in the
// style of `readelf --debug-dump=frames-interp` (CFA `rsp+8`, rules `c-8`, `u`, `exp`).
#pragma once

#include <string>
#include <vector>

#include "cli_cfi_check.hpp"
#include "ehbt/arch.hpp"

namespace ehbt::cli {

std::string_view section_name(dwarf::SectionKind kind);  // "eh_frame", "debug_frame"

// readelf's frames-interp notation for one CFA rule and one register rule.
std::string cfa_text(Arch arch, const dwarf::CfaRule& cfa);
std::string rule_text(Arch arch, const dwarf::Rule& rule);

std::string render_check_text(const std::string& file, const CfiCheck& check);
std::string render_check_json(const std::string& file, const CfiCheck& check);

std::string render_lookups_text(const std::string& file, Arch arch,
                                const std::vector<RowLookup>& rows);
std::string render_lookups_json(const std::string& file, Arch arch,
                                const std::vector<RowLookup>& rows);

}  // namespace ehbt::cli
