// SPDX-License-Identifier: Apache-2.0
// Finding a target's modules: from its file mappings (NT_FILE, /proc/PID/maps), by walking
// the dynamic linker's link_map list (cores without NT_FILE), and the vDSO from the auxv.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/elf_core_file.hpp"
#include "core/module_resolver.hpp"

namespace ehbt::core {

using Auxv = std::vector<std::pair<uint64_t, uint64_t>>;

class ModuleCollector {
 public:
  // `on_file` is told about every module whose file may stand in for target memory.
  ModuleCollector(Memory& mem, ModuleResolver& resolver, bool big_endian, const Limits& limits,
                  std::function<void(const Module&)> on_file)
      : mem_(mem),
        resolver_(resolver),
        big_endian_(big_endian),
        limits_(limits),
        on_file_(std::move(on_file)) {}

  // The vDSO, from AT_SYSINFO_EHDR.
  void add_vdso(const Auxv& auxv);

  // One module per ELF mapped in `files` (each mapping of file offset 0 starts an instance).
  // Returns the main executable's path as the target names it ("" if not identified).
  std::string add_from_mappings(const std::vector<FileMapping>& files, const Auxv& auxv);

  // The executable from the auxv, then every object on the dynamic linker's list.
  // `exe_name` is the executable's name as far as the target tells it.
  void add_from_link_map(const Auxv& auxv, const std::string& exe_name);

  // One module the target lists itself (a minidump's module list), unless one already
  // covers its base.
  void add_listed(const ModuleHint& hint);

  // Dumped addresses that may hold a copy of the executable's first page (see ModuleHint).
  void set_header_candidates(std::vector<uint64_t> c) { header_candidates_ = std::move(c); }
  // Every mapped range of the target, sorted (a core's PT_LOADs, dumped or not): they place a
  // module the dynamic linker names whose file and headers are both missing.
  void set_mapped_ranges(std::vector<std::pair<uint64_t, uint64_t>> r) { mapped_ = std::move(r); }

  const std::vector<Module>& modules() const { return modules_; }
  std::vector<Module> take() { return std::move(modules_); }

 private:
  bool covered(uint64_t addr) const;
  // Whether the mapping of `path` from offset 0 at `base` holds an ELF object (see
  // mapped_object.hpp): one read of the target's first bytes there, else of the file's.
  bool is_module(const std::string& path, uint64_t base, bool executable);
  const ResolvedModule* add(const ModuleHint& hint);
  void walk_link_map(uint64_t r_debug);
  // The run of adjacent mapped ranges from the one holding `from` through the one holding
  // `through`; nothing when there is a gap or either is unmapped.
  std::optional<std::pair<uint64_t, uint64_t>> mapped_run(uint64_t from, uint64_t through) const;

  Memory& mem_;
  ModuleResolver& resolver_;
  bool big_endian_;
  const Limits& limits_;
  std::function<void(const Module&)> on_file_;
  std::vector<Module> modules_;
  std::optional<ResolvedModule> last_;
  std::vector<uint64_t> header_candidates_;
  std::vector<std::pair<uint64_t, uint64_t>> mapped_;
};

// The executable's name from NT_PRPSINFO: the first word of pr_psargs when it names the same
// program as pr_fname (pr_fname is cut at 15 bytes), else pr_fname.
std::string exe_name_from_psinfo(const std::string& fname, const std::string& psargs);

}  // namespace ehbt::core
