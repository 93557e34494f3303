// SPDX-License-Identifier: Apache-2.0
// Row-by-row validation of an image's CFI and lookups by pc.
#include "cli_cfi_check.hpp"

#include <cstring>

#include "ehbt/report.hpp"
#include "unwind/image_cfi_cache.hpp"

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)
namespace {

// Memory for expression dry runs: every address reads as the same non-zero bytes, so a
// dereference succeeds and yields a plausible value.
class PatternMemory final : public Memory {
 public:
  std::size_t read(uint64_t, std::span<std::byte> out) override {
    std::memset(out.data(), 0x10, out.size());
    return out.size();
  }
};

constexpr uint64_t kDummyCfa = 0x7ffc0000;

// Every tracked register set to a distinct, aligned, non-zero value.
RegisterSet dummy_registers(Arch arch) {
  RegisterSet regs(arch);
  for (uint16_t r = 0; r < arch_info(arch).num_regs; ++r) regs.set(r, 0x7ff00000 + 0x100u * r);
  regs.set_pc(0x400000);
  return regs;
}

struct RowChecker {
  CfiCheck& out;
  dwarf::SectionKind section;
  Arch arch;
  dwarf::Format fmt;
  const Limits& limits;
  RegisterSet regs;
  PatternMemory mem;

  void add_issue(std::optional<uint64_t> fde_offset, std::optional<uint64_t> pc, std::string what,
                 dwarf::Error err, bool unsupported) {
    if (unsupported) {
      ++out.unsupported;
    } else {
      ++out.malformed;
    }
    if (out.details.size() >= kMaxDetails) {
      out.details_truncated = true;
      return;
    }
    out.details.push_back(CfiIssue{section, fde_offset, pc, std::move(what), err, unsupported});
  }

  // The dry-run verdict of one expression, with the error when it is not Ok.
  Verdict dry_run(std::span<const std::byte> expr, bool push_cfa, dwarf::Error& err) {
    dwarf::ExprContext ctx;
    ctx.regs = &regs;
    ctx.mem = &mem;
    ctx.fmt = fmt;
    ctx.limits = &limits;
    if (push_cfa) ctx.cfa = kDummyCfa;
    auto v = dwarf::evaluate_expression(
        expr, ctx, push_cfa ? std::optional<uint64_t>(kDummyCfa) : std::nullopt);
    if (v) return Verdict::Ok;
    err = v.error();
    return classify(err.code);
  }

  void check_row(const dwarf::Fde& fde, const dwarf::Row& row) {
    ++out.rows;
    Verdict worst = Verdict::Ok;
    std::string what;
    dwarf::Error worst_err;
    auto consider = [&](Verdict v, const std::string& name, const dwarf::Error& err) {
      if (v == Verdict::Ok) return;
      // Malformed outranks unsupported; the first part found of a rank is reported.
      if (worst == Verdict::Ok || (worst == Verdict::Unsupported && v == Verdict::Malformed)) {
        worst = v;
        what = name;
        worst_err = err;
      }
    };
    dwarf::Error err;
    if (row.cfa.kind == dwarf::CfaKind::Expression) {
      consider(dry_run(row.cfa.expr, false, err), "cfa", err);
    }
    for (std::size_t i = 0; i < row.num_rules && i < row.rules.size(); ++i) {
      const dwarf::RegRule& rr = row.rules[i];
      if (rr.rule.kind != dwarf::RuleKind::Expression &&
          rr.rule.kind != dwarf::RuleKind::ValExpression) {
        continue;
      }
      consider(dry_run(rr.rule.expr, true, err), register_name(arch, rr.reg), err);
    }
    if (worst != Verdict::Ok) {
      add_issue(fde.offset, row.start, what, worst_err, worst == Verdict::Unsupported);
    }
  }

  void check_fde(const dwarf::Fde& fde, const dwarf::Cie& cie) {
    ++out.fdes;
    // Rows arrive as each one ends, so an instruction that fails belongs to the row that
    // starts where the last one delivered ended.
    uint64_t failing_pc = fde.pc_begin;
    auto walked = dwarf::for_each_row(cie, fde, fmt, limits, [&](const dwarf::Row& row) {
      check_row(fde, row);
      failing_pc = row.end;
    });
    if (!walked) {
      const dwarf::Error& e = walked.error();
      add_issue(fde.offset, failing_pc, "row", e, classify(e.code) == Verdict::Unsupported);
    }
  }
};

}  // namespace

Verdict classify(dwarf::ErrorCode code) {
  switch (code) {
    case dwarf::ErrorCode::Unsupported:
      return Verdict::Unsupported;
    case dwarf::ErrorCode::DivideByZero:
    case dwarf::ErrorCode::MemoryFault:
      return Verdict::Ok;
    default:
      return Verdict::Malformed;
  }
}

CfiCheck check_cfi(const Image& image, const Limits& limits) {
  CfiCheck out;
  // The same ImageCfi the unwinder builds (and caches in the image) for this image.
  dwarf::ImageCfi& cfi = unwind::image_cfi(image, limits);
  for (dwarf::SectionKind kind : {dwarf::SectionKind::EhFrame, dwarf::SectionKind::DebugFrame}) {
    RowChecker checker{out, kind, image.arch(), cfi.format(), limits, dummy_registers(image.arch()),
                       {}};
    cfi.for_each_fde(
        kind, [&](const dwarf::Fde& fde, const dwarf::Cie& cie) { checker.check_fde(fde, cie); },
        [&](const dwarf::Error& e) {
          checker.add_issue(std::nullopt, std::nullopt, "record", e,
                            classify(e.code) == Verdict::Unsupported);
        });
  }
  out.eh_frame_bad = cfi.eh_frame_bad();
  out.debug_frame_bad = cfi.debug_frame_bad();
  out.has_eh_frame = !image.eh_frame().empty();
  out.has_debug_frame = !image.debug_frame().empty();
  out.has_sframe = !image.sframe().empty();
  return out;
}

bool no_unwind_tables(const CfiCheck& c) {
  return !c.has_eh_frame && !c.has_debug_frame;
}

bool no_fdes(const CfiCheck& c) {
  return c.fdes == 0 && c.malformed == 0 && c.unsupported == 0;
}

std::vector<RowLookup> lookup_rows(dwarf::ImageCfi& cfi, std::span<const uint64_t> pcs,
                                   const Limits& limits) {
  std::vector<RowLookup> out;
  for (uint64_t pc : pcs) {
    RowLookup r;
    r.pc = pc;
    auto found = cfi.find_fde(dwarf::SectionKind::EhFrame, pc);
    r.section = dwarf::SectionKind::EhFrame;
    auto not_found = [](const dwarf::Error& e) {
      return e.code == dwarf::ErrorCode::NoEntry || e.code == dwarf::ErrorCode::NotCovered;
    };
    if (!found && not_found(found.error())) {
      auto in_debug = cfi.find_fde(dwarf::SectionKind::DebugFrame, pc);
      // Keep the .eh_frame answer unless .debug_frame has the row or a better reason.
      if (in_debug || !not_found(in_debug.error())) {
        found = std::move(in_debug);
        r.section = dwarf::SectionKind::DebugFrame;
      }
    }
    if (!found) {
      r.error = found.error();
      out.push_back(std::move(r));
      continue;
    }
    r.fde = found->first;
    r.cie = found->second;
    auto row = dwarf::evaluate_row(r.cie, r.fde, pc, cfi.format(), limits);
    if (row) {
      r.row = *row;
    } else {
      r.error = row.error();
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ehbt::cli
