// SPDX-License-Identifier: Apache-2.0
// `ehbt sframe convert`: conversion, output files and their rendering.
#include "cli_sframe_convert.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include "cli_sframe_dump.hpp"
#include "report/json_writer.hpp"
#include "unwind/image_cfi_cache.hpp"

extern char** environ;

namespace ehbt::cli {

// The JSON writer, number formatting and names are the report layer's.
using namespace ::ehbt::report;  // NOLINT(google-build-using-namespace)
namespace {

// Runs a program found on PATH with `args` (args[0] is its name); waits for it. Its output
// goes to our stderr so that objcopy's own messages reach the user.
Expected<void, std::string> run_program(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // objcopy prints nothing on stdout, but keep our stdout (JSON) clean whatever it does.
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return unexpected(args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return unexpected(args[0] + ": waitpid: " + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    return unexpected(args[0] + " killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return unexpected(args[0] + " exited with status " + std::to_string(WEXITSTATUS(status)));
  }
  return {};
}

// The host's objcopy only knows the host's ELF flavour (Debian builds binutils for one
// target); the cross binutils packages bring one per architecture.
std::string objcopy_program(Arch arch) {
  const char* env = std::getenv("EHBT_OBJCOPY");
  if (env && *env) return env;
  switch (arch) {
    case Arch::AArch64:
      return "aarch64-linux-gnu-objcopy";
    case Arch::S390x:
      return "s390x-linux-gnu-objcopy";
    case Arch::I386:
      return "i686-linux-gnu-objcopy";
    case Arch::X86_64:
      break;
  }
  return "objcopy";
}

std::string symbol_name(const Image& image, uint64_t addr) {
  auto sym = image.symbolize(addr);
  return sym ? sym->name : std::string();
}

// A string field that is null in the document when empty.
std::optional<std::string> or_null(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

}  // namespace

Expected<SframeConversion, std::string> convert_image(const Image& image, uint8_t version,
                                                      uint64_t section_addr, const Limits& limits) {
  if (image.eh_frame().empty()) return unexpected(std::string("no .eh_frame section"));
  if (!sframe::abi_for(image.arch(), image.big_endian())) {
    return unexpected("SFrame defines no ABI for " + std::string(arch_info(image.arch()).name));
  }
  SframeConversion c;
  c.version = version;
  c.section_addr = section_addr;
  c.conversion =
      sframe::convert_cfi(unwind::image_cfi(image, limits), image.arch(), version, limits);
  auto bytes = sframe::encode(c.conversion, section_addr);
  if (!bytes) {
    return unexpected("encoding SFrame V" + std::to_string(version) +
                      " failed: " + std::string(sframe::to_string(bytes.error().code)));
  }
  c.bytes = std::move(*bytes);
  c.functions_written = c.conversion.functions.size();
  std::set<uint64_t> left_out;
  std::set<std::pair<uint64_t, std::string>> counted;
  for (const sframe::Inexpressible& x : c.conversion.inexpressible) {
    left_out.insert(x.function);
    if (counted.insert({x.function, x.why}).second) ++c.reasons[x.why];
  }
  c.functions_left_out = left_out.size();
  return c;
}

Expected<void, std::string> write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return unexpected(path + ": " + std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    return unexpected(path + ": " + std::strerror(ok ? errno : err));
  }
  return {};
}

Expected<void, std::string> add_sframe_section(const std::string& in, const std::string& out,
                                               const std::string& sframe_file, bool rename_existing,
                                               Arch arch) {
  const std::string objcopy = objcopy_program(arch);
  std::string source = in;
  if (rename_existing) {
    auto renamed = run_program({objcopy, "--rename-section", ".sframe=.sframe.orig", in, out});
    if (!renamed) return renamed;
    source = out;
  }
  return run_program({objcopy, "--add-section", ".sframe=" + sframe_file, "--set-section-flags",
                      ".sframe=contents,readonly", source, out});
}

std::string render_convert_text(const std::string& file, const Image& image,
                                const SframeConversion& c, const std::string& output,
                                const std::string& elf_output) {
  std::string out;
  out += file + ": wrote " + output + " (" + std::to_string(c.bytes.size()) + " bytes, SFrame V" +
         std::to_string(c.version) + ", " + std::string(abi_name(c.conversion.header.abi)) +
         ", encoded for section address " + hex(c.section_addr) + ")\n";
  out += "  functions written:  " + std::to_string(c.functions_written) + "\n";
  out += "  functions left out: " + std::to_string(c.functions_left_out) + "\n";
  if (!c.reasons.empty()) {
    out += "  reasons:\n";
    for (const auto& [why, n] : c.reasons) {
      char count[24];
      std::snprintf(count, sizeof count, "%8llu", static_cast<unsigned long long>(n));
      out += "  " + std::string(count) + "  " + why + "\n";
    }
    out += "  left out:\n";
    for (const sframe::Inexpressible& x : c.conversion.inexpressible) {
      std::string name = symbol_name(image, x.function);
      out += "    " + hex(x.function) + (name.empty() ? "" : " " + name) + ": " + x.why;
      if (x.pc != x.function) out += " (row at " + hex(x.pc) + ")";
      out += "\n";
    }
  }
  if (!elf_output.empty()) {
    out += "  ELF copy: " + elf_output +
           " (.sframe added as a non-loaded section at address 0x0: no SHF_ALLOC, no "
           "PT_GNU_SFRAME)\n";
  }
  return out;
}

std::string render_convert_json(const std::string& file, const Image& image,
                                const SframeConversion& c, const std::string& output,
                                const std::string& elf_output) {
  return json_document([&](JsonWriter& w) {
    w.field("format", "ehbt-sframe-convert/1");
    w.field("file", file);
    w.field("output", output);
    w.field("elf_output", or_null(elf_output));
    w.field("version", static_cast<uint64_t>(c.version));
    w.field("abi", abi_name(c.conversion.header.abi));
    w.address_field("section_addr", c.section_addr);
    w.field("section_bytes", static_cast<uint64_t>(c.bytes.size()));
    w.field("functions_written", c.functions_written);
    w.field("functions_left_out", c.functions_left_out);
    w.key("reasons").begin_object();
    for (const auto& [why, n] : c.reasons) w.field(why, n);
    w.end_object();
    w.key("left_out").begin_array();
    for (const sframe::Inexpressible& x : c.conversion.inexpressible) {
      w.begin_object(true);
      w.address_field("function", x.function);
      w.field("symbol", or_null(symbol_name(image, x.function)));
      w.address_field("pc", x.pc);
      w.field("why", x.why);
      w.end_object();
    }
    w.end_array();
  });
}

}  // namespace ehbt::cli
