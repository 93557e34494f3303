// SPDX-License-Identifier: Apache-2.0
// .sframe against .eh_frame: for every SFrame function, at every pc where a row of either
// side starts inside it, the CFA, FP and RA each side gives must be the same.
#include <algorithm>
#include <set>

#include "sframe/row_text.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::sframe {
namespace {

// Row starts of one SFrame function, as link-time pcs (a PCMASK function's rows repeat in
// every block).
void sframe_boundaries(const Function& fn, std::set<uint64_t>& pcs) {
  const uint64_t end = fn.start + fn.size;
  if (fn.pc_type == PcType::Mask && fn.rep_size != 0) {
    for (uint64_t block = fn.start; block < end; block += fn.rep_size) {
      for (const FrameRow& row : fn.rows) {
        if (block + row.start < end) pcs.insert(block + row.start);
      }
    }
    return;
  }
  for (const FrameRow& row : fn.rows) {
    if (row.start == 0 || fn.start + row.start < end) pcs.insert(fn.start + row.start);
  }
}

}  // namespace

CheckReport check_against_cfi(const Table& table, dwarf::ImageCfi& cfi, const Limits& limits) {
  CheckReport report;
  const Arch arch = table.arch();
  const dwarf::Format format = cfi.format();

  for (uint32_t i = 0; i < table.num_functions(); ++i) {
    auto fn = table.function(i);
    if (!fn) {
      report.errors.push_back(fn.error());
      continue;
    }
    ++report.functions;
    if (fn->size == 0) continue;  // covers no pc
    auto fde = cfi.find_fde(dwarf::SectionKind::EhFrame, fn->start);
    if (!fde) {
      ++report.sframe_only;
      continue;
    }
    std::set<uint64_t> pcs;
    sframe_boundaries(*fn, pcs);
    const uint64_t end = fn->start + fn->size;
    (void)dwarf::for_each_row(fde->second, fde->first, format, limits, [&](const dwarf::Row& row) {
      if (row.start >= fn->start && row.start < end) pcs.insert(row.start);
    });

    for (uint64_t pc : pcs) {
      ++report.rows;
      auto s = table.find_row(pc);
      if (!s) {
        report.disagreements.push_back(
            {fn->start, pc, "sframe: no row (" + std::string(to_string(s.error().code)) + ")"});
        continue;
      }
      auto e = cfi.find_row_ref(pc, nullptr, false);
      if (!e) {
        report.disagreements.push_back(
            {fn->start, pc,
             "eh_frame: no row (" + std::string(dwarf::to_string(e.error().code)) + ")"});
        continue;
      }
      const RowText st = describe_row(*s, arch, pc);
      const RowText et = describe_row(**e, arch, pc);
      auto differ = [&](const char* what, const std::string& a, const std::string& b) {
        if (a != b) {
          report.disagreements.push_back(
              {fn->start, pc, std::string(what) + ": sframe " + a + ", eh_frame " + b});
        }
      };
      // In the outermost frame nothing but the undefined RA matters.
      const bool outermost = st.ra == "undefined" && et.ra == "undefined";
      if (!outermost) {
        differ("CFA", st.cfa, et.cfa);
        differ("FP", st.fp, et.fp);
      }
      differ("RA", st.ra, et.ra);
    }
  }

  // FDEs whose start no SFrame function covers.
  cfi.for_each_fde(
      dwarf::SectionKind::EhFrame,
      [&](const dwarf::Fde& fde, const dwarf::Cie&) {
        if (fde.pc_end <= fde.pc_begin) return;
        auto r = table.find_row(fde.pc_begin);
        if (!r && r.error().code == ErrorCode::NotCovered) ++report.eh_frame_only;
      },
      [](const dwarf::Error&) {});
  return report;
}

}  // namespace ehbt::sframe
