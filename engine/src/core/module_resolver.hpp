// SPDX-License-Identifier: Apache-2.0
// Turns what a target says about one mapped ELF (its name, where it is mapped, its load
// bias) into a Module: reads the headers and build-id the target holds, finds the file
// (sysroots first), checks the build-id, and falls back to an image built from target memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/debug_files.hpp"
#include "core/debuginfod_fetch.hpp"
#include "core/mapped_object.hpp"
#include "core/target_elf.hpp"
#include "ehbt/core.hpp"

namespace ehbt::core {

// What is known about one module before resolving it; any field may be missing.
struct ModuleHint {
  std::string path;                 // as the target names it
  std::optional<uint64_t> base;     // target address of file offset 0 (the ELF header)
  std::optional<uint64_t> bias;     // load bias the target recorded (link_map l_addr)
  std::optional<uint64_t> dynamic;  // target address of its dynamic section (l_ld)
  std::optional<uint64_t> phdr;     // AT_PHDR ...
  uint64_t phnum = 0;               // ... and AT_PHNUM
  std::optional<uint64_t> entry;    // AT_ENTRY
  bool main_executable = false;     // TargetOptions::exe applies
  // Dumped addresses that may hold a copy of the file's first page (core segment starts):
  // with AT_PHDR, they let an executable be placed when neither its mapped headers nor its
  // file are available.
  const std::vector<uint64_t>* header_candidates = nullptr;
  // Mapped range, when the headers cannot be read and no file is found.
  std::optional<std::pair<uint64_t, uint64_t>> range;
  // The range is the extent of the file's own mappings (NT_FILE), not a guess that may
  // include anonymous memory: a file shorter than it cannot be the one mapped.
  bool range_from_file_mappings = false;
  // The build-id the target recorded apart from its memory (a minidump's module list): used
  // when memory does not hold the module's notes. `recorded_build_id_guid`: only the first
  // 16 bytes were kept (a PDB70 GUID), and a file whose build-id starts so is the one.
  std::string recorded_build_id;
  bool recorded_build_id_guid = false;
  // The target lists the module itself with its base and extent (a minidump's module list):
  // with neither headers in memory nor a file, it is still placed there (bias = base), so
  // that frames in it name it and say its file is missing.
  bool place_at_base = false;
};

struct ResolvedModule {
  Module module;
  // The program headers as the target holds them; when those were not dumped, the file's
  // (elf_from_file), which still give the layout, the dynamic section and the interpreter.
  std::optional<TargetElf> elf;
  bool elf_from_file = false;
  std::shared_ptr<const Image> file;  // the file found, even when it did not match
  bool file_usable = false;           // the file may stand in for undumped target memory
};

class ModuleResolver {
 public:
  ModuleResolver(Memory& mem, Arch arch, bool big_endian, const TargetOptions& options,
                 uint64_t page_size)
      : mem_(mem),
        arch_(arch),
        big_endian_(big_endian),
        word_(arch_info(arch).address_size),
        options_(options),
        page_size_(page_size),
        debug_files_(std::make_shared<TargetDebugFiles>(options)) {}

  // Nothing when the hint does not lead to an ELF with a known bias and range.
  std::optional<ResolvedModule> resolve(const ModuleHint& hint);

  // Opens the file the target names `path`: each sysroot + path, then path (for the main
  // executable TargetOptions::exe replaces all of these). Sets `found` to the file opened;
  // when none opens, `unreadable` (if given) to the first candidate that exists but is no
  // readable ELF file ("" when none exists).
  std::shared_ptr<const Image> open_file(const std::string& path, bool main_executable,
                                         std::string& found, std::string* unreadable = nullptr);

  // What the file open_file() would look at holds: the first candidate that exists decides.
  FileContent file_content(const std::string& path, bool main_executable) const;

  // Where to say what could not be found, matched or fetched; none by default.
  void set_warnings(std::vector<Warning>* warnings) {
    warnings_ = warnings;
    debug_files_->set_warnings(warnings);
  }
  // The deferred debug-file lookups of the modules resolved: the target keeps it (images
  // hold it weakly), and with it the debuginfod session.
  std::shared_ptr<TargetDebugFiles> debug_files() const { return debug_files_; }
  // The target's address size (4 or 8): how wide its pointers in memory are.
  uint8_t address_size() const { return word_; }
  // Who names the files, for messages: "the core" (default) or "the process".
  void set_named_by(std::string who) { named_by_ = std::move(who); }

 private:
  // The files that may be the one the target names `path`, in the order they are tried.
  std::vector<std::string> candidates(const std::string& path, bool main_executable) const;
  std::shared_ptr<const Image> open_one(const std::string& file);
  // Records why module `m` has no file (Module::missing, and a warning). `unreadable` and
  // `mismatch` as found by resolve(); both empty: no file was found at all.
  void report_no_file(const ModuleHint& hint, Module& m, const std::string& unreadable,
                      const std::string& rejected, const std::string& mismatch);

  Memory& mem_;
  Arch arch_;
  bool big_endian_;
  uint8_t word_;  // the target's address size: its ELF class, its pointers in memory
  const TargetOptions& options_;
  uint64_t page_size_;
  std::vector<Warning>* warnings_ = nullptr;
  std::string named_by_ = "the core";
  std::shared_ptr<TargetDebugFiles> debug_files_;
};

// Removes the " (deleted)" suffix the kernel appends to names of unlinked files.
std::string strip_deleted(std::string path);

}  // namespace ehbt::core
