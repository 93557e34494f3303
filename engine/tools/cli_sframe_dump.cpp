// SPDX-License-Identifier: Apache-2.0
// Decoding and rendering a whole .sframe section for `ehbt sframe dump`.
#include "cli_sframe_dump.hpp"

#include <cinttypes>
#include <cstdio>
#include <set>
#include <utility>

#include "cli_sframe_text.hpp"
#include "report/json_writer.hpp"

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)
namespace {

// Section layout facts the order check needs to name where an FDE sits: the fixed header is
// 28 bytes plus an auxiliary header of sfh_auxhdr_len (byte 7) bytes, and the FDE sub-section
// starts sfh_fdeoff (bytes 20..23) after it. V2 FDEs are 20 bytes; V3 index entries 16.
constexpr std::size_t kHeaderSize = 28;

std::optional<uint64_t> fde_offset(const SectionRef& section, const sframe::Header& header,
                                   uint32_t index) {
  const auto& b = section.bytes;
  if (b.size() < kHeaderSize) return std::nullopt;
  auto byte = [&](std::size_t i) { return std::to_integer<uint32_t>(b[i]); };
  // The magic 0xdee2 reads as e2 de in little-endian sections.
  const bool little = byte(0) == 0xe2;
  uint32_t fdeoff = little ? byte(20) | byte(21) << 8 | byte(22) << 16 | byte(23) << 24
                           : byte(23) | byte(22) << 8 | byte(21) << 16 | byte(20) << 24;
  const uint64_t entry = header.version >= 3 ? 16 : 20;
  return kHeaderSize + byte(7) + uint64_t{fdeoff} + entry * index;
}

void add_error(SframeDump& dump, std::set<std::pair<int, uint64_t>>& seen, sframe::Error error,
               std::optional<uint32_t> function) {
  if (!seen.insert({static_cast<int>(error.code), error.where}).second) return;
  dump.errors.push_back(SframeDumpError{error, function});
}

}  // namespace

std::string_view abi_name(sframe::Abi abi) {
  switch (abi) {
    case sframe::Abi::Aarch64Big:
      return "aarch64-be";
    case sframe::Abi::Aarch64Little:
      return "aarch64";
    case sframe::Abi::Amd64Little:
      return "amd64";
    case sframe::Abi::S390xBig:
      return "s390x";
  }
  return "unknown";
}

std::vector<std::string> flag_names(uint8_t flags) {
  std::vector<std::string> names;
  static constexpr std::pair<uint8_t, const char*> kKnown[] = {
      {0x1, "FDE_SORTED"}, {0x2, "FRAME_POINTER"}, {0x4, "FDE_FUNC_START_PCREL"}};
  for (auto [bit, name] : kKnown) {
    if (flags & bit) names.emplace_back(name);
  }
  for (unsigned bit = 0x8; bit <= 0x80; bit <<= 1) {
    if (flags & bit) names.push_back(hex(bit));
  }
  return names;
}

SframeDump dump_sframe(const sframe::Table& table, const SectionRef& section) {
  SframeDump dump;
  dump.section_addr = section.addr;
  dump.header = table.header();
  std::set<std::pair<int, uint64_t>> seen;
  std::optional<uint64_t> previous_start;
  const uint32_t n = table.num_functions();
  for (uint32_t i = 0; i < n; ++i) {
    auto fn = table.function(i);
    if (!fn) {
      add_error(dump, seen, fn.error(), i);
      continue;
    }
    if (previous_start && fn->start < *previous_start) {
      auto where = fde_offset(section, dump.header, i);
      add_error(dump, seen, sframe::Error{sframe::ErrorCode::Unsorted, where.value_or(0)}, i);
    }
    previous_start = fn->start;
    dump.functions.push_back(std::move(*fn));
    dump.indices.push_back(i);
  }
  // The lookup checks the order of the FDEs its binary search probes: whatever it finds
  // wrong on the way to a function is the section's fault too (after the pass above, so an
  // order error already tied to an FDE index keeps it).
  for (const sframe::Function& fn : dump.functions) {
    auto row = table.find_row(fn.start);
    if (!row && row.error().code != sframe::ErrorCode::NotCovered) {
      add_error(dump, seen, row.error(), std::nullopt);
    }
  }
  return dump;
}

std::string render_dump_text(const std::string& file, const SframeDump& dump) {
  std::string out;
  const sframe::Header& h = dump.header;
  out += "Contents of the SFrame section .sframe of " + file + " (address " +
         hex(dump.section_addr) + "):\n";
  out += "  Header :\n\n";
  out += "    Version: SFRAME_VERSION_" + std::to_string(h.version) + "\n";
  std::vector<std::string> flags = flag_names(h.flags);
  out += "    Flags: ";
  if (flags.empty()) out += "NONE";
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (i > 0) out += ",\n           ";
    out += flags[i].starts_with("0x") ? flags[i] : "SFRAME_F_" + flags[i];
  }
  out += "\n";
  out += "    ABI: " + std::string(abi_name(h.abi)) + "\n";
  if (h.fixed_fp_offset != 0) {
    out += "    CFA fixed FP offset: " + std::to_string(h.fixed_fp_offset) + "\n";
  }
  if (h.fixed_ra_offset != 0) {
    out += "    CFA fixed RA offset: " + std::to_string(h.fixed_ra_offset) + "\n";
  }
  out += "    Num FDEs: " + std::to_string(h.num_fdes) + "\n";
  out += "    Num FREs: " + std::to_string(h.num_fres) + "\n\n";
  out += "  Function Index :\n";
  for (std::size_t i = 0; i < dump.functions.size(); ++i) {
    out += "\n" + render_function_text(h, dump.functions[i],
                                       "func idx [" + std::to_string(dump.indices[i]) + "]: ");
  }
  if (!dump.errors.empty()) {
    out += "\n  Errors :\n\n";
    for (const SframeDumpError& e : dump.errors) {
      out += "    " + std::string(sframe::to_string(e.error.code)) + " at section offset " +
             hex(e.error.where);
      if (e.function) out += " (func idx [" + std::to_string(*e.function) + "])";
      out += "\n";
    }
  }
  return out;
}

namespace {

std::string_view recovery_kind(sframe::Recovery::Kind kind) {
  switch (kind) {
    case sframe::Recovery::Kind::Untracked:
      return "untracked";
    case sframe::Recovery::Kind::AtCfa:
      return "at_cfa";
    case sframe::Recovery::Kind::Register:
      return "register";
    case sframe::Recovery::Kind::AtRegister:
      return "at_register";
    case sframe::Recovery::Kind::Undefined:
      return "undefined";
  }
  return "unknown";
}

void write_recovery(JsonWriter& w, std::string_view key, const sframe::Recovery& r) {
  w.key(key).begin_object(true);
  w.field("kind", recovery_kind(r.kind));
  w.field("reg", static_cast<uint64_t>(r.reg));
  w.field("offset", r.offset);
  w.end_object();
}

}  // namespace

std::string render_dump_json(const std::string& file, const SframeDump& dump) {
  const sframe::Header& h = dump.header;
  return json_document([&](JsonWriter& w) {
    w.field("format", "ehbt-sframe/1");
    w.field("file", file);
    w.address_field("section_addr", dump.section_addr);
    w.field("version", static_cast<uint64_t>(h.version));
    w.key("flags").begin_array(true);
    for (const std::string& f : flag_names(h.flags)) w.value(f);
    w.end_array();
    w.field("abi", abi_name(h.abi));
    w.field("fixed_fp_offset", static_cast<int64_t>(h.fixed_fp_offset));
    w.field("fixed_ra_offset", static_cast<int64_t>(h.fixed_ra_offset));
    w.key("functions").begin_array();
    for (const sframe::Function& fn : dump.functions) {
      w.begin_object();
      w.address_field("start", fn.start);
      w.field("size", static_cast<uint64_t>(fn.size));
      w.field("pc_type", fn.pc_type == sframe::PcType::Mask ? "mask" : "increment");
      w.field("rep_size", static_cast<uint64_t>(fn.rep_size));
      w.field("type", fn.type == sframe::FdeType::Flex ? "flex" : "default");
      w.field("pauth_key", fn.pauth_b_key ? "b" : "a");
      w.field("signal_frame", fn.signal_frame);
      w.key("rows").begin_array();
      for (const sframe::FrameRow& row : fn.rows) {
        w.begin_object(true);
        w.address_field("pc", fn.start + row.start);
        w.key("cfa").begin_object(true);
        w.field("reg", static_cast<uint64_t>(row.cfa.reg));
        w.field("offset", row.cfa.offset);
        w.field("deref", row.cfa.deref);
        w.end_object();
        write_recovery(w, "fp", row.fp);
        write_recovery(w, "ra", row.ra);
        w.field("ra_mangled", row.ra_mangled);
        w.end_object();
      }
      w.end_array();
      w.end_object();
    }
    w.end_array();
    w.key("errors").begin_array();
    for (const SframeDumpError& e : dump.errors) {
      w.begin_object(true);
      w.field("code", sframe::to_string(e.error.code));
      w.address_field("where", e.error.where);
      w.key("function");
      if (e.function) {
        w.value(static_cast<uint64_t>(*e.function));
      } else {
        w.null();
      }
      w.end_object();
    }
    w.end_array();
  });
}

}  // namespace ehbt::cli
