// SPDX-License-Identifier: Apache-2.0
// Renderings of `ehbt sframe check`.
#include "cli_sframe_check.hpp"

#include "report/json_writer.hpp"

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)

std::string symbol_offset(const Image& image, uint64_t function, uint64_t pc) {
  auto sym = image.symbolize(pc);
  if (!sym) sym = image.symbolize(function);
  if (sym && pc >= sym->start) return sym->name + "+" + hex(pc - sym->start);
  return hex(function) + "+" + hex(pc - function);
}

std::string render_check_text(const std::string& file, const Image& image,
                              const sframe::CheckReport& report) {
  std::string out;
  for (const sframe::Disagreement& d : report.disagreements) {
    out += symbol_offset(image, d.function, d.pc) + " (" + hex(d.pc) + "): " + d.what + "\n";
  }
  for (const sframe::Error& e : report.errors) {
    out += "error: " + std::string(sframe::to_string(e.code)) + " at .sframe offset " +
           hex(e.where) + "\n";
  }
  out += file + ": " + std::to_string(report.functions) + " functions, " +
         std::to_string(report.rows) + " rows compared, " +
         std::to_string(report.disagreements.size()) + " disagreements, " +
         std::to_string(report.eh_frame_only) + " eh_frame-only functions, " +
         std::to_string(report.sframe_only) + " sframe-only functions";
  if (!report.errors.empty()) out += ", " + std::to_string(report.errors.size()) + " errors";
  out += "\n";
  return out;
}

std::string render_check_json(const std::string& file, const Image& image,
                              const sframe::CheckReport& report) {
  return json_document([&](JsonWriter& w) {
    w.field("format", "ehbt-sframe-check/1");
    w.field("file", file);
    w.field("functions", report.functions);
    w.field("rows", report.rows);
    w.field("eh_frame_only", report.eh_frame_only);
    w.field("sframe_only", report.sframe_only);
    w.key("disagreements").begin_array();
    for (const sframe::Disagreement& d : report.disagreements) {
      w.begin_object(true);
      w.address_field("function", d.function);
      w.field("symbol", symbol_offset(image, d.function, d.pc));
      w.address_field("pc", d.pc);
      w.field("what", d.what);
      w.end_object();
    }
    w.end_array();
    w.key("errors").begin_array();
    for (const sframe::Error& e : report.errors) {
      w.begin_object(true);
      w.field("code", sframe::to_string(e.code));
      w.address_field("where", e.where);
      w.end_object();
    }
    w.end_array();
  });
}

}  // namespace ehbt::cli
