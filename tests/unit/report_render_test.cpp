// SPDX-License-Identifier: Apache-2.0
// Text and JSON renderings of hand-made backtrace reports, and the exit status they imply
// (the CLI's output: tests/integration/test_cli.py checks the same on real cores).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

BacktraceReport sample() {
  BacktraceReport r;
  r.core = "/tmp/core.1";
  r.arch = "x86_64";
  r.executable = "/opt/app/bin/server";
  r.signal = SignalLine{11, "SIGSEGV", 1, 0, std::nullopt};
  r.modules.push_back({"/opt/app/bin/server", "/sys/opt/app/bin/server", 0x55d4c0a00000,
                       0x55d4c0a00000, "ab12", true});
  r.modules.push_back({"[vdso]", "", 0x7ffd00000000, 0x7ffd00000000, "", std::nullopt});
  ThreadReport t;
  t.tid = 4242;
  t.crashing = true;
  t.stop = StopReason::MemoryFault;
  t.detail = "read at 0x10";
  FrameLine f0;
  f0.index = 0;
  f0.pc = 0x55d4c0a01234;
  f0.cfa = 0x7ffd4b2a1f90;
  f0.source = FrameSource::Context;
  f0.module = 0;  // r.modules[0]: /opt/app/bin/server
  f0.module_offset = 0x1234;
  f0.symbol = "fx_level3";
  f0.symbol_offset = 0x14;
  FrameLine f1;
  f1.index = 1;
  f1.pc = 0x1000;
  f1.source = FrameSource::FramePointer;
  FrameLine f2;
  f2.index = 10;
  f2.pc = 0x55d4c0a01300;
  f2.cfa = 0x7ffd4b2a2000;
  f2.source = FrameSource::EhFrame;
  f2.module = 0;
  f2.module_offset = 0x1300;
  t.frames = {f0, f1, f2};
  r.threads.push_back(t);
  ThreadReport u;
  u.tid = 4243;
  u.name = "worker";
  FrameLine g0;
  g0.index = 0;
  g0.pc = 0x7ffd00000800;
  g0.signal_trampoline = true;
  g0.source = FrameSource::Signal;
  g0.module = 1;  // [vdso]
  u.frames = {g0};
  r.threads.push_back(u);
  return r;
}

TEST(ReportRender, TextLooksLikeGdbBacktrace) {
  EXPECT_EQ(render_text(sample()),
            "Core: /tmp/core.1\n"
            "Executable: /opt/app/bin/server\n"
            "Arch: x86_64\n"
            "Signal: SIGSEGV, SEGV_MAPERR at 0x0\n"
            "\n"
            "Thread 4242 (crashed: SIGSEGV, SEGV_MAPERR at 0x0):\n"
            "#0  0x000055d4c0a01234 in fx_level3 () from /opt/app/bin/server\n"
            "#1  0x0000000000001000 in ?? () [frame_pointer]\n"
            "#10 0x000055d4c0a01300 in ?? () from /opt/app/bin/server\n"
            "Backtrace stopped: memory_fault: read at 0x10\n"
            "\n"
            "Thread 4243 \"worker\":\n"
            "#0  <signal handler called>\n");
}

TEST(ReportRender, TextForProcessWithoutSignal) {
  BacktraceReport r = sample();
  r.core.reset();
  r.pid = 99;
  r.signal.reset();
  r.threads.resize(1);
  r.threads[0].stop = StopReason::MaxFrames;
  r.threads[0].detail = "";
  r.threads[0].frames.resize(1);
  EXPECT_EQ(render_text(r),
            "Process: 99\n"
            "Executable: /opt/app/bin/server\n"
            "Arch: x86_64\n"
            "Signal: none\n"
            "\n"
            "Thread 4242:\n"
            "#0  0x000055d4c0a01234 in fx_level3 () from /opt/app/bin/server\n"
            "Backtrace stopped: max_frames\n");
}

TEST(ReportRender, JsonDocument) {
  BacktraceReport r = sample();
  r.warnings = {{kWarningMissingFile, "/lib/libc.so.6, named by the core, was not found",
                 "/lib/libc.so.6", "--sysroot"},
                {kWarningNoSignalInfo, "no siginfo", "", ""}};
  r.threads.resize(1);
  r.threads[0].frames.resize(2);
  EXPECT_EQ(
      render_json(r),
      "{\n"
      "  \"format\": \"ehbt-backtrace/1\",\n"
      "  \"core\": \"/tmp/core.1\",\n"
      "  \"arch\": \"x86_64\",\n"
      "  \"executable\": \"/opt/app/bin/server\",\n"
      "  \"signal\": {\"number\": 11, \"name\": \"SIGSEGV\", \"code\": 1, \"address\": \"0x0\"},\n"
      "  \"modules\": [\n"
      "    {\"path\": \"/opt/app/bin/server\", \"file\": \"/sys/opt/app/bin/server\", "
      "\"base\": \"0x55d4c0a00000\", \"bias\": \"0x55d4c0a00000\", \"build_id\": \"ab12\", "
      "\"build_id_match\": true},\n"
      "    {\"path\": \"[vdso]\", \"file\": null, \"base\": \"0x7ffd00000000\", "
      "\"bias\": \"0x7ffd00000000\", \"build_id\": null, \"build_id_match\": null}\n"
      "  ],\n"
      "  \"warnings\": [\n"
      "    {\"kind\": \"missing_file\", \"message\": \"/lib/libc.so.6, named by the core, was "
      "not found\", \"path\": \"/lib/libc.so.6\", \"option\": \"--sysroot\"},\n"
      "    {\"kind\": \"no_signal_info\", \"message\": \"no siginfo\", \"path\": null, "
      "\"option\": null}\n"
      "  ],\n"
      "  \"threads\": [\n"
      "    {\n"
      "      \"tid\": 4242,\n"
      "      \"crashing\": true,\n"
      "      \"stop_reason\": \"memory_fault\",\n"
      "      \"stop_detail\": \"read at 0x10\",\n"
      "      \"frames\": [\n"
      "        {\"index\": 0, \"pc\": \"0x55d4c0a01234\", \"cfa\": \"0x7ffd4b2a1f90\", "
      "\"source\": \"context\", \"module\": \"/opt/app/bin/server\", \"module_offset\": "
      "\"0x1234\", \"symbol\": \"fx_level3\", \"symbol_offset\": \"0x14\", "
      "\"location\": null, \"inlined\": []},\n"
      "        {\"index\": 1, \"pc\": \"0x1000\", \"cfa\": null, \"source\": "
      "\"frame_pointer\", \"module\": null, \"module_offset\": null, \"symbol\": null, "
      "\"symbol_offset\": null, \"location\": null, \"inlined\": []}\n"
      "      ]\n"
      "    }\n"
      "  ]\n"
      "}\n");
}

TEST(ReportRender, JsonForProcessHasPidAndNullSignal) {
  BacktraceReport r;
  r.pid = 7;
  r.arch = "aarch64";
  std::string json = render_json(r);
  EXPECT_NE(json.find("\"pid\": 7,"), std::string::npos);
  EXPECT_EQ(json.find("\"core\""), std::string::npos);
  // Named neither by a core nor by a process (a debugger's program): "core" is null.
  r.pid.reset();
  EXPECT_NE(render_json(r).find("\"format\": \"ehbt-backtrace/1\",\n  \"core\": null,\n"),
            std::string::npos)
      << render_json(r);
  EXPECT_NE(json.find("\"signal\": null,"), std::string::npos);
}

TEST(ReportRender, ExitStatusFollowsStopReasons) {
  BacktraceReport r;
  EXPECT_EQ(exit_status(r), 0);
  r.threads.resize(2);
  r.threads[0].stop = StopReason::Outermost;
  r.threads[1].stop = StopReason::MaxFrames;
  EXPECT_EQ(exit_status(r), 0);
  for (StopReason s : {StopReason::NoModule, StopReason::NoUnwindInfo, StopReason::MemoryFault,
                       StopReason::BadUnwindInfo, StopReason::Unsupported, StopReason::NoProgress,
                       StopReason::BadPc}) {
    r.threads[1].stop = s;
    EXPECT_EQ(exit_status(r), 1);
  }
}

TEST(ReportRender, WarningsAndUnknownsInText) {
  BacktraceReport r = sample();
  r.executable_state = ExecutableState::Missing;
  r.signal->code.reset();
  r.signal->address.reset();
  r.threads.resize(1);
  r.threads[0].frames.clear();
  std::string text = render_text(r);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "Core: /tmp/core.1\n"
            "Executable: /opt/app/bin/server (not found)\n"
            "Arch: x86_64\n"
            "Signal: SIGSEGV");
  r.warnings = {{kWarningMissingFile, "/lib/libc.so.6, named by the core, was not found",
                 "/lib/libc.so.6", "--sysroot"},
                {kWarningExecutableMismatch, "--exe /bin/ls is not it", "/bin/ls", "--exe"},
                {kWarningTruncatedCore, "the core is truncated", "/tmp/core.1", ""}};
  EXPECT_EQ(render_warnings(r),
            "warning: /lib/libc.so.6, named by the core, was not found (use --sysroot DIR)\n"
            "warning: --exe /bin/ls is not it (use --exe PATH)\n"
            "warning: the core is truncated\n");
  // No warnings: an empty JSON list, not a missing key.
  r.warnings.clear();
  EXPECT_NE(render_json(r).find("\"warnings\": [],"), std::string::npos) << render_json(r);
  EXPECT_EQ(render_warnings(r), "");
}

// A frame with calls inlined at its pc reads as GDB's frames: the inlined calls first
// (innermost first, the shared address on the first only), then the physical function at its
// call site, numbered on through the rest of the thread; a position replaces "from module".
BacktraceReport with_inlined_calls() {
  BacktraceReport r = sample();
  r.threads.resize(1);
  ThreadReport& t = r.threads[0];
  t.stop = StopReason::Outermost;
  t.frames[0].inlined = {{"leaf", SourcePosition{"/src/leaf.h", 7, 3}},
                         {"middle", SourcePosition{"/src/mid.c", 12, 0}}};
  t.frames[0].location = SourcePosition{"/src/a.c", 20, 5};
  t.frames[1].source = FrameSource::Scan;
  t.frames[1].inlined = {{"", std::nullopt}};  // a call whose name and line are unknown
  t.frames[2].index = 2;
  t.frames[2].symbol = "main";
  t.frames[2].location = SourcePosition{"/src/a.c", 31, 0};
  return r;
}

TEST(ReportRender, InlinedCallsAndLinesReadAsGdbFrames) {
  TextOptions plain;
  plain.header = false;
  EXPECT_EQ(render_text(with_inlined_calls(), plain),
            "\n"
            "Thread 4242 (crashed: SIGSEGV, SEGV_MAPERR at 0x0):\n"
            "#0  0x000055d4c0a01234 in leaf () at /src/leaf.h:7\n"
            "#1  middle () at /src/mid.c:12\n"
            "#2  fx_level3 () at /src/a.c:20\n"
            "#3  0x0000000000001000 in ?? () [scan]\n"
            "#4  ?? ()\n"
            "#5  0x000055d4c0a01300 in main () at /src/a.c:31\n");
  const BacktraceReport r = with_inlined_calls();
  EXPECT_EQ(frame_numbers(r.threads[0]), (std::vector<uint32_t>{0, 3, 5}));
}

TEST(ReportRender, InlinedCallsAndLinesInJson) {
  BacktraceReport r = with_inlined_calls();
  r.threads[0].frames.resize(1);
  JsonOptions compact;
  compact.compact = true;
  const std::string doc = render_json(r, compact);
  EXPECT_NE(doc.find("\"symbol_offset\":\"0x14\",\"location\":{\"file\":\"/src/a.c\",\"line\":20,"
                     "\"column\":5},\"inlined\":[{\"function\":\"leaf\",\"location\":{\"file\":"
                     "\"/src/leaf.h\",\"line\":7,\"column\":3}},{\"function\":\"middle\","
                     "\"location\":{\"file\":\"/src/mid.c\",\"line\":12,\"column\":null}}]}"),
            std::string::npos)
      << doc;
}

TEST(ReportRender, DescribesSignals) {
  EXPECT_EQ(describe_signal({6, "SIGABRT", -6, std::nullopt, std::nullopt}), "SIGABRT, SI_TKILL");
  EXPECT_EQ(describe_signal({7, "SIGBUS", 2, 0xdead, std::nullopt}),
            "SIGBUS, BUS_ADRERR at 0xdead");
  EXPECT_EQ(describe_signal({11, "SIGSEGV", 0x80, 0, std::nullopt}), "SIGSEGV, SI_KERNEL at 0x0");
  EXPECT_EQ(describe_signal({40, "", 77, std::nullopt, std::nullopt}), "SIG40, code 77");
  // An unknown code is not SI_USER (0): it is left out.
  EXPECT_EQ(describe_signal({11, "SIGSEGV", std::nullopt, std::nullopt, std::nullopt}), "SIGSEGV");
}

// `doc` without the frames whose index is kIntruder, each taken out with the separator after
// it (an intruder is never a thread's last frame), in either layout.
constexpr uint32_t kIntruder = 999999;
std::string without_intruders(const std::string& doc, bool compact) {
  const std::string mark = compact ? "\"index\":999999," : "\"index\": 999999,";
  std::string out;
  std::size_t from = 0;  // doc[from..] is not yet copied
  for (;;) {
    const std::size_t at = doc.find(mark, from);
    if (at == std::string::npos) break;
    const std::size_t open = doc.rfind('{', at);
    std::size_t close = open;
    for (int depth = 0; close < doc.size(); ++close) {  // the test's strings hold no braces
      depth += doc[close] == '{' ? 1 : doc[close] == '}' ? -1 : 0;
      if (depth == 0) break;
    }
    std::size_t end = close + 1;
    if (end < doc.size() && doc[end] == ',') ++end;
    if (end < doc.size() && doc[end] == '\n') {
      ++end;
      while (end < doc.size() && doc[end] == ' ') ++end;
    }
    out.append(doc, from, open - from);
    from = end;
  }
  out.append(doc, from);
  return out;
}

// A frame whose members after its cfa are those of the frame before (a recursion) is written
// as that frame's text again: the document is the one written member by member. The oracle
// is the same report with a different frame between every two, where nothing repeats, and
// those frames taken out of the text. Every member is changed in turn, so a frame that
// differs in any of them is written afresh.
TEST(ReportRender, RepeatedFramesAreWrittenAsWhenWrittenInFull) {
  BacktraceReport r = sample();
  FrameLine base;
  base.pc = 0x55d4c0a011ee;
  base.source = FrameSource::EhFrame;
  base.module = 0;
  base.module_offset = 0x11ee;
  base.symbol = "fx_recurse";
  base.symbol_offset = 0x9e;
  base.location = SourcePosition{"/src/overflow.c", 15, 3};
  base.inlined = {InlinedCall{"inner", SourcePosition{"/src/inner.h", 7, 0}}};
  std::vector<FrameLine> variants;
  auto vary = [&](auto change) {
    FrameLine v = base;
    change(v);
    variants.push_back(v);
  };
  vary([](FrameLine& v) { v.source = FrameSource::FramePointer; });
  vary([](FrameLine& v) { v.module = 1; });
  vary([](FrameLine& v) { v.module = std::nullopt; });
  vary([](FrameLine& v) { v.module = 7; });  // past the module list: written as null
  vary([](FrameLine& v) { v.module_offset = 0x11ef; });
  vary([](FrameLine& v) { v.module_offset = std::nullopt; });
  vary([](FrameLine& v) { v.symbol = "fx_other"; });
  vary([](FrameLine& v) { v.symbol = std::nullopt; });
  vary([](FrameLine& v) { v.symbol_offset = 0x9f; });
  vary([](FrameLine& v) { v.location->file = "/src/other.c"; });
  vary([](FrameLine& v) { v.location->line = 16; });
  vary([](FrameLine& v) { v.location->column = 0; });
  vary([](FrameLine& v) { v.location = std::nullopt; });
  vary([](FrameLine& v) { v.inlined.clear(); });
  vary([](FrameLine& v) { v.inlined[0].function = "other"; });
  vary([](FrameLine& v) { v.inlined[0].location->line = 8; });
  vary([](FrameLine& v) { v.inlined[0].location = std::nullopt; });
  vary([](FrameLine& v) { v.inlined.push_back(v.inlined[0]); });
  vary([](FrameLine& v) { v.jit = true; });
  FrameLine intruder = base;
  intruder.index = kIntruder;
  intruder.symbol = "intruder";
  // Each variant between runs of the base frame, twice in a row: base base v v base ...
  std::vector<FrameLine> frames;
  auto push = [&frames](FrameLine f) {
    f.index = static_cast<uint32_t>(frames.size());
    f.cfa = 0x7ffd4b2a1000 + 0x60 * frames.size();
    frames.push_back(f);
  };
  for (const FrameLine& v : variants) {
    push(base);
    push(base);
    push(v);
    push(v);
  }
  push(base);
  // A deep recursion, past several pieces of kRenderChunk bytes.
  for (int i = 0; i < 3000; ++i) push(base);
  r.threads[0].frames = frames;
  // The second thread repeats the first one's last frame: a new thread writes it afresh.
  r.threads[1].frames = {frames.back(), frames.back()};
  BacktraceReport oracle = r;
  oracle.threads[0].frames.clear();
  for (const FrameLine& f : frames) {
    oracle.threads[0].frames.push_back(f);
    if (&f != &frames.back()) oracle.threads[0].frames.push_back(intruder);
  }
  oracle.threads[1].frames.insert(oracle.threads[1].frames.begin() + 1, intruder);
  for (const bool compact : {false, true}) {
    JsonOptions options;
    options.compact = compact;
    const std::string got = render_json(r, options);
    const std::string full = render_json(oracle, options);
    ASSERT_NE(got, full) << "the oracle has intruders to take out";
    EXPECT_EQ(got, without_intruders(full, compact)) << "compact " << compact;
    // Anchored: two frames that differ only in index and cfa, in the indented layout.
    if (!compact) {
      EXPECT_NE(got.find("{\"index\": 1, \"pc\": \"0x55d4c0a011ee\", \"cfa\": \"0x7ffd4b2a1060\", "
                         "\"source\": \"eh_frame\", \"module\": \"/opt/app/bin/server\", "
                         "\"module_offset\": \"0x11ee\", \"symbol\": \"fx_recurse\", "
                         "\"symbol_offset\": \"0x9e\", \"location\": {\"file\": "
                         "\"/src/overflow.c\", \"line\": 15, \"column\": 3}, \"inlined\": "
                         "[{\"function\": \"inner\", \"location\": {\"file\": \"/src/inner.h\", "
                         "\"line\": 7, \"column\": null}}]},\n"),
                std::string::npos)
          << got.substr(0, 2000);
    }
  }
}

// A deep trace reaches the sink in pieces of about kRenderChunk bytes, each cut after a whole
// frame, and every frame arrives once, in order (a sink that did not empty the text, or a cut
// inside a frame, would show here).
TEST(ReportRender, DeepTraceIsWrittenInPiecesCutBetweenFrames) {
  BacktraceReport r = sample();
  ThreadReport& t = r.threads[0];
  t.frames.clear();
  constexpr uint32_t kFrames = 5000;
  for (uint32_t i = 0; i < kFrames; ++i) {
    FrameLine f;
    f.index = i;
    f.pc = 0x55d4c0a01234 + i;
    f.cfa = 0x7ffd4b2a1f90 + 16 * i;
    f.source = FrameSource::EhFrame;
    f.module = 0;
    f.module_offset = 0x1234 + i;
    f.symbol = "fx_recurse";
    f.symbol_offset = 0x14;
    t.frames.push_back(f);
  }
  for (const bool json : {true, false}) {
    std::vector<std::string> pieces;
    const RenderSink sink = [&pieces](std::string& piece) {
      pieces.push_back(piece);
      piece.clear();
    };
    if (json) {
      render_json(r, sink);
    } else {
      render_text(r, sink);
    }
    ASSERT_GE(pieces.size(), 3u) << json;
    std::string whole;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (i + 1 < pieces.size()) {
        EXPECT_GE(pieces[i].size(), kRenderChunk) << json << " piece " << i;
        EXPECT_LT(pieces[i].size(), kRenderChunk + 512) << json << " piece " << i;
        // Cut after a frame: a JSON frame object or a text frame line ends the piece.
        EXPECT_EQ(pieces[i].back(), json ? '}' : '\n') << json << " piece " << i;
      }
      whole += pieces[i];
    }
    EXPECT_EQ(whole.back(), '\n');
    std::size_t at = 0;
    for (uint32_t i = 0; i < kFrames; ++i) {
      const std::string mark =
          json ? "{\"index\": " + std::to_string(i) + "," : "\n#" + std::to_string(i) + " ";
      const std::size_t found = whole.find(mark, at);
      ASSERT_NE(found, std::string::npos) << json << " frame " << i;
      at = found + mark.size();
    }
    const std::string any = json ? "{\"index\": " : "\n#";
    std::size_t count = 0;
    for (std::size_t p = whole.find(any); p != std::string::npos; p = whole.find(any, p + 1))
      ++count;
    EXPECT_EQ(count, kFrames + r.threads[1].frames.size()) << json;
  }
}

}  // namespace
}  // namespace ehbt::report
