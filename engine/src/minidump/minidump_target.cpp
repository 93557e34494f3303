// SPDX-License-Identifier: Apache-2.0
// open_minidump: threads, signal and memory from the minidump; modules resolved by build-id
// through the same resolver as a core's (sysroots, debug dirs, debuginfod, the same
// warnings); memory read from the dump's ranges, then from the module files that matched.
#include "minidump/minidump_target.hpp"

#include "core/core_memory.hpp"
#include "core/module_discovery.hpp"
#include "core/module_resolver.hpp"
#include "core/siginfo.hpp"
#include "core/warnings.hpp"
#include "minidump/library_path.hpp"
#include "minidump/minidump_file.hpp"
#include "minidump/minidump_signal.hpp"

namespace ehbt::minidump {
namespace {

constexpr uint64_t kDefaultPageSize = 4096;

class MinidumpTarget final : public Target {
 public:
  static Expected<std::unique_ptr<Target>, std::string> open(core::MappedFile file,
                                                             const std::string& path,
                                                             const TargetOptions& options);
  Memory& memory() override { return *memory_; }

 private:
  void take_threads(ParsedMinidump& md);
  void add_modules(const ParsedMinidump& md, const TargetOptions& options, uint64_t page_size);

  core::MappedFile file_;
  std::unique_ptr<core::CoreMemory> memory_;
};

// The module holding the program's entry point: the executable. Writers' SizeOfImage is not
// always the mapped extent (LLDB writes a section's size), so /proc/PID/maps, when the dump
// kept it, gives each file's extent; else the module list's order does (every writer lists
// the executable first).
std::optional<std::size_t> executable_index(const ParsedMinidump& md) {
  auto entry = core::auxv_value(md.auxv, core::kAtEntry);
  for (std::size_t i = 0; entry && i < md.modules.size(); ++i) {
    const ModuleRecord& m = md.modules[i];
    if (*entry >= m.base && *entry - m.base < m.size) return i;
    for (const core::FileMapping& f : md.maps) {
      if (f.path == m.name && *entry >= f.start && *entry < f.end) return i;
    }
  }
  for (std::size_t i = 0; i < md.modules.size(); ++i) {
    if (md.modules[i].name.starts_with('/')) return i;
  }
  return std::nullopt;
}

void MinidumpTarget::take_threads(ParsedMinidump& md) {
  threads_ = std::move(md.threads);
  if (!md.exception) return;
  const ExceptionRecord& e = *md.exception;
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (threads_[i].tid != e.tid) continue;
    // Crashpad's thread list has the thread's registers inside its signal handler; the
    // exception's context is where the signal interrupted it.
    if (e.context) threads_[i].regs = *e.context;
    SignalReading r = signal_of(e, threads_[i].regs.pc(), arch_info(arch_).address_size);
    if (!r.signal) return;
    if (r.number_only && !core::signal_dumps_core(r.signal->number)) {
      // LLDB writes its stop's value there: a signal's number, or for a breakpoint the
      // breakpoint's. Only a signal that dumps core is taken as one (a stop at a breakpoint
      // numbered like one cannot be told apart); anything else is no signal at all.
      core::add_warning(warnings_,
                        Warning{kWarningNoSignalInfo,
                                "the minidump's exception record holds the number " +
                                    std::to_string(r.signal->number) +
                                    " only, which is no crash signal (LLDB records its stop's "
                                    "value there, e.g. a breakpoint's): no signal is reported",
                                "", ""});
      return;
    }
    crashing_ = i;
    threads_[i].signal = r.signal->number;
    signal_ = std::move(r.signal);
    if (r.number_only) {
      core::add_warning(warnings_,
                        Warning{kWarningNoSignalInfo,
                                "the minidump's exception record holds the signal number only "
                                "(its writer recorded no si_code): the signal's code and fault "
                                "address are unknown",
                                "", ""});
    }
    break;
  }
  core::settle_snapshot(signal_, snapshot_signal_, crashing_, threads_);
}

void MinidumpTarget::add_modules(const ParsedMinidump& md, const TargetOptions& options,
                                 uint64_t page_size) {
  core::ModuleResolver resolver(*memory_, arch_, false, options, page_size);
  resolver.set_warnings(&warnings_);
  debug_files_ = resolver.debug_files();
  resolver.set_named_by("the minidump");
  core::CoreMemory* mem = memory_.get();
  core::ModuleCollector collector(
      *memory_, resolver, false, options.limits,
      [mem](const Module& m) { mem->add_file_backing(m.start, m.end, m.image, m.bias); });
  const std::optional<std::size_t> exe = executable_index(md);
  for (std::size_t i = 0; i < md.modules.size(); ++i) {
    const ModuleRecord& rec = md.modules[i];
    core::ModuleHint h;
    h.path = library_path(core::strip_deleted(rec.name), arch_, options);
    h.base = rec.base;
    if (rec.size != 0 && rec.base + rec.size > rec.base) {
      h.range = std::make_pair(rec.base, rec.base + rec.size);
    }
    h.recorded_build_id = rec.build_id;
    h.recorded_build_id_guid = rec.guid_only;
    h.place_at_base = true;
    h.main_executable = exe && *exe == i;
    if (h.main_executable) {
      h.entry = core::auxv_value(md.auxv, core::kAtEntry);
      executable_ = h.path;
    }
    collector.add_listed(h);
  }
  if (md.modules.empty() && !md.maps.empty()) {
    // No module list (a writer that kept only /proc/PID/maps): the mappings, as for a core.
    executable_ = collector.add_from_mappings(md.maps, md.auxv);
  }
  if (executable_.empty()) {
    executable_ = md.cmdline.substr(0, md.cmdline.find(' '));
    if (executable_.empty()) executable_ = md.process_name;
  }
  for (Module& m : collector.take()) modules_.add(std::move(m));
}

Expected<std::unique_ptr<Target>, std::string> MinidumpTarget::open(core::MappedFile file,
                                                                    const std::string& path,
                                                                    const TargetOptions& options) {
  auto parsed = parse_minidump(file.bytes(), options.limits);
  if (!parsed) return unexpected(path + ": " + parsed.error());
  ParsedMinidump& md = parsed.value();

  auto t = std::make_unique<MinidumpTarget>();
  t->file_ = std::move(file);
  t->arch_ = md.arch;
  t->input_format_ = "minidump";
  t->auxv_ = md.auxv;
  t->take_threads(md);
  if (md.truncated()) {
    core::add_warning(
        t->warnings_,
        Warning{kWarningTruncatedCore,
                "the minidump is truncated: " + std::to_string(md.file_size) + " of " +
                    std::to_string(md.expected_size) + " bytes, " + std::to_string(md.cut_ranges) +
                    " memory range(s) cut short (reads there fail)",
                path, ""});
  }
  t->memory_ = std::make_unique<core::CoreMemory>(std::move(md.memory), t->file_.fd());
  uint64_t page_size = core::auxv_value(md.auxv, core::kAtPagesz).value_or(kDefaultPageSize);
  if (page_size == 0 || (page_size & (page_size - 1)) != 0) page_size = kDefaultPageSize;
  t->add_modules(md, options, page_size);
  return std::unique_ptr<Target>(std::move(t));
}

}  // namespace

Expected<std::unique_ptr<Target>, std::string> open_minidump(core::MappedFile file,
                                                             const std::string& path,
                                                             const TargetOptions& options) {
  return MinidumpTarget::open(std::move(file), path, options);
}

}  // namespace ehbt::minidump
