// SPDX-License-Identifier: Apache-2.0
// The smallest useful user of the installed engine: open a core, unwind its crashing thread,
// print one line per frame ("PC SYMBOL", SYMBOL "-" when none covers the pc) and then
// "stop REASON". Only public headers (<ehbt/...>) are used.
#include <cinttypes>
#include <cstdio>
#include <string>

#include <ehbt/core.hpp>
#include <ehbt/unwinder.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: backtrace CORE\n");
    return 2;
  }
  auto target = ehbt::open_core(argv[1]);
  if (!target) {
    std::fprintf(stderr, "backtrace: %s\n", target.error().c_str());
    return 2;
  }
  const ehbt::Target& t = **target;
  if (t.threads().empty()) {
    std::fprintf(stderr, "backtrace: no threads\n");
    return 2;
  }
  const ehbt::ThreadState& thread = t.threads()[t.crashing_thread()];
  ehbt::Unwinder unwinder;
  ehbt::Backtrace bt = unwinder.unwind(thread.regs, (*target)->memory(), t.modules());
  for (const ehbt::Frame& f : bt.frames) {
    std::string symbol = "-";
    // Symbols are looked up at the frame's lookup pc (pc - 1 for a return address), in the
    // module's link-time addresses.
    if (f.module && f.module->image) {
      if (auto s = f.module->image->symbolize(f.module->to_link(f.lookup_pc()))) symbol = s->name;
    }
    std::printf("0x%" PRIx64 " %s\n", f.pc, symbol.c_str());
  }
  std::printf("stop %s\n", std::string(ehbt::to_string(bt.stop)).c_str());
  return 0;
}
