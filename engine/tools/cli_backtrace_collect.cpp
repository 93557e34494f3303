// SPDX-License-Identifier: Apache-2.0
// Thread selection, unwinding and frame description for `ehbt core` / `ehbt pid`.
#include "cli_backtrace_collect.hpp"

#include <vector>

#include "ehbt/perf_map.hpp"

namespace ehbt::cli {

FrameLine describe_frame(const Frame& frame, uint32_t index, const ModuleSet& modules) {
  FrameLine line;
  line.index = index;
  line.pc = frame.pc;
  if (frame.cfa != 0) line.cfa = frame.cfa;
  line.source = frame.source;
  line.signal_trampoline = frame.signal_trampoline;
  const Module* module = frame.module ? frame.module : modules.find(frame.lookup_pc());
  line.jit = frame.jit;
  if (frame.jit_entry != nullptr) {
    line.symbol = frame.jit_entry->name;
    line.symbol_offset = frame.pc - frame.jit_entry->start;
  }
  if (!module) return line;
  line.module = module->path;
  line.module_offset = module->to_link(frame.pc);
  if (module->image) {
    if (auto sym = module->image->symbolize(module->to_link(frame.lookup_pc()))) {
      line.symbol = sym->name;
      line.symbol_offset = module->to_link(frame.pc) - sym->start;
    }
  }
  return line;
}

Expected<BacktraceReport, std::string> collect_backtraces(Target& target,
                                                          const CollectOptions& options) {
  const std::vector<ThreadState>& threads = target.threads();
  if (threads.empty()) return unexpected(std::string("the target has no threads"));

  std::vector<std::size_t> chosen;
  if (options.tid) {
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
  report.warnings = target.warnings();
  // The header must not present a missing (or rejected) executable as if it were there.
  for (const Module& m : target.modules().modules()) {
    if (m.path == report.executable && m.file.empty()) report.executable_found = false;
  }
  for (const Warning& w : report.warnings) {
    if (w.kind == kWarningMissingFile && w.path == report.executable) {
      report.executable_found = false;
    }
  }
  if (const auto& sig = target.signal()) {
    report.signal = SignalLine{sig->number, signal_name(sig->number), sig->code, sig->address};
  }
  for (const Module& m : target.modules().modules()) {
    report.modules.push_back(
        ModuleLine{m.path, m.file, m.start, m.bias, m.build_id, m.build_id_match});
  }

  Unwinder unwinder(options.limits);
  for (std::size_t i : chosen) {
    const ThreadState& thread = threads[i];
    Backtrace bt = unwinder.unwind(thread.regs, target.memory(), target.modules(), options.unwind);
    ThreadReport t;
    t.tid = thread.tid;
    t.name = thread.name;
    // A live process has no signal: then no thread is marked as the crashing one.
    t.crashing = target.signal().has_value() && i == target.crashing_thread();
    t.stop = bt.stop;
    t.detail = bt.detail;
    for (std::size_t k = 0; k < bt.frames.size(); ++k) {
      t.frames.push_back(describe_frame(bt.frames[k], static_cast<uint32_t>(k), target.modules()));
    }
    report.threads.push_back(std::move(t));
  }
  return report;
}

}  // namespace ehbt::cli
