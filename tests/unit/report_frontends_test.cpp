// SPDX-License-Identifier: Apache-2.0
// What the debugger front ends need of the report: threads walked by someone else
// (add_thread), a symbol supplied by the front end, GDB's `ehbt -full` lines, the one-line
// JSON the debugger commands print, and the header's word for an executable that is another
// build. Expected texts are written by hand from the formats the plugins print
// (plugins/gdb/ehbt.py `ehbt -full`, docs/formats.md).
#include <gtest/gtest.h>

#include <string>

#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

ModuleSet two_modules() {
  ModuleSet set;
  Module exe;
  exe.path = "/opt/app/bin/server";
  exe.file = "/opt/app/bin/server";
  exe.start = 0x555555554000;
  exe.end = 0x555555556000;
  exe.bias = 0x555555554000;
  exe.build_id = "ab12";
  exe.build_id_match = true;
  set.add(exe);
  Module libc;
  libc.path = "/lib/libc.so.6";
  libc.start = 0x7ffff7c00000;
  libc.end = 0x7ffff7e00000;
  libc.bias = 0x7ffff7c00000;
  set.add(libc);
  return set;
}

// A walk as a debugger plugin drives it: frames whose module pointers point into the set the
// plugin walked with (a copy of the one the report lists), registers kept.
Backtrace plugin_walk(const ModuleSet& walked_with) {
  Backtrace bt;
  Frame f0;
  f0.pc = 0x555555555129;
  f0.cfa = 0x7fffffffe010;
  f0.module = walked_with.find(f0.pc);
  RegisterSet regs(Arch::X86_64);
  regs.set(0, 0x1);              // rax
  regs.set(7, 0x7fffffffe000);   // rsp
  regs.set(16, 0x555555555129);  // rip: not a general register, not shown
  regs.set(17, 0x42);            // xmm0: not shown either
  f0.regs = regs;
  bt.frames.push_back(f0);
  Frame f1;
  f1.pc = 0x7ffff7c29d90;
  f1.cfa = 0x7fffffffe100;
  f1.exact_pc = false;
  f1.source = FrameSource::EhFrame;
  f1.module = walked_with.find(f1.pc);
  bt.frames.push_back(f1);
  Frame f2;
  f2.pc = 0x1000;
  f2.exact_pc = false;
  f2.source = FrameSource::Scan;
  f2.signal_trampoline = false;
  bt.frames.push_back(f2);
  bt.stop = StopReason::BadPc;
  bt.detail = "pc 0x0";
  return bt;
}

BacktraceReport plugin_report(const ModuleSet& modules) {
  BacktraceReport r;
  r.arch = "x86_64";
  r.executable = "/opt/app/bin/server";
  r.signal = signal_line(11, 1, 0x10);
  set_modules(r, modules);
  const ModuleSet copy = modules;  // the plugin's own set: other Module addresses
  add_thread(r, 77, "srv", true, plugin_walk(copy), modules);
  return r;
}

TEST(ReportFrontends, AddThreadDescribesEveryFrameAgainstTheListedModules) {
  const ModuleSet modules = two_modules();
  const BacktraceReport r = plugin_report(modules);
  ASSERT_EQ(r.threads.size(), 1u);
  const ThreadReport& t = r.threads[0];
  EXPECT_EQ(t.tid, 77);
  EXPECT_EQ(t.name, "srv");
  EXPECT_TRUE(t.crashing);
  EXPECT_EQ(t.stop, StopReason::BadPc);
  EXPECT_EQ(t.detail, "pc 0x0");
  ASSERT_EQ(t.frames.size(), 3u);
  EXPECT_EQ(t.frames[0].module, 0u);
  EXPECT_EQ(t.frames[0].module_offset, 0x1129u);
  EXPECT_EQ(t.frames[1].module, 1u);
  EXPECT_EQ(t.frames[1].module_offset, 0x29d90u);
  EXPECT_EQ(t.frames[2].module, std::nullopt);
  EXPECT_EQ(t.frames[2].index, 2u);
  // No image: no engine symbol.
  EXPECT_EQ(t.frames[0].symbol, std::nullopt);
  // Only the general registers are kept, in DWARF order.
  const std::vector<std::pair<uint16_t, uint64_t>> regs{{0, 0x1}, {7, 0x7fffffffe000}};
  EXPECT_EQ(t.frames[0].registers, regs);
  EXPECT_TRUE(t.frames[1].registers.empty());
}

TEST(ReportFrontends, SymbolFromTheFrontEndIsRendered) {
  const ModuleSet modules = two_modules();
  BacktraceReport r = plugin_report(modules);
  // LLDB names a frame the engine could not: 0x7ffff7c29d90 is __libc_start_call_main+0x80.
  FrameLine& f = r.threads[0].frames[1];
  f.symbol = "__libc_start_call_main";
  f.symbol_offset = 0x80;
  EXPECT_EQ(frame_text(r, f),
            "#1  0x00007ffff7c29d90 in __libc_start_call_main () from /lib/libc.so.6");
  const std::string json = render_json(r, JsonOptions{true});
  EXPECT_NE(json.find(R"("symbol":"__libc_start_call_main","symbol_offset":"0x80")"),
            std::string::npos)
      << json;
}

TEST(ReportFrontends, FullTextAddsHowEachFrameWasFoundAndItsRegisters) {
  const ModuleSet modules = two_modules();
  const BacktraceReport r = plugin_report(modules);
  EXPECT_EQ(render_text(r, TextOptions{false, false, true}),
            "#0  0x0000555555555129 in ?? () from /opt/app/bin/server\n"
            "    cfa 0x7fffffffe010, via context, module+0x1129\n"
            "    rax=0x1 rsp=0x7fffffffe000\n"
            "#1  0x00007ffff7c29d90 in ?? () from /lib/libc.so.6\n"
            "    cfa 0x7fffffffe100, via eh_frame, module+0x29d90\n"
            "#2  0x0000000000001000 in ?? () [scan]\n"
            "    cfa 0x0, via scan\n"
            "Backtrace stopped: bad_pc: pc 0x0\n");
  // A signal trampoline says so in its detail line.
  BacktraceReport s = r;
  s.threads[0].frames[1].signal_trampoline = true;
  s.threads[0].frames[1].source = FrameSource::Signal;
  EXPECT_EQ(frame_detail(s, s.threads[0].frames[1]),
            "    cfa 0x7fffffffe100, via signal, module+0x29d90, signal trampoline");
}

TEST(ReportFrontends, ThreadBlocksWithoutTheHeader) {
  const ModuleSet modules = two_modules();
  const BacktraceReport r = plugin_report(modules);
  EXPECT_EQ(render_text(r, TextOptions{false, true, false}),
            "\n"
            "Thread 77 \"srv\" (crashed: SIGSEGV, SEGV_MAPERR at 0x10):\n"
            "#0  0x0000555555555129 in ?? () from /opt/app/bin/server\n"
            "#1  0x00007ffff7c29d90 in ?? () from /lib/libc.so.6\n"
            "#2  0x0000000000001000 in ?? () [scan]\n"
            "Backtrace stopped: bad_pc: pc 0x0\n");
}

TEST(ReportFrontends, CompactJsonIsTheDocumentOnOneLine) {
  const ModuleSet modules = two_modules();
  BacktraceReport r = plugin_report(modules);
  r.pid = 4242;
  r.threads[0].frames.resize(1);
  EXPECT_EQ(render_json(r, JsonOptions{true}),
            R"({"format":"ehbt-backtrace/1","pid":4242,"arch":"x86_64",)"
            R"("executable":"/opt/app/bin/server",)"
            R"("signal":{"number":11,"name":"SIGSEGV","code":1,"address":"0x10"},)"
            R"("modules":[{"path":"/opt/app/bin/server","file":"/opt/app/bin/server",)"
            R"("base":"0x555555554000","bias":"0x555555554000","build_id":"ab12",)"
            R"("build_id_match":true},{"path":"/lib/libc.so.6","file":null,)"
            R"("base":"0x7ffff7c00000","bias":"0x7ffff7c00000","build_id":null,)"
            R"("build_id_match":null}],"warnings":[],)"
            R"("threads":[{"tid":77,"crashing":true,"stop_reason":"bad_pc",)"
            R"("stop_detail":"pc 0x0","frames":[{"index":0,"pc":"0x555555555129",)"
            R"("cfa":"0x7fffffffe010","source":"context","module":"/opt/app/bin/server",)"
            R"("module_offset":"0x1129","symbol":null,"symbol_offset":null,)"
            R"("location":null,"inlined":[]}]}]})"
            "\n");
}

TEST(ReportFrontends, ExecutableThatIsAnotherBuildIsNotCalledMissing) {
  ModuleSet modules;
  Module exe;
  exe.path = "/opt/app/bin/server";
  exe.start = 0x1000;
  exe.end = 0x2000;
  exe.build_id = "ab12";
  exe.build_id_match = false;  // a file was found, its build-id is not the core's: not used
  exe.missing = "server (named by the core) is another build (/opt/app/bin/server)";
  modules.add(exe);
  BacktraceReport r;
  r.core = "/tmp/core.1";
  r.arch = "x86_64";
  r.executable = exe.path;
  set_modules(r, modules);
  EXPECT_EQ(r.executable_state, ExecutableState::OtherBuild);
  EXPECT_EQ(render_text(r),
            "Core: /tmp/core.1\n"
            "Executable: /opt/app/bin/server (build-id differs, not used)\n"
            "Arch: x86_64\n"
            "Signal: none\n");

  // No file at all: missing.
  ModuleSet gone;
  exe.build_id_match.reset();
  exe.missing = "server not found (named by the core)";
  gone.add(exe);
  set_modules(r, gone);
  EXPECT_EQ(r.executable_state, ExecutableState::Missing);
  EXPECT_NE(render_text(r).find("Executable: /opt/app/bin/server (not found)\n"),
            std::string::npos);

  // The file found and used.
  ModuleSet found;
  exe.file = exe.path;
  exe.build_id_match = true;
  exe.missing.clear();
  found.add(exe);
  set_modules(r, found);
  EXPECT_EQ(r.executable_state, ExecutableState::Found);
  EXPECT_NE(render_text(r).find("Executable: /opt/app/bin/server\n"), std::string::npos);
}

TEST(ReportFrontends, PaddedAddressFollowsTheTargetsWordSize) {
  EXPECT_EQ(padded_address(0x1234, Arch::X86_64), "0x0000000000001234");
  EXPECT_EQ(padded_address(0x1234, Arch::I386), "0x00001234");
  EXPECT_EQ(padded_address(0x123456789, Arch::I386), "0x0000000123456789");
  EXPECT_EQ(padded_address(0x1234, std::nullopt), "0x0000000000001234");
}

TEST(ReportFrontends, SignalLineOfNoSignalIsNothing) {
  EXPECT_EQ(signal_line(0), std::nullopt);
  const std::optional<SignalLine> s = signal_line(6, -6);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "SIGABRT");
  EXPECT_EQ(describe_signal(*s), "SIGABRT, SI_TKILL");
}

}  // namespace
}  // namespace ehbt::report
