// SPDX-License-Identifier: Apache-2.0
// Renderings of `ehbt cfi` results.
#include "cli_cfi_render.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "ehbt/report.hpp"
#include "report/json_writer.hpp"
#include "report/numbers.hpp"

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)
namespace {

std::string bytes_hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (std::byte b : bytes) {
    auto v = std::to_integer<unsigned>(b);
    s += kDigits[v >> 4];
    s += kDigits[v & 15];
  }
  return s;
}

// The row's return-address column is named "ra", as readelf does.
std::string column_name(Arch arch, const dwarf::Row& row, uint16_t reg) {
  return reg == row.ra_reg ? "ra" : register_name(arch, reg);
}

// Register rules in DWARF number order, the return-address column last (readelf's layout),
// and always present.
std::vector<std::pair<uint16_t, dwarf::Rule>> columns(const dwarf::Row& row) {
  std::vector<std::pair<uint16_t, dwarf::Rule>> cols;
  for (std::size_t i = 0; i < row.num_rules && i < row.rules.size(); ++i) {
    const dwarf::RegRule& rr = row.rules[i];
    if (rr.reg != row.ra_reg && rr.rule.kind != dwarf::RuleKind::Unspecified) {
      cols.emplace_back(rr.reg, rr.rule);
    }
  }
  std::sort(cols.begin(), cols.end(), [](auto& a, auto& b) { return a.first < b.first; });
  cols.emplace_back(row.ra_reg, row.rule(row.ra_reg));
  return cols;
}

std::string_view rule_kind_name(dwarf::RuleKind kind) {
  switch (kind) {
    case dwarf::RuleKind::Unspecified:
      return "unspecified";
    case dwarf::RuleKind::Undefined:
      return "undefined";
    case dwarf::RuleKind::SameValue:
      return "same_value";
    case dwarf::RuleKind::Offset:
      return "offset";
    case dwarf::RuleKind::ValOffset:
      return "val_offset";
    case dwarf::RuleKind::Register:
      return "register";
    case dwarf::RuleKind::Expression:
      return "expression";
    case dwarf::RuleKind::ValExpression:
      return "val_expression";
    case dwarf::RuleKind::RegOffset:
      return "reg_offset";
    case dwarf::RuleKind::AtRegOffset:
      return "at_reg_offset";
  }
  return "unspecified";
}

void write_cfa(JsonWriter& w, Arch arch, const dwarf::CfaRule& cfa) {
  w.begin_object(true);
  switch (cfa.kind) {
    case dwarf::CfaKind::Undefined:
      w.field("rule", "undefined");
      break;
    case dwarf::CfaKind::RegOffset:
      w.field("rule", "reg_offset").field("reg", register_name(arch, cfa.reg));
      w.field("offset", cfa.offset);
      break;
    case dwarf::CfaKind::Expression:
      w.field("rule", "expression").field("expr", bytes_hex(cfa.expr));
      break;
    case dwarf::CfaKind::RegOffsetDeref:
      w.field("rule", "reg_offset_deref").field("reg", register_name(arch, cfa.reg));
      w.field("offset", cfa.offset);
      break;
  }
  w.end_object();
}

void write_rule(JsonWriter& w, Arch arch, const dwarf::Rule& rule) {
  w.begin_object(true).field("rule", rule_kind_name(rule.kind));
  switch (rule.kind) {
    case dwarf::RuleKind::Offset:
    case dwarf::RuleKind::ValOffset:
      w.field("offset", rule.offset);
      break;
    case dwarf::RuleKind::Register:
      w.field("reg", register_name(arch, rule.reg));
      break;
    case dwarf::RuleKind::RegOffset:
    case dwarf::RuleKind::AtRegOffset:
      w.field("reg", register_name(arch, rule.reg)).field("offset", rule.offset);
      break;
    case dwarf::RuleKind::Expression:
    case dwarf::RuleKind::ValExpression:
      w.field("expr", bytes_hex(rule.expr));
      break;
    default:
      break;
  }
  w.end_object();
}

void trim_right(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

std::string padded(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string hex16(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string hex8(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%08" PRIx64, v);
  return buf;
}

std::string error_text(const dwarf::Error& e) {
  return std::string(dwarf::to_string(e.code)) + " at " + hex(e.where);
}

}  // namespace

std::string_view section_name(dwarf::SectionKind kind) {
  return kind == dwarf::SectionKind::EhFrame ? "eh_frame" : "debug_frame";
}

std::string cfa_text(Arch arch, const dwarf::CfaRule& cfa) {
  switch (cfa.kind) {
    case dwarf::CfaKind::RegOffset:
      return register_name(arch, cfa.reg) + signed_offset(cfa.offset);
    case dwarf::CfaKind::Expression:
      return "exp";
    case dwarf::CfaKind::RegOffsetDeref:
      return "*(" + register_name(arch, cfa.reg) + signed_offset(cfa.offset) + ")";
    case dwarf::CfaKind::Undefined:
      break;
  }
  return "u";
}

std::string rule_text(Arch arch, const dwarf::Rule& rule) {
  switch (rule.kind) {
    case dwarf::RuleKind::Unspecified:
    case dwarf::RuleKind::Undefined:
      return "u";
    case dwarf::RuleKind::SameValue:
      return "s";
    case dwarf::RuleKind::Offset:
      return "c" + signed_offset(rule.offset);
    case dwarf::RuleKind::ValOffset:
      return "v" + signed_offset(rule.offset);
    case dwarf::RuleKind::Register:
      return register_name(arch, rule.reg);
    case dwarf::RuleKind::Expression:
      return "exp";
    case dwarf::RuleKind::ValExpression:
      return "vexp";
    case dwarf::RuleKind::RegOffset:
      return register_name(arch, rule.reg) + signed_offset(rule.offset);
    case dwarf::RuleKind::AtRegOffset:
      return "[" + register_name(arch, rule.reg) + signed_offset(rule.offset) + "]";
  }
  return "u";
}

std::string render_check_text(const std::string& file, const CfiCheck& c) {
  std::string out = "File: " + file + "\n";
  out += "FDEs: " + std::to_string(c.fdes) + "  rows: " + std::to_string(c.rows) +
         "  unsupported: " + std::to_string(c.unsupported) +
         "  malformed: " + std::to_string(c.malformed) + "\n";
  if (no_unwind_tables(c)) {
    out += "note: " + file + " has no .eh_frame and no .debug_frame: no DWARF unwind tables";
    out += c.has_sframe ? " (it has .sframe: see `ehbt sframe dump " + file + "`)\n"
                        : " (and no .sframe)\n";
  } else if (no_fdes(c)) {
    const char* held = c.has_eh_frame && c.has_debug_frame ? ".eh_frame and .debug_frame hold"
                       : c.has_eh_frame                    ? ".eh_frame holds"
                                                           : ".debug_frame holds";
    out += "note: " + file + ": " + held + " no FDE: no unwind rows\n";
  }
  if (c.eh_frame_bad) out += "warning: .eh_frame was found corrupt\n";
  if (c.debug_frame_bad) out += "warning: .debug_frame was found corrupt\n";
  for (const CfiIssue& d : c.details) {
    out += d.unsupported ? "unsupported: ." : "malformed: .";
    out += section_name(d.section);
    if (d.fde_offset) out += " FDE " + hex8(*d.fde_offset);
    if (d.pc) out += " pc " + hex(*d.pc);
    out += " " + d.what + ": " + error_text(d.error) + "\n";
  }
  if (c.details_truncated) {
    out += "(only the first " + std::to_string(kMaxDetails) + " issues are listed)\n";
  }
  return out;
}

std::string render_check_json(const std::string& file, const CfiCheck& c) {
  std::string out;
  JsonWriter w(out);
  w.begin_object()
      .field("file", file)
      .field("fdes", c.fdes)
      .field("rows", c.rows)
      .field("unsupported", c.unsupported)
      .field("malformed", c.malformed)
      .field("eh_frame_bad", c.eh_frame_bad)
      .field("debug_frame_bad", c.debug_frame_bad)
      .field("details_truncated", c.details_truncated);
  w.key("sections")
      .begin_object(true)
      .field("eh_frame", c.has_eh_frame)
      .field("debug_frame", c.has_debug_frame)
      .field("sframe", c.has_sframe)
      .end_object();
  w.key("details").begin_array();
  for (const CfiIssue& d : c.details) {
    w.begin_object(true)
        .field("kind", d.unsupported ? "unsupported" : "malformed")
        .field("section", section_name(d.section))
        .address_field("fde_offset", d.fde_offset)
        .address_field("pc", d.pc)
        .field("what", d.what)
        .field("error", dwarf::to_string(d.error.code))
        .address_field("where", d.error.where)
        .end_object();
  }
  w.end_array().end_object();
  out += '\n';
  return out;
}

std::string render_lookups_text(const std::string& file, Arch arch,
                                const std::vector<RowLookup>& rows) {
  std::string out = "File: " + file + "\n";
  for (const RowLookup& r : rows) {
    out += "\npc " + hex(r.pc) + ": ";
    if (r.error) {
      out += "no row: " + error_text(*r.error) + "\n";
      continue;
    }
    out += "." + std::string(section_name(r.section)) + " FDE " + hex8(r.fde.offset) +
           " cie=" + hex8(r.cie.offset) + " pc=" + hex16(r.fde.pc_begin) + ".." +
           hex16(r.fde.pc_end) + "\n";
    auto cols = columns(r.row);
    std::string header = "   LOC           CFA      ";
    std::string line = hex16(r.row.start) + " " + padded(cfa_text(arch, r.row.cfa), 9);
    for (const auto& [reg, rule] : cols) {
      header += padded(column_name(arch, r.row, reg), 6);
      line += padded(rule_text(arch, rule), 6);
    }
    trim_right(header);
    trim_right(line);
    out += header + "\n" + line + "\n";
  }
  return out;
}

std::string render_lookups_json(const std::string& file, Arch arch,
                                const std::vector<RowLookup>& rows) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().field("file", file).field("arch", arch_info(arch).name);
  w.key("lookups").begin_array();
  for (const RowLookup& r : rows) {
    w.begin_object().address_field("pc", r.pc);
    if (r.error) {
      w.field("error", dwarf::to_string(r.error->code)).address_field("where", r.error->where);
      w.end_object();
      continue;
    }
    w.field("error", std::optional<std::string>())
        .field("section", section_name(r.section))
        .address_field("fde_offset", r.fde.offset)
        .address_field("cie_offset", r.cie.offset)
        .address_field("fde_start", r.fde.pc_begin)
        .address_field("fde_end", r.fde.pc_end)
        .address_field("loc", r.row.start)
        .address_field("loc_end", r.row.end)
        .field("signal_frame", r.row.signal_frame)
        .field("ra_signed", r.row.ra_signed);
    w.key("cfa");
    write_cfa(w, arch, r.row.cfa);
    w.key("registers").begin_object();
    for (const auto& [reg, rule] : columns(r.row)) {
      w.key(column_name(arch, r.row, reg));
      write_rule(w, arch, rule);
    }
    w.end_object().end_object();
  }
  w.end_array().end_object();
  out += '\n';
  return out;
}

}  // namespace ehbt::cli
