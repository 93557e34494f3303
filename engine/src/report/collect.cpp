// SPDX-License-Identifier: Apache-2.0
// Building a report: thread selection, unwinding, frame description and symbol lookup.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "ehbt/perf_map.hpp"
#include "ehbt/report.hpp"
#include "lines/source_lookup.hpp"
#include "report/frame_run.hpp"
#include "report/source_lines.hpp"

namespace ehbt::report {

namespace {

// A frame whose symbol is still to be looked up: where its line is, and what to look up.
struct PendingSymbol {
  const Image* image;
  uint64_t lookup;  // link-time lookup pc
  std::size_t thread, frame;
};

// Names every pending frame with one symbolize_all() per image: a one-shot command needs a
// few hundred names, and one pass over each symbol table finds them for less than building
// the table would cost. Each distinct pc is asked about once. A recursion puts one pc in
// hundreds of consecutive frames: such a run (frame_run.hpp) is named by its first frame, and
// the others take its answer, without being sorted.
void name_frames(std::vector<PendingSymbol>& pending, BacktraceReport& report) {
  const std::vector<FrameRun> runs =
      collapse_runs(pending, [](const PendingSymbol& a, const PendingSymbol& b) {
        return a.image == b.image && a.lookup == b.lookup;
      });
  std::sort(pending.begin(), pending.end(), [](const PendingSymbol& a, const PendingSymbol& b) {
    return std::less<const Image*>()(a.image, b.image) ||
           (a.image == b.image && a.lookup < b.lookup);
  });
  std::vector<uint64_t> addrs;
  for (std::size_t i = 0; i < pending.size();) {
    std::size_t j = i;
    addrs.clear();
    for (; j < pending.size() && pending[j].image == pending[i].image; ++j) {
      if (addrs.empty() || addrs.back() != pending[j].lookup) addrs.push_back(pending[j].lookup);
    }
    const std::vector<std::optional<Symbol>> syms = pending[i].image->symbolize_all(addrs);
    for (std::size_t k = i, a = 0; k < j; ++k) {
      while (addrs[a] != pending[k].lookup) ++a;  // both ascending: a stays in addrs
      const std::optional<Symbol>& sym = syms[a];
      if (!sym) continue;
      FrameLine& line = report.threads[pending[k].thread].frames[pending[k].frame];
      line.symbol = sym->name;
      line.symbol_offset = *line.module_offset - sym->start;
    }
    i = j;
  }
  for (const FrameRun& run : runs) {
    std::vector<FrameLine>& frames = report.threads[run.thread].frames;
    const FrameLine& named = frames[run.first];
    if (!named.symbol) continue;
    // The same lookup pc, not always the same pc (a frame's own pc and a return address
    // after it): the offset is from the symbol's start.
    const uint64_t start = *named.module_offset - *named.symbol_offset;
    for (std::size_t f = run.first + 1; f <= run.last; ++f) {
      frames[f].symbol = named.symbol;
      frames[f].symbol_offset = *frames[f].module_offset - start;
    }
  }
}

// The frame's module in `modules`. A walk driven by someone else may have pointed its frames
// into another copy of the set: then the module is looked up again.
const Module* module_in(const Frame& frame, const ModuleSet& modules) {
  const std::vector<Module>& all = modules.modules();
  const std::less<const Module*> before;
  if (frame.module != nullptr && !before(frame.module, all.data()) &&
      before(frame.module, all.data() + all.size())) {
    return frame.module;
  }
  return modules.find(frame.lookup_pc());
}

// The frame's general registers as the `full` text shows them.
void keep_registers(const Frame& frame, FrameLine& line) {
  if (frame.regs.empty()) return;
  const RegisterSet& regs = frame.regs.view();
  const uint16_t count = general_registers(regs.arch()).count;
  for (uint16_t n = 0; n < count; ++n) {
    if (regs.has(n)) line.registers.emplace_back(n, regs.raw(n));
  }
}

// Queues a frame for its source location, at the pc the lines area's rule for it gives
// (lines::WalkLookups, fed the walk's frames in order).
void add_pending_line(const Frame& frame, const ModuleSet& modules, lines::WalkLookups& lookups,
                      std::size_t thread, std::size_t index, std::vector<PendingLine>& pending) {
  const Module* module = module_in(frame, modules);
  if (auto link_pc = lookups.next(frame, module)) {
    pending.push_back(PendingLine{module, *link_pc, thread, index});
  }
}

}  // namespace

FrameLine describe_frame(const Frame& frame, uint32_t index, const ModuleSet& modules,
                         bool with_symbol) {
  FrameLine line;
  line.index = index;
  line.pc = frame.pc;
  if (frame.cfa != 0) line.cfa = frame.cfa;
  line.source = frame.source;
  line.signal_trampoline = frame.signal_trampoline;
  const Module* module = module_in(frame, modules);
  line.jit = frame.jit;
  if (frame.jit_entry != nullptr) {
    line.symbol = frame.jit_entry->name;
    line.symbol_offset = frame.pc - frame.jit_entry->start;
  }
  if (!module) return line;
  // The report lists the target's modules in this order (collect_backtraces).
  line.module = static_cast<uint32_t>(module - modules.modules().data());
  line.module_offset = module->to_link(frame.pc);
  if (module->image && with_symbol) {
    if (auto sym = module->image->symbolize(module->to_link(frame.lookup_pc()))) {
      line.symbol = sym->name;
      line.symbol_offset = module->to_link(frame.pc) - sym->start;
    }
  }
  return line;
}

namespace {

// A target that lists no module for its executable can still say it was not found.
void note_missing_executable(BacktraceReport& report, const Warning& w) {
  if (w.kind == kWarningMissingFile && w.path == report.executable && !w.path.empty()) {
    report.executable_state = ExecutableState::Missing;
  }
}

}  // namespace

void set_modules(BacktraceReport& report, const ModuleSet& modules) {
  report.modules.clear();
  report.modules.reserve(modules.modules().size());
  report.executable_state = ExecutableState::Found;
  for (const Module& m : modules.modules()) {
    report.modules.push_back(
        ModuleLine{m.path, m.file, m.start, m.bias, m.build_id, m.build_id_match});
    // The header must not present a missing (or rejected) executable as if it were there,
    // and says which: a file whose build-id differs was found, and deliberately not used.
    if (m.path == report.executable && !report.executable.empty() && m.file.empty()) {
      report.executable_state =
          m.build_id_match == false ? ExecutableState::OtherBuild : ExecutableState::Missing;
    }
  }
  if (report.executable_state != ExecutableState::Found) return;
  for (const Warning& w : report.warnings) note_missing_executable(report, w);
}

void add_warning(BacktraceReport& report, Warning warning) {
  if (report.executable_state == ExecutableState::Found) {
    note_missing_executable(report, warning);
  }
  report.warnings.push_back(std::move(warning));
}

ThreadReport& add_thread(BacktraceReport& report, int64_t tid, std::string name, bool crashing,
                         const Backtrace& backtrace, const ModuleSet& modules, bool lines,
                         const Limits& limits) {
  ThreadReport& t = report.threads.emplace_back();
  t.tid = tid;
  t.name = std::move(name);
  t.crashing = crashing;
  t.stop = backtrace.stop;
  t.detail = backtrace.detail;
  t.frames.reserve(backtrace.frames.size());
  std::vector<PendingLine> pending;
  const std::size_t thread = report.threads.size() - 1;
  lines::WalkLookups lookups(limits);
  for (std::size_t k = 0; k < backtrace.frames.size(); ++k) {
    const Frame& frame = backtrace.frames[k];
    FrameLine& line = t.frames.emplace_back(
        describe_frame(frame, static_cast<uint32_t>(k), modules, /*with_symbol=*/true));
    keep_registers(frame, line);
    if (lines) add_pending_line(frame, modules, lookups, thread, k, pending);
  }
  // `t` stays valid: locate_frames adds no thread.
  locate_frames(pending, report, limits);
  return t;
}

Expected<BacktraceReport, std::string> collect_backtraces(Target& target,
                                                          const CollectOptions& options) {
  const std::vector<ThreadState>& threads = target.threads();
  if (threads.empty()) return unexpected(std::string("the target has no threads"));

  std::vector<std::size_t> chosen;
  if (options.indexes) {
    for (std::size_t i : *options.indexes) {
      if (i >= threads.size()) return unexpected("no thread index " + std::to_string(i));
      chosen.push_back(i);
    }
  } else if (options.tid) {
    for (std::size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].tid == *options.tid) chosen.push_back(i);
    }
    if (chosen.empty()) return unexpected("no thread " + std::to_string(*options.tid));
  } else if (options.all_threads) {
    for (std::size_t i = 0; i < threads.size(); ++i) chosen.push_back(i);
  } else {
    std::size_t crashing = target.crashing_thread();
    chosen.push_back(crashing < threads.size() ? crashing : 0);
  }

  BacktraceReport report;
  report.arch = std::string(arch_info(target.arch()).name);
  report.executable = target.executable();
  if (!target.input_format().empty()) report.input_format = target.input_format();
  report.warnings = target.warnings();
  const std::size_t target_warnings = report.warnings.size();
  if (const auto& sig = target.signal()) report.signal = signal_line(*sig);
  if (const auto& sig = target.snapshot_signal()) report.snapshot_signal = signal_line(*sig);
  set_modules(report, target.modules());

  // A process whose stacks were copied at the stop runs again before the walks.
  if (options.release_target && target.stacks_copied()) target.release();
  Unwinder unwinder(options.limits);
  // The report prints pcs, CFAs and symbols; registers only for the `full` text: otherwise
  // the walk keeps none per frame.
  UnwindOptions walk = options.unwind;
  walk.keep_registers = options.registers;
  std::vector<PendingSymbol> pending;
  std::vector<PendingLine> pending_lines;
  for (std::size_t i : chosen) {
    // A live thread stopped alone (one-thread-at-a-time) that exited first is left out.
    if (!target.stop_thread(i)) continue;
    const ThreadState& thread = threads[i];
    Backtrace bt = unwinder.unwind(thread.regs, target.memory(), target.modules(), walk);
    ThreadReport t;
    t.tid = thread.tid;
    t.name = thread.name;
    // A live process has no signal: then no thread is marked as the crashing one.
    t.crashing = target.signal().has_value() && i == target.crashing_thread();
    t.stop = bt.stop;
    t.detail = bt.detail;
    t.frames.reserve(bt.frames.size());
    lines::WalkLookups lookups(options.limits);
    for (std::size_t k = 0; k < bt.frames.size(); ++k) {
      const Frame& frame = bt.frames[k];
      FrameLine line = describe_frame(frame, static_cast<uint32_t>(k), target.modules(), false);
      if (options.registers) keep_registers(frame, line);
      const Module* module = module_in(frame, target.modules());
      if (module != nullptr && module->image) {
        pending.push_back(PendingSymbol{module->image.get(), module->to_link(frame.lookup_pc()),
                                        report.threads.size(), k});
      }
      if (options.lines) {
        add_pending_line(frame, target.modules(), lookups, report.threads.size(), k, pending_lines);
      }
      t.frames.push_back(std::move(line));
    }
    report.threads.push_back(std::move(t));
    target.resume_thread(i);
  }
  // The stacks are read: a live process runs again before the frames are named.
  if (options.release_target) target.release();
  report.stopped_us = target.stopped_us();
  name_frames(pending, report);
  locate_frames(pending_lines, report, options.limits);
  // Debug files are looked up by the walks and the naming above (only for the modules
  // frames land in): what they could not fetch joins the target's own warnings.
  for (std::size_t i = target_warnings; i < target.warnings().size(); ++i) {
    report.warnings.insert(report.warnings.begin() + static_cast<std::ptrdiff_t>(i),
                           target.warnings()[i]);
  }
  return report;
}

}  // namespace ehbt::report
