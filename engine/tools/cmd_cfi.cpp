// SPDX-License-Identifier: Apache-2.0
// `ehbt cfi FILE`: evaluate every unwind row an ELF file describes and report what the engine
// cannot use; or, with --pc, show the rows that cover given addresses.
#include <string>

#include "cli_args.hpp"
#include "cli_cfi_check.hpp"
#include "cli_cfi_render.hpp"
#include "cli_command.hpp"
#include "ehbt/image.hpp"
#include "unwind/image_cfi_cache.hpp"

namespace ehbt::cli {
namespace {

constexpr OptionSpec kOptions[] = {{"--pc", true, false},
                                   {"--json", false, false},
                                   {"--help", false, false},
                                   {"-h", false, false}};

constexpr std::string_view kHelp =
    R"(FILE is an ELF executable, shared library or debug file (link-time
addresses).

Without --pc: every FDE of .eh_frame and .debug_frame is parsed and every
row it defines is evaluated; each DWARF expression in a row's CFA or
register rules is run once by the engine's expression VM against made-up
registers and memory.
  unsupported  rows (or records) the engine deliberately does not
               evaluate: the evaluator or the VM answers "unsupported"
  malformed    records or rows whose bytes are invalid or exceed a cap in
               ehbt::Limits (a division by zero or a memory fault in a
               dry run depends on the values a real target supplies and
               is not counted)
  text: a summary line, then one line per issue; --json:
    {"file", "fdes", "rows", "unsupported", "malformed", "eh_frame_bad",
     "debug_frame_bad", "details_truncated",
     "details": [{"kind", "section", "fde_offset", "pc", "what", "error",
                  "where"}]}
  (at most 1000 details are listed; the counts are always complete)
  A file without .eh_frame and .debug_frame gets a `note:` line saying
  so and whether it has .sframe (exit 1); sections that hold no FDE (a
  data-only library) get a note too (exit 0: nothing in them is wrong).
  --json has "sections": {"eh_frame", "debug_frame", "sframe"} (true
  where the file has one).

--pc ADDR[,ADDR]...: the row covering each address (hexadecimal, 0x
optional, link-time), looked up in .eh_frame, then .debug_frame. Text
follows readelf --debug-dump=frames-interp:
  LOC CFA and one column per register with a rule, the return-address
  column last as `ra`; CFA `rsp+8` or `exp`; rules `u`
  undefined/unspecified, `s` same value, `c-8` saved at CFA-8, `v+8`
  value CFA+8, a register name, `exp`, `vexp`.
  --json: {"file", "arch", "lookups": [{"pc", "error" (null when found),
    "section", "fde_offset", "cie_offset", "fde_start", "fde_end", "loc",
    "loc_end", "signal_frame", "ra_signed",
    "cfa": {"rule": "reg_offset", "reg": "rsp", "offset": 8}
         | {"rule": "expression", "expr": HEX} | {"rule": "undefined"},
    "registers": {"rbx": {"rule": "offset", "offset": -16}, "ra": {...},
                  ...}}]}
  register rules: unspecified, undefined, same_value, offset, val_offset
  (with "offset"), register (with "reg"), expression, val_expression
  (with "expr", the bytes in hex).
Register names: rax..r15, rip for x86_64; x0..x30, sp for aarch64;
r0..r15 for s390x.

exit status:
  0  no unsupported and no malformed rows (with --pc: every address has a
     row)
  1  some rows are unsupported or malformed, or the file has neither
     .eh_frame nor .debug_frame: nothing to unwind with (with --pc: some
     address has no row)
  2  the file is unusable (empty, not ELF, not a regular file,
     unreadable) or usage error
)";

int run_cfi(const Command& self, std::span<const std::string> argv) {
  auto args = parse_args(argv, kOptions);
  if (!args) return usage_error(self, args.error());
  if (args->has("--help") || args->has("-h")) return print_command_help(self);
  if (args->positionals.size() != 1) {
    return usage_error(self, args->positionals.empty() ? "missing FILE" : "too many arguments");
  }
  std::optional<std::vector<uint64_t>> pcs;
  if (auto list = args->value("--pc")) {
    pcs = parse_hex_list(*list);
    if (!pcs) return usage_error(self, "bad address list '" + *list + "'");
  }
  const std::string& file = args->positionals[0];
  Limits limits;
  auto image = Image::open(file, limits);
  if (!image) return input_error(file, image.error());
  bool json = args->has("--json");

  if (pcs) {
    auto rows = lookup_rows(unwind::image_cfi(**image, limits), *pcs, limits);
    Arch arch = (*image)->arch();
    write_stdout(json ? render_lookups_json(file, arch, rows)
                      : render_lookups_text(file, arch, rows));
    for (const RowLookup& r : rows) {
      if (r.error) return kExitPartial;
    }
    return kExitOk;
  }
  CfiCheck check = check_cfi(**image, limits);
  write_stdout(json ? render_check_json(file, check) : render_check_text(file, check));
  if (no_unwind_tables(check)) return kExitPartial;  // nothing to unwind with: said in a note
  return check.unsupported == 0 && check.malformed == 0 ? kExitOk : kExitPartial;
}

const CommandRegistrar kCfi{Command{"cfi",
                                    30,
                                    "ehbt cfi FILE [--pc ADDR[,ADDR]...] [--json]",
                                    "The unwind rows an ELF file describes, validated row by row.",
                                    kHelp,
                                    run_cfi,
                                    {}}};

}  // namespace
}  // namespace ehbt::cli
