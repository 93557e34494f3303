// SPDX-License-Identifier: Apache-2.0
// The text notation of SFrame rows shared by `ehbt sframe dump` and `ehbt sframe check`,
// that of binutils' `objdump --sframe`: CFA `sp+16`, `fp+16`, `r10+0` (other registers by
// DWARF number), in parentheses when the CFA is loaded from there; FP/RA `u` untracked, `f`
// the RA where the ABI fixes it (amd64), `c-16` saved at CFA-16, `U` undefined (the
// outermost frame), `r16+0` the value in a register, `(fp+0)` saved at a register-based
// address; `[s]` after a signed (mangled) RA.
#pragma once

#include <string>

#include "ehbt/arch.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::cli {

std::string cfa_text(Arch arch, const sframe::CfaRecovery& cfa);
std::string fp_text(Arch arch, const sframe::Recovery& fp);
std::string ra_text(const sframe::Header& header, const sframe::Recovery& ra, bool mangled);

// One function: a line with `label`, pc, size, and `attr = "F"` (flexible FDE), `pauth = B
// key`, `signal frame`, `rep_size = N` (PCMASK) as they apply; a column header (STARTPC[m]
// for PCMASK, whose rows show the offset in the repeated block); one line per row.
std::string render_function_text(const sframe::Header& header, const sframe::Function& fn,
                                 const std::string& label);

}  // namespace ehbt::cli
