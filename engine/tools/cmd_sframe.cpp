// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe dump|convert|check`: look at an ELF file's .sframe section, make one from its
// .eh_frame, and compare the two.
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "cli_args.hpp"
#include "cli_command.hpp"
#include "cli_paths.hpp"
#include "cli_sframe_check.hpp"
#include "cli_sframe_convert.hpp"
#include "cli_sframe_dump.hpp"
#include "cli_sframe_load.hpp"
#include "unwind/image_cfi_cache.hpp"

namespace ehbt::cli {
namespace {

constexpr std::string_view kHelp =
    R"(SFrame (.sframe, versions 2 and 3) is the compact unwind format of newer
binutils (as --gsframe, ld) and the Linux kernel's user-space stack
tracer: per function, rows saying where the CFA, the frame pointer and
the return address are. FILE/IN is an ELF executable, shared library or
object (link-time addresses). The section is found by name, else through
PT_GNU_SFRAME, and validated as the kernel does before any use.
Version 1 (binutils 2.40's as --gsframe, Debian 12's) is not read: such
a section is refused, saying `SFrame version 1 is not supported (only 2
and 3)` (exit 2). An empty file, a FIFO or another special file is
refused the same way, without opening it.

ehbt sframe dump FILE [--json]
  Every function of the .sframe section with its rows, in objdump
  --sframe's notation: the header, then per function `func idx [N]: pc =
  ..., size = ... bytes` (then `attr = "F"` for a V3 flexible FDE, `pauth
  = B key`, `signal frame`, `rep_size = N` for PCMASK) and a table
  STARTPC (link-time address; STARTPC[m]: PCMASK rows, the offset in the
  repeated block), CFA (`sp+16`, `fp+16`, `r10+0` by DWARF number, in
  parentheses when loaded from there), FP and RA (`u` untracked, `f` RA
  at the ABI's fixed CFA offset, `c-16` saved at CFA-16, `U` undefined:
  the outermost frame, `r16+0` the value in a register, `(fp+0)` saved at
  a register-based address; `[s]` after a signed return address). objdump
  shows `U` for the RA padding word of a flexible FDE too; ehbt shows
  what it means: no RA information, `f`/`u`.
  --json: {"format": "ehbt-sframe/1", "file", "section_addr", "version",
    "flags": ["FDE_SORTED", "FRAME_POINTER", "FDE_FUNC_START_PCREL"],
    "abi": "amd64" | "aarch64" | "aarch64-be" | "s390x",
    "fixed_fp_offset", "fixed_ra_offset",
    "functions": [{"start", "size", "pc_type": "increment" | "mask",
      "rep_size", "type": "default" | "flex", "pauth_key": "a" | "b",
      "signal_frame",
      "rows": [{"pc", "cfa": {"reg", "offset", "deref"},
                "fp": {"kind", "reg", "offset"}, "ra": {...},
                "ra_mangled"}]}],
    "errors": [{"code", "where" (section offset),
                "function" (FDE index or null)}]}
  kind: untracked, at_cfa, register, at_register, undefined; registers
  are DWARF numbers. A function that fails to decode is listed in
  "errors", not "functions", and the dump goes on; FDEs out of order are
  reported as "unsorted".
  exit: 0 no errors, 1 some functions in error, 2 unusable file, no
  .sframe, or a header the reader rejects (the reason on stderr).

ehbt sframe convert IN [-o OUT] [--version 2|3] [--elf OUT_ELF] [--json]
  Turns every FDE of IN's .eh_frame into an SFrame function (version 3 by
  default) and writes the section bytes to OUT (default: IN's file name +
  ".sframe" in the current directory). Functions with a row the version
  cannot express (V2: a CFA that is a DWARF expression such as gcc's
  DRAP, a return address kept in a register, ...) are left out whole and
  listed with the reason; an unwinder falls back to .eh_frame for them.
  The section is encoded for link-time address 0x0, where the --elf copy
  places it.
  --elf OUT_ELF: also writes a copy of IN with the section added as
    `.sframe` (with binutils' objcopy: $EHBT_OBJCOPY, else objcopy,
    aarch64-linux-gnu-objcopy or s390x-linux-gnu-objcopy on PATH by IN's
    architecture). The copy's .sframe is NOT loaded: a non-allocated
    section at address 0 (no SHF_ALLOC, no PT_GNU_SFRAME), so the kernel
    and readers of process memory do not see it; ehbt (which reads the
    file) and objdump --sframe do. An existing .sframe is kept as
    `.sframe.orig`.
  Text: what was written, functions written and left out, a histogram of
  reasons and each left-out function with its address and symbol. --json:
    {"format": "ehbt-sframe-convert/1", "file", "output", "elf_output",
     "version", "abi", "section_addr", "section_bytes",
     "functions_written", "functions_left_out", "reasons": {WHY: COUNT},
     "left_out": [{"function", "symbol", "pc", "why"}]}
  exit: 0 written, 2 unusable input (no .eh_frame), a write or objcopy
  failure, or an OUT or OUT_ELF that exists and is not a regular file (a
  FIFO, a device).

ehbt sframe check FILE [--json]
  Compares FILE's .sframe with its .eh_frame row by row: at every row
  boundary of either side inside each SFrame function, the CFA, FP and RA
  locations (the three things SFrame tracks; other registers are not
  compared). Text: one line per disagreement, `<symbol>+0x<off> (0x<pc>):
  <what>`, then a summary line (functions, rows compared, disagreements,
  eh_frame-only / sframe-only functions). --json:
    {"format": "ehbt-sframe-check/1", "file", "functions", "rows",
     "eh_frame_only", "sframe_only",
     "disagreements": [{"function", "symbol", "pc", "what"}],
     "errors": [{"code", "where"}]}
  Errors of the section itself (functions that fail to decode, FDEs out
  of order) are listed as `error: <code> at .sframe offset 0x..`.
  exit: 0 the two agree, 1 disagreements or errors, 2 unusable
  file, no .sframe (or one the reader rejects) or no .eh_frame.
)";

// dump and check take the same options.
constexpr OptionSpec kFileOptions[] = {
    {"--json", false, false}, {"--help", false, false}, {"-h", false, false}};
constexpr OptionSpec kConvertOptions[] = {{"-o", true, false},      {"--version", true, false},
                                          {"--elf", true, false},   {"--json", false, false},
                                          {"--help", false, false}, {"-h", false, false}};

// A subcommand's options and its single FILE operand. `exit` is set instead when the
// subcommand is done before it starts: a usage error, or --help printed.
struct FileArgs {
  ParsedArgs args;
  std::string file;
  std::optional<int> exit;
};

FileArgs parse_file_args(const Command& self, std::span<const std::string> argv,
                         std::span<const OptionSpec> specs) {
  FileArgs in;
  auto args = parse_args(argv, specs);
  if (!args) {
    in.exit = usage_error(self, args.error());
  } else if (args->has("--help") || args->has("-h")) {
    in.exit = print_command_help(self);
  } else if (args->positionals.size() != 1) {
    in.exit = usage_error(self, args->positionals.empty() ? "missing FILE" : "too many arguments");
  } else {
    in.file = args->positionals[0];
    in.args = std::move(*args);
  }
  return in;
}

int run_dump(const Command& self, std::span<const std::string> argv) {
  const FileArgs in = parse_file_args(self, argv, kFileOptions);
  if (in.exit) return *in.exit;
  Limits limits;
  auto loaded = load_sframe(in.file, limits);
  if (!loaded) return input_error(in.file, loaded.error());
  SframeDump dump = dump_sframe(*loaded->table, loaded->section);
  write_stdout(in.args.has("--json") ? render_dump_json(in.file, dump)
                                     : render_dump_text(in.file, dump));
  return dump.errors.empty() ? kExitOk : kExitPartial;
}

int run_check(const Command& self, std::span<const std::string> argv) {
  const FileArgs in = parse_file_args(self, argv, kFileOptions);
  if (in.exit) return *in.exit;
  Limits limits;
  auto loaded = load_sframe(in.file, limits);
  if (!loaded) return input_error(in.file, loaded.error());
  const Image& image = *loaded->image;
  if (image.eh_frame().empty()) return input_error(in.file, "no .eh_frame section");
  sframe::CheckReport report =
      sframe::check_against_cfi(*loaded->table, unwind::image_cfi(image, limits), limits);
  // What the dump finds wrong with the section itself (FDEs out of order, which the kernel
  // rejects) is an error of the check too, whether or not the comparison tripped over it.
  for (const SframeDumpError& e : dump_sframe(*loaded->table, loaded->section).errors) {
    bool known = false;
    for (const sframe::Error& r : report.errors) {
      known = known || (r.code == e.error.code && r.where == e.error.where);
    }
    if (!known) report.errors.push_back(e.error);
  }
  write_stdout(in.args.has("--json") ? render_check_json(in.file, image, report)
                                     : render_check_text(in.file, image, report));
  return report.disagreements.empty() && report.errors.empty() ? kExitOk : kExitPartial;
}

// The output file's default: IN's last path component + ".sframe", in the current directory.
std::string default_output(const std::string& in) {
  auto slash = in.find_last_of('/');
  std::string base = slash == std::string::npos ? in : in.substr(slash + 1);
  return base + ".sframe";
}

int run_convert(const Command& self, std::span<const std::string> argv) {
  const FileArgs in = parse_file_args(self, argv, kConvertOptions);
  if (in.exit) return *in.exit;
  uint8_t version = 3;
  if (auto v = in.args.value("--version")) {
    if (*v != "2" && *v != "3") return usage_error(self, "--version must be 2 or 3");
    version = static_cast<uint8_t>(*v == "2" ? 2 : 3);
  }
  const std::string output = in.args.value("-o").value_or(default_output(in.file));
  const std::string elf_output = in.args.value("--elf").value_or("");
  if (output.empty()) return usage_error(self, "-o needs a file name");
  if (in.args.has("--elf") && elf_output.empty())
    return usage_error(self, "--elf needs a file name");
  if (!elf_output.empty() && (elf_output == in.file || elf_output == output)) {
    return usage_error(self, "--elf must name a new file (not IN or OUT)");
  }
  if (output == in.file) return usage_error(self, "OUT must not be IN");
  // Replacing a FIFO or a device would block or write somewhere else than a file.
  for (const auto& [option, path] : {std::pair<const char*, std::string>{"-o", output},
                                     std::pair<const char*, std::string>{"--elf", elf_output}}) {
    if (path.empty() || !path_exists(path)) continue;
    if (auto bad = check_option_path(option, path, PathKind::RegularFile)) {
      return usage_error(self, *bad);
    }
  }

  Limits limits;
  auto image = Image::open(in.file, limits);
  if (!image) return input_error(in.file, image.error());
  // Encoded for address 0: where the --elf copy's non-allocated section sits.
  auto conversion = convert_image(**image, version, 0, limits);
  if (!conversion) return input_error(in.file, conversion.error());
  if (auto written = write_bytes(output, conversion->bytes); !written) {
    return input_error(output, written.error());
  }
  if (!elf_output.empty()) {
    auto copied = add_sframe_section(in.file, elf_output, output, !(*image)->sframe().empty(),
                                     (*image)->arch());
    if (!copied) return input_error(elf_output, copied.error());
  }
  write_stdout(in.args.has("--json")
                   ? render_convert_json(in.file, **image, *conversion, output, elf_output)
                   : render_convert_text(in.file, **image, *conversion, output, elf_output));
  return kExitOk;
}

int run_sframe(const Command& self, std::span<const std::string> argv) {
  if (argv.empty()) return usage_error(self, "missing dump, convert or check");
  const std::string& sub = argv[0];
  if (sub == "--help" || sub == "-h" || sub == "help") return print_command_help(self);
  auto rest = argv.subspan(1);
  if (sub == "dump") return run_dump(self, rest);
  if (sub == "check") return run_check(self, rest);
  if (sub == "convert") return run_convert(self, rest);
  return usage_error(self, "unknown sframe command '" + sub + "'");
}

const CommandRegistrar kSframe{
    Command{"sframe",
            40,
            "ehbt sframe dump FILE [--json] | check FILE [--json] | convert IN [-o OUT] "
            "[--version 2|3] [--elf OUT_ELF] [--json]",
            "Dump, check or make an ELF file's SFrame section (.sframe).",
            kHelp,
            run_sframe,
            {}}};

}  // namespace
}  // namespace ehbt::cli
