// SPDX-License-Identifier: Apache-2.0
// SFrame rows as text (see cli_sframe_text.hpp).
#include "cli_sframe_text.hpp"

#include <cinttypes>
#include <cstdio>

#include "report/json_writer.hpp"
#include "report/numbers.hpp"

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)
namespace {

// The stack and frame pointers are `sp` and `fp`, any other register `r<DWARF number>`, as
// objdump writes them.
std::string base_name(Arch arch, uint16_t reg) {
  const ArchInfo& info = arch_info(arch);
  if (reg == info.sp_reg) return "sp";
  if (reg == info.fp_reg) return "fp";
  return "r" + std::to_string(reg);
}

std::string register_text(Arch arch, const sframe::Recovery& r, std::string_view untracked) {
  switch (r.kind) {
    case sframe::Recovery::Kind::Untracked:
      return std::string(untracked);
    case sframe::Recovery::Kind::AtCfa:
      return "c" + signed_offset(r.offset);
    case sframe::Recovery::Kind::Register:
      return base_name(arch, r.reg) + signed_offset(r.offset);
    case sframe::Recovery::Kind::AtRegister:
      return "(" + base_name(arch, r.reg) + signed_offset(r.offset) + ")";
    case sframe::Recovery::Kind::Undefined:
      return "U";
  }
  return "?";
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s + " ";
}

}  // namespace

std::string cfa_text(Arch arch, const sframe::CfaRecovery& cfa) {
  std::string s = base_name(arch, cfa.reg) + signed_offset(cfa.offset);
  return cfa.deref ? "(" + s + ")" : s;
}

std::string fp_text(Arch arch, const sframe::Recovery& fp) {
  return register_text(arch, fp, "u");
}

std::string ra_text(const sframe::Header& header, const sframe::Recovery& ra, bool mangled) {
  // An untracked RA on amd64 is at the ABI's fixed slot: objdump's `f`.
  std::string s =
      register_text(sframe::abi_arch(header.abi), ra, header.fixed_ra_offset != 0 ? "f" : "u");
  return mangled ? s + "[s]" : s;
}

std::string render_function_text(const sframe::Header& header, const sframe::Function& fn,
                                 const std::string& label) {
  const Arch arch = sframe::abi_arch(header.abi);
  std::string out =
      "    " + label + "pc = " + hex(fn.start) + ", size = " + std::to_string(fn.size) + " bytes";
  if (fn.type == sframe::FdeType::Flex) out += ", attr = \"F\"";
  if (fn.pauth_b_key) out += ", pauth = B key";
  if (fn.signal_frame) out += ", signal frame";
  if (fn.pc_type == sframe::PcType::Mask) out += ", rep_size = " + std::to_string(fn.rep_size);
  out += "\n";
  out += "    " + pad(fn.pc_type == sframe::PcType::Mask ? "STARTPC[m]" : "STARTPC", 18) +
         pad("CFA", 12) + pad("FP", 12) + "RA\n";
  for (const sframe::FrameRow& row : fn.rows) {
    char pc[32];
    // PCMASK rows: the offset inside the repeated block, as objdump prints it.
    const uint64_t start = fn.pc_type == sframe::PcType::Mask ? row.start : fn.start + row.start;
    std::snprintf(pc, sizeof pc, "%016" PRIx64, start);
    out += "    " + pad(pc, 18) + pad(cfa_text(arch, row.cfa), 12) +
           pad(fp_text(arch, row.fp), 12) + ra_text(header, row.ra, row.ra_mangled) + "\n";
  }
  return out;
}

}  // namespace ehbt::cli
