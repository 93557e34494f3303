// SPDX-License-Identifier: Apache-2.0
// open_core: an ELF core file as a Target.
#include <memory>

#include "core/core_memory.hpp"
#include "core/core_source.hpp"
#include "core/elf_core_file.hpp"
#include "core/jit_code.hpp"
#include "core/mapped_file.hpp"
#include "core/module_discovery.hpp"
#include "core/module_resolver.hpp"
#include "core/sysroot_path.hpp"
#include "core/warnings.hpp"
#include "ehbt/core.hpp"
#include "minidump/minidump_file.hpp"
#include "minidump/minidump_target.hpp"

namespace ehbt {
namespace {

constexpr uint64_t kDefaultPageSize = 4096;
constexpr std::size_t kMaxExecfn = 4096;

class CoreTarget final : public Target {
 public:
  static Expected<std::unique_ptr<Target>, std::string> open(const std::string& path,
                                                             const TargetOptions& options);
  Memory& memory() override { return *memory_; }

 private:
  core::MappedFile file_;
  std::unique_ptr<core::CoreMemory> memory_;
};

Expected<std::unique_ptr<Target>, std::string> CoreTarget::open(const std::string& path,
                                                                const TargetOptions& options) {
  auto file = core::open_core_source(path, options.limits);
  if (!file) return unexpected(file.error());
  // A minidump is told by content too, compressed or not.
  if (minidump::is_minidump(file->bytes())) {
    return minidump::open_minidump(std::move(file.value()), path, options);
  }
  auto parsed = core::parse_core(file->bytes(), options.limits);
  if (!parsed) return unexpected(path + ": " + parsed.error());

  auto t = std::make_unique<CoreTarget>();
  t->file_ = std::move(file.value());
  core::ParsedCore& pc = parsed.value();
  core::CoreNotes& notes = pc.notes;
  t->arch_ = pc.arch;
  t->input_format_ = "elf_core";
  t->auxv_ = notes.auxv;

  bool found_crashing = false;
  t->threads_.reserve(notes.threads.size());
  for (std::size_t i = 0; i < notes.threads.size(); ++i) {
    const core::PrStatus& st = notes.threads[i];
    ThreadState ts;
    ts.tid = st.pid;
    ts.regs = st.regs;
    // The kernel writes the thread that took the signal first; take the first signalled one.
    // It also copies the process's signal into every thread's pr_cursig, so only the
    // crashing thread is reported as signalled.
    if (!found_crashing && st.cursig != 0) {
      t->crashing_ = i;
      found_crashing = true;
      ts.signal = st.cursig;
    }
    t->threads_.push_back(std::move(ts));
  }

  if (notes.siginfo && notes.siginfo->signo != 0) {
    t->signal_ = core::signal_facts(*notes.siginfo);
  } else if (found_crashing) {
    // Only the number is known (pr_cursig). PRSTATUS's pr_info carries no code: the kernel
    // and qemu fill in si_signo alone, so its zero would read as SI_USER.
    const core::PrStatus& st = notes.threads[t->crashing_];
    SignalInfo si;
    si.number = st.cursig;
    t->signal_ = si;
    core::add_warning(t->warnings_,
                      Warning{kWarningNoSignalInfo,
                              "the core has no NT_SIGINFO note: the signal's code and fault "
                              "address are unknown",
                              "", ""});
  }
  // The kernel dumps a core only for a signal whose default action says so: a core that
  // records another one (gcore stops every thread with SIGSTOP) was written while the
  // process ran on. No thread crashed; the stop signal is kept for the header.
  core::settle_snapshot(t->signal_, t->snapshot_signal_, t->crashing_, t->threads_);
  if (pc.truncation.cut()) {
    const core::CoreTruncation& cut = pc.truncation;
    core::add_warning(t->warnings_,
                      Warning{kWarningTruncatedCore,
                              "the core is truncated: " + std::to_string(cut.file_size) + " of " +
                                  std::to_string(cut.expected_size) + " bytes, " +
                                  std::to_string(cut.segments_cut) +
                                  " memory segment(s) cut short (reads there fail)",
                              path, ""});
  }

  std::vector<uint64_t> dumped_starts;  // where a copy of a file's first page may lie
  std::vector<std::pair<uint64_t, uint64_t>> mapped;
  for (const core::CoreSegment& s : pc.segments) {
    if (!s.dumped.empty()) dumped_starts.push_back(s.vaddr);
    mapped.emplace_back(s.vaddr, s.vaddr + s.memsz);
  }
  const core::CodeRegions jit_regions =
      core::anonymous_code_from_core(pc.segments, notes.files, options.limits);
  t->memory_ = std::make_unique<core::CoreMemory>(std::move(pc.segments), t->file_.fd());
  uint64_t page_size = core::auxv_value(notes.auxv, core::kAtPagesz).value_or(kDefaultPageSize);
  if (page_size == 0 || (page_size & (page_size - 1)) != 0) page_size = kDefaultPageSize;

  core::ModuleResolver resolver(*t->memory_, pc.arch, pc.big_endian, options, page_size);
  resolver.set_warnings(&t->warnings_);
  t->debug_files_ = resolver.debug_files();
  core::CoreMemory* mem = t->memory_.get();
  core::ModuleCollector collector(
      *t->memory_, resolver, pc.big_endian, options.limits,
      [mem](const Module& m) { mem->add_file_backing(m.start, m.end, m.image, m.bias); });
  collector.add_vdso(notes.auxv);
  std::size_t before = collector.modules().size();
  if (notes.has_file_note && !notes.files.empty()) {
    t->executable_ = collector.add_from_mappings(notes.files, notes.auxv);
  }
  if (collector.modules().size() == before) {
    // No file list (qemu-user and other producers write none): ask the dynamic linker.
    std::string exe;
    if (auto execfn = core::auxv_value(notes.auxv, core::kAtExecfn)) {
      exe = core::read_c_string(*t->memory_, *execfn, kMaxExecfn).value_or("");
    }
    if (exe.empty()) exe = core::exe_name_from_psinfo(notes.fname, notes.psargs);
    collector.set_header_candidates(std::move(dumped_starts));
    collector.set_mapped_ranges(std::move(mapped));
    collector.add_from_link_map(notes.auxv, exe);
    t->executable_ = exe;
  }
  if (t->executable_.empty())
    t->executable_ = core::exe_name_from_psinfo(notes.fname, notes.psargs);
  for (Module& m : collector.take()) t->modules_.add(std::move(m));
  // No --perf-map: the perf map the JIT wrote for this process, /tmp/perf-PID.map inside a
  // sysroot (where a collector copies the crashed machine's files); never the host's /tmp,
  // whose file of that pid belongs to some other process. Optional: silent when absent.
  std::string perf_map = options.perf_map;
  const bool named = !perf_map.empty();
  if (!named && notes.pid != 0 && !jit_regions.empty()) {
    const std::string name = "/tmp/perf-" + std::to_string(notes.pid) + ".map";
    for (const std::string& root : options.sysroots) {
      if (auto found = core::resolve_in_root(root, name)) {
        perf_map = *found;
        break;
      }
    }
  }
  core::add_jit_code(t->modules_, jit_regions, perf_map, named, options.limits, t->warnings_);
  return std::unique_ptr<Target>(std::move(t));
}

}  // namespace

Expected<std::unique_ptr<Target>, std::string> open_core(const std::string& path,
                                                         const TargetOptions& options) {
  return CoreTarget::open(path, options);
}

}  // namespace ehbt
