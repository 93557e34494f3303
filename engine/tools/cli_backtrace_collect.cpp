// SPDX-License-Identifier: Apache-2.0
// Thread selection, unwinding and frame description for `ehbt core` / `ehbt pid`.
#include "cli_backtrace_collect.hpp"

#include <algorithm>
#include <vector>

#include "ehbt/perf_map.hpp"

namespace ehbt::cli {

namespace {

// A frame whose symbol is still to be looked up: where its line is, and what to look up.
struct PendingSymbol {
  const Image* image;
  uint64_t lookup;  // link-time lookup pc
  std::size_t thread, frame;
};

// Names every pending frame with one symbolize_all() per image: a one-shot command needs a
// few hundred names, and one pass over each symbol table finds them for less than building
// the table would cost.
void name_frames(std::vector<PendingSymbol>& pending, BacktraceReport& report) {
  std::stable_sort(
      pending.begin(), pending.end(),
      [](const PendingSymbol& a, const PendingSymbol& b) { return a.image < b.image; });
  std::vector<uint64_t> addrs;
  for (std::size_t i = 0; i < pending.size();) {
    std::size_t j = i;
    addrs.clear();
    while (j < pending.size() && pending[j].image == pending[i].image) {
      addrs.push_back(pending[j++].lookup);
    }
    std::vector<std::optional<Symbol>> syms = pending[i].image->symbolize_all(addrs);
    for (std::size_t k = i; k < j; ++k) {
      std::optional<Symbol>& sym = syms[k - i];
      if (!sym) continue;
      FrameLine& line = report.threads[pending[k].thread].frames[pending[k].frame];
      line.symbol = std::move(sym->name);
      line.symbol_offset = *line.module_offset - sym->start;
    }
    i = j;
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
  const Module* module = frame.module ? frame.module : modules.find(frame.lookup_pc());
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

  // A process whose stacks were copied at the stop runs again before the walks.
  if (target.stacks_copied()) target.release();
  Unwinder unwinder(options.limits);
  // The report prints pcs, CFAs and symbols, never registers: the walk keeps none per frame.
  UnwindOptions walk = options.unwind;
  walk.keep_registers = false;
  std::vector<PendingSymbol> pending;
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
    for (std::size_t k = 0; k < bt.frames.size(); ++k) {
      const Frame& frame = bt.frames[k];
      FrameLine line = describe_frame(frame, static_cast<uint32_t>(k), target.modules(), false);
      const Module* module = frame.module ? frame.module : target.modules().find(frame.lookup_pc());
      if (module != nullptr && module->image) {
        pending.push_back(PendingSymbol{module->image.get(), module->to_link(frame.lookup_pc()),
                                        report.threads.size(), k});
      }
      t.frames.push_back(std::move(line));
    }
    report.threads.push_back(std::move(t));
    target.resume_thread(i);
  }
  // The stacks are read: a live process runs again before the frames are named.
  target.release();
  report.stopped_us = target.stopped_us();
  name_frames(pending, report);
  return report;
}

}  // namespace ehbt::cli
