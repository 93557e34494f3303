# SPDX-License-Identifier: Apache-2.0
"""`ehbt core` on OpenJDK 17 (HotSpot) crashing in C2-compiled code (cores/make_nocfi_cores.py,
cases java_jit_fp, java_jit and java_jit_megamorphic; issue #32 items 5 and 6).

The truth is HotSpot's own walk of the crashing thread, printed in its error report
(hs_err_pid*.log, "Native frames": HotSpot knows every compiled frame's size): the faulting
compiled frame down to libjli's ThreadJavaMain. Above it (the signal handler's frames, with
unwind tables) and below it (start_thread, clone3) the frames are eu-stack's. hs_err prints a
pc for compiled (J) and VM/native (V/C) frames; for interpreted (j) and stub (v) frames it
prints none, and those frames are checked by kind (JIT code, in no module). With
-XX:+PreserveFramePointer eu-stack's frame-pointer walk gives the same frames with every pc.
A live JVM (`ehbt pid`) is checked against the program's call order and the perf map the JVM
wrote.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import cores_expect as ce

OUT = os.path.join(str(ce.OUT), "x86_64")
SCRIPT = os.path.join(str(ce.ROOT), "cores", "make_nocfi_cores.py")
JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"


def expected(name):
    path = os.path.join(OUT, name + ".expected.json")
    if not os.path.exists(path):
        assert os.path.exists(JAVA), "%s needs openjdk-17-jre-headless (scripts/install-deps.sh)" % name
        subprocess.run([sys.executable, SCRIPT, "--only", name], check=True)
    with open(path) as f:
        return json.load(f)


def truth(exp):
    """The crashing thread's frames, innermost first: {pc (None: not printed), kind, text}."""
    eu = exp["eu_stack"]
    [sigtramp] = [i for i, f in enumerate(eu) if f["function"] == "__restore_rt"]
    [entry] = [i for i, f in enumerate(eu) if f["function"] == "ThreadJavaMain"]
    assert exp["hs_err"][-1]["text"].startswith("[libjli.so+") and "ThreadJavaMain" in \
        exp["hs_err"][-1]["text"]
    above = [{"pc": f["pc"], "kind": "C", "text": f["function"]} for f in eu[:sigtramp + 1]]
    below = [{"pc": f["pc"], "kind": "C", "text": f["function"]} for f in eu[entry + 1:]]
    return above + exp["hs_err"] + below


def perf_map_names(path):
    entries = []
    with open(path) as f:
        for line in f:
            start, size, name = line.rstrip("\n").split(" ", 2)
            entries.append((int(start, 16), int(size, 16), name))
    return entries


def perf_name(entries, pc):
    """The name of the perf-map entry covering pc - 1 (a return address: the call before it);
    the last listed wins, as a later line describes code that replaced an earlier one."""
    hits = [n for s, z, n in entries if s <= pc - 1 < s + z]
    return hits[-1] if hits else None


def ehbt(ehbt_bin, core, *extra):
    p = subprocess.run([str(ehbt_bin), "core", core, "--json", *extra], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    return p.returncode, thread


def check_frames(frames, want):
    """Frame i is the truth's frame i: the same pc where one is known, JIT code (no module)
    for the interpreted and stub frames, and JIT code exactly for the compiled ones."""
    assert len(frames) <= len(want)
    for i, (f, w) in enumerate(zip(frames, want)):
        if w["pc"] is not None:
            assert f["pc"] == w["pc"], (i, f, w)
        is_jit = w["kind"] in "Jjv"
        assert bool(f.get("jit")) == is_jit, (i, f, w)
        if is_jit:
            assert f["module"] is None, (i, f)


def test_preserve_frame_pointer_walks_every_java_frame(ehbt_bin):
    """-XX:+PreserveFramePointer: the compiled frames, main's interpreted frame (whose return
    address is the interpreter's return entry, pushed by the interpreter: no call precedes
    it), the call stub, the reflection frames, seven interpreted frames and the launcher,
    all by the validated frame pointer; the exact list, exit 0, `outermost`."""
    exp = expected("java_jit_fp")
    want = truth(exp)
    # The two independent walks agree (eu-stack follows the same frame pointers).
    assert [w["pc"] for w in want if w["pc"]] == [
        f["pc"] for f in exp["eu_stack"] if f["pc"] in {w["pc"] for w in want}]
    assert len(exp["eu_stack"]) == len(want)
    rc, t = ehbt(ehbt_bin, exp["core"], "--perf-map", exp["perf_map"])
    assert (rc, t["stop_reason"]) == (0, "outermost"), t["stop_detail"]
    frames = t["frames"]
    assert [f["pc"] for f in frames] == [f["pc"] for f in exp["eu_stack"]]
    check_frames(frames, want)
    assert all(f["source"] != "scan" for f in frames)
    # The compiled frames, named from the perf map the JVM wrote (Compiler.perfmap).
    entries = perf_map_names(exp["perf_map"])
    compiled = [(f, w) for f, w in zip(frames, want) if w["kind"] == "J"]
    assert len(compiled) == 3
    for (f, w), fn in zip(compiled, exp["java_functions"]):
        assert f["symbol"] == perf_name(entries, int(f["pc"], 16)), f
        assert fn in f["symbol"] and fn in w["text"], (f, w)
    # Every JIT frame is named from the map only, never from a file's symbol table.
    for f in frames:
        if f.get("jit"):
            assert f["symbol"] == perf_name(entries, int(f["pc"], 16)), f
    # Without the map: the same frames, the JIT ones unnamed.
    rc2, bare = ehbt(ehbt_bin, exp["core"])
    assert rc2 == 0 and [f["pc"] for f in bare["frames"]] == [f["pc"] for f in frames]
    assert all(f["symbol"] is None for f in bare["frames"] if f.get("jit"))


def compiled_names(frames, want, exp):
    """The compiled (J) frames, each named from the perf map the JVM wrote: by the map's own
    entry for its pc, and in the program's call order (exp["java_functions"])."""
    entries = perf_map_names(exp["perf_map"])
    compiled = [(f, w) for f, w in zip(frames, want) if w["kind"] == "J"]
    assert len(compiled) in (3, 4)  # main too where an OSR compile replaced its frame
    if len(compiled) == 4:
        assert "JavaJit.main" in compiled[3][0]["symbol"] and "main" in compiled[3][1]["text"]
    for i, ((f, w), fn) in enumerate(zip(compiled, exp["java_functions"])):
        pc = int(f["pc"], 16) + (1 if i == 0 else 0)  # the faulting frame: looked up at its pc
        assert f["symbol"] == perf_name(entries, pc), f
        assert fn in f["symbol"] and fn in w["text"], (f, w)


@pytest.mark.parametrize("name", ["java_jit", "java_jit_megamorphic", "java_jit_c1"])
def test_compiled_code_without_frame_pointer_sized_by_prologue(ehbt_bin, name):
    """Default flags: C2 code pushes rbp but does not set it, so rbp still points at main's
    interpreted frame from inside the compiled ones (eu-stack follows it and skips them). With
    the perf map naming them, each compiled frame is sized by its method's prologue (stack
    bang, push %rbp, sub $S,%rsp), as HotSpot sizes its frames: the walk is HotSpot's own
    (hs_err, every pc it prints) through the three compiled frames (the faulting one
    interrupted by the signal; in java_jit_megamorphic level2 called level3 through a vtable
    stub; in java_jit_c1 all are C1's, main's an OSR compile's), main's frame, the call stub
    and the VM to the launcher, and eu-stack's below: the exact list, exit 0, `outermost`, no
    scanned frame."""
    exp = expected(name)
    assert not exp["preserve_frame_pointer"]
    want = truth(exp)
    rc, t = ehbt(ehbt_bin, exp["core"], "--perf-map", exp["perf_map"])
    frames = t["frames"]
    assert (rc, t["stop_reason"]) == (0, "outermost"), (rc, t["stop_detail"])
    assert len(frames) == len(want), ce.describe(frames)
    check_frames(frames, want)
    assert all(f["source"] != "scan" for f in frames)
    compiled_names(frames, want, exp)
    # The compiled callers are the ones the prologue sized (the frame-pointer strategy).
    first_java = [w["kind"] for w in want].index("J")
    assert [f["source"] for f in frames[first_java + 1:first_java + 4]] == ["frame_pointer"] * 3
    # What eu-stack does here: its next frame is no frame of HotSpot's walk but the call
    # stub's return, skipping the three frames (the case this test guards against).
    assert want[first_java + 1]["pc"] not in [f["pc"] for f in exp["eu_stack"]]


def test_compiled_code_without_frame_pointer_or_map_stops_typed(ehbt_bin):
    """Without the perf map no entry gives the compiled frames' code, so nothing sizes them:
    following rbp would skip fx_java_level2, fx_java_level1 and main. The walk stops at the
    faulting frame with a typed reason naming the return address it would have skipped
    (level2's pc in HotSpot's report), exit 1, no scanned frame."""
    exp = expected("java_jit")
    want = truth(exp)
    rc, t = ehbt(ehbt_bin, exp["core"])
    frames = t["frames"]
    assert rc == 1 and t["stop_reason"] == "no_unwind_info", (rc, t["stop_reason"])
    check_frames(frames, want)
    assert all(f["source"] != "scan" for f in frames)
    # It reaches the faulting compiled frame (from the signal frame) and no further.
    [first_java] = [i for i, w in enumerate(want) if w["kind"] == "J"][:1]
    assert len(frames) == first_java + 1
    level2 = want[first_java + 1]
    assert level2["kind"] == "J" and exp["java_functions"][1] in level2["text"]
    assert "return address %s" % level2["pc"] in t["stop_detail"], t["stop_detail"]


def partial_map(exp, tmp_path, leave_out):
    lines = [ln for ln in open(exp["perf_map"]) if leave_out not in ln]
    assert len(lines) < len(open(exp["perf_map"]).readlines())
    path = tmp_path / "partial.map"
    path.write_text("".join(lines))
    return str(path)


def test_jit_frame_missing_from_the_map_stops_typed(ehbt_bin, tmp_path):
    """java_jit with a perf map that lacks fx_java_level2's entries (code compiled after the
    map was written): level3 is sized by its prologue, level2's frame is JIT code nothing
    sizes, its rbp an older frame's record. The walk stops there, typed, exit 1, naming
    level1's return address (HotSpot's pc for it) that following rbp would have skipped, with
    HotSpot's frames up to level2 and no scanned frame."""
    exp = expected("java_jit")
    want = truth(exp)
    rc, t = ehbt(ehbt_bin, exp["core"], "--perf-map",
                 partial_map(exp, tmp_path, exp["java_functions"][1]))
    frames = t["frames"]
    assert (rc, t["stop_reason"]) == (1, "no_unwind_info"), (rc, t["stop_detail"])
    first_java = [w["kind"] for w in want].index("J")
    assert len(frames) == first_java + 2, ce.describe(frames)
    check_frames(frames, want)
    assert frames[-1]["symbol"] is None and all(f["source"] != "scan" for f in frames)
    assert "return address %s at " % want[first_java + 2]["pc"] in t["stop_detail"]


def test_jit_frame_called_from_the_interpreter_missing_from_the_map(ehbt_bin, tmp_path):
    """java_jit with a perf map that lacks fx_java_level1's entries: level1 (called by main's
    interpreted frame) is JIT code nothing sizes; its rbp is main's record, which gives main's
    caller (the call stub). Main's frame has no call before its return address (the
    interpreter pushes its own return entry, then jumps to the compiled method); level1's
    prologue pushed rbp right under it. The walk stops at level1, typed, exit 1, naming that
    return address, which lies in the perf map's `Interpreter` entry."""
    exp = expected("java_jit")
    want = truth(exp)
    rc, t = ehbt(ehbt_bin, exp["core"], "--perf-map",
                 partial_map(exp, tmp_path, exp["java_functions"][2]))
    frames = t["frames"]
    assert (rc, t["stop_reason"]) == (1, "no_unwind_info"), (rc, t["stop_detail"])
    first_java = [w["kind"] for w in want].index("J")
    assert [w["kind"] for w in want[first_java:first_java + 4]] == ["J", "J", "J", "j"]
    assert len(frames) == first_java + 3, ce.describe(frames)
    check_frames(frames, want)
    assert frames[-1]["symbol"] is None and all(f["source"] != "scan" for f in frames)
    m = re.search(r"return address (0x[0-9a-f]+) at ", t["stop_detail"])
    assert m, t["stop_detail"]
    [interpreter] = [(s, z) for s, z, n in perf_map_names(exp["perf_map"]) if n == "Interpreter"]
    assert interpreter[0] <= int(m.group(1), 16) < interpreter[0] + interpreter[1], m.group(1)


def test_perf_map_found_in_the_sysroot(ehbt_bin, tmp_path):
    """Without --perf-map: /tmp/perf-PID.map inside the sysroot, PID being the core's process
    (NT_PRPSINFO; the pid HotSpot wrote in its report's file name), names the JIT frames as
    --perf-map does. Another pid's map there is not used."""
    exp = expected("java_jit_fp")
    (tmp_path / "tmp").mkdir()
    shutil.copy(exp["perf_map"], str(tmp_path / "tmp" / ("perf-%d.map" % (exp["pid"] + 1))))
    _, other = ehbt(ehbt_bin, exp["core"], "--sysroot", str(tmp_path))
    assert all(f["symbol"] is None for f in other["frames"] if f.get("jit"))
    shutil.copy(exp["perf_map"], str(tmp_path / "tmp" / ("perf-%d.map" % exp["pid"])))
    rc, t = ehbt(ehbt_bin, exp["core"], "--sysroot", str(tmp_path))
    _, given = ehbt(ehbt_bin, exp["core"], "--perf-map", exp["perf_map"])
    assert rc == 0 and t["stop_reason"] == "outermost"
    assert [(f["pc"], f["symbol"]) for f in t["frames"]] == [
        (f["pc"], f["symbol"]) for f in given["frames"]]
    assert any(exp["java_functions"][0] in (f["symbol"] or "") for f in t["frames"])


def eu_stack_threads(exp):
    """eu-stack's pcs per thread id (it walks the other threads by CFI and frame pointers)."""
    out = subprocess.run(["eu-stack", "--core", exp["core"], "-e", exp["exe"]],
                         capture_output=True, text=True).stdout
    threads, tid = {}, None
    for line in out.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            threads[tid] = []
            continue
        m = re.match(r"#\d+\s+(0x[0-9a-f]+)", line)
        if m and tid is not None:
            threads[tid].append("0x%x" % int(m.group(1), 16))
    return threads


@pytest.mark.parametrize("name", ["java_jit_fp", "java_jit", "java_jit_c1"])
def test_other_java_threads_match_eu_stack(ehbt_bin, name):
    """The JVM's other threads (VM threads, the reference handler and finalizer waiting in
    interpreted Java code through the interpreter's native entry): every one walked to the
    end with eu-stack's exact pcs, exit status from the crashing thread alone."""
    exp = expected(name)
    p = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json", "--all-threads",
                        "--perf-map", exp["perf_map"]], capture_output=True, text=True,
                       timeout=300)
    doc = json.loads(p.stdout)
    eu = eu_stack_threads(exp)
    others = [t for t in doc["threads"] if not t["crashing"]]
    assert len(others) > 10 and len(eu) == len(doc["threads"])
    java = 0
    for t in others:
        assert t["stop_reason"] == "outermost", (t["tid"], t["stop_detail"])
        assert [f["pc"] for f in t["frames"]] == eu[t["tid"]], t["tid"]
        assert all(f["source"] != "scan" for f in t["frames"]), t["tid"]
        java += any(f.get("jit") for f in t["frames"])
    assert java >= 2  # the threads waiting in Java code
    [crashing] = [t for t in doc["threads"] if t["crashing"]]
    assert p.returncode == (0 if crashing["stop_reason"] == "outermost" else 1)


SPIN = """
import java.lang.management.ManagementFactory;
import javax.management.ObjectName;

public class Spin {
    static long fx_spin3(long x) {
        for (int i = 0; i < 1000; i++) x = x * 31 + i;
        return x;
    }
    static long fx_spin2(long x) { return fx_spin3(x + 1) ^ 3; }
    static long fx_spin1(long x) { return fx_spin2(x + 2) ^ 5; }

    public static void main(String[] args) throws Exception {
        long s = 0;
        for (int i = 0; i < 20000; i++) s += fx_spin1(i);
        ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerPerfmap",
                new Object[] {null}, new String[] {String[].class.getName()});
        System.out.println("ready " + s);
        System.out.flush();
        for (;;) s += fx_spin1(s);
    }
}
"""


@pytest.mark.parametrize("flags", [["-XX:+PreserveFramePointer"], []], ids=["fp", "nofp"])
def test_live_jvm_reads_its_perf_map(ehbt_bin, tmp_path, flags):
    """`ehbt pid` of a running JVM spinning in compiled code: the compiled frames named from
    /tmp/perf-PID.map (written by the JVM, Compiler.perfmap) by ehbt itself, in the program's
    call order (fx_spin3 <- fx_spin2 <- fx_spin1), the walk going on through main to the
    launcher by frame pointer and tables, no scan. With -XX:+PreserveFramePointer the compiled
    callers are stepped by their frame records; without it (C2's default) by their methods'
    prologues, fx_spin3's frame (the interrupted pc) too. A sample that catches the thread
    elsewhere than in fx_spin3 is taken again (up to 20 times); so is one without the frame
    pointer that stops (the pc may be where the code cannot show the frame's size: in an
    epilogue), but such a stop must be typed and name no other compiled frame."""
    assert os.path.exists(JAVA), "openjdk-17-jre-headless (scripts/install-deps.sh)"
    (tmp_path / "Spin.java").write_text(SPIN)
    out = tmp_path / "out.txt"
    with open(str(out), "w") as log:
        # main stays interpreted: an OSR compile of its endless loop, after the map is
        # written, would be JIT code no entry names (where the walk stops without a frame
        # pointer: test_jit_frame_missing_from_the_map_stops_typed).
        p = subprocess.Popen([JAVA, *flags, "-XX:CompileCommand=quiet",
                              "-XX:CompileCommand=dontinline,Spin::fx_*",
                              "-XX:CompileCommand=exclude,Spin::main", "-Xbatch",
                              str(tmp_path / "Spin.java")], cwd=str(tmp_path), stdout=log,
                             stderr=subprocess.STDOUT)
    perf_map = "/tmp/perf-%d.map" % p.pid
    samples, stops, t = [], [], None
    try:
        for _ in range(600):
            if "ready" in out.read_text() or p.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        assert "ready" in out.read_text(), out.read_text()
        entries = perf_map_names(perf_map)
        for _ in range(20):
            r = subprocess.run([str(ehbt_bin), "pid", str(p.pid), "--json", "--all-threads"],
                               capture_output=True, text=True, timeout=120)
            doc = json.loads(r.stdout)
            spinning = [t for t in doc["threads"]
                        if t["frames"] and "Spin.fx_spin3" in (t["frames"][0]["symbol"] or "")]
            samples.append([(t["tid"], [f["symbol"] for f in t["frames"]][:4])
                            for t in doc["threads"] if t["frames"] and t["frames"][0].get("jit")])
            if spinning and spinning[0]["stop_reason"] == "outermost":
                [t] = spinning
                break
            for s in spinning:
                stops.append((s["stop_reason"], s["stop_detail"]))
                assert s["stop_reason"] == "no_unwind_info", s["stop_detail"]
                assert not any("fx_spin" in (f["symbol"] or "") for f in s["frames"][1:])
            t = None
            subprocess.run(["sleep", "0.1"])
    finally:
        p.kill()
        p.wait()
        if os.path.exists(perf_map):
            os.unlink(perf_map)
    assert t is not None, (samples, stops)
    frames = t["frames"]
    assert [f["symbol"] for f in frames[:3]] == [
        perf_name(entries, int(frames[0]["pc"], 16) + 1),  # frame 0: looked up at its pc
        perf_name(entries, int(frames[1]["pc"], 16)),
        perf_name(entries, int(frames[2]["pc"], 16))]
    assert ["fx_spin3" in frames[0]["symbol"], "fx_spin2" in frames[1]["symbol"],
            "fx_spin1" in frames[2]["symbol"]] == [True] * 3
    assert all(f.get("jit") and f["source"] == "frame_pointer" for f in frames[1:3])
    assert all(f["source"] != "scan" for f in frames)
    names = [f["symbol"] or "" for f in frames]
    assert any(n.startswith("JavaCalls::call_helper") for n in names), names
    assert any(n == "JavaMain" for n in names), names


def test_megamorphic_virtual_call_does_not_skip_its_caller(ehbt_bin):
    """java_jit_megamorphic (default flags, no frame pointer): the faulting compiled method
    (StoreA.fx_java_level3) was reached from fx_java_level2_virtual through a megamorphic
    virtual call, so the call before level2's return address names HotSpot's vtable stub, not
    the method, and the stub jumps on through memory. The frame record rbp points to is an
    older frame's: following it would skip level2, level1 and main. Without the perf map
    (with it the prologue sizes the frames: test_compiled_code_without_frame_pointer_sized_by_
    prologue) the walk stops at the faulting frame, typed, naming level2's return address (its
    pc in HotSpot's own report), exit 1, no scanned frame (before: the stop named level1's
    return address, and only because level2's code happened to lie just below level3's in the
    code cache)."""
    exp = expected("java_jit_megamorphic")
    want = truth(exp)
    kinds = [w["kind"] for w in want]
    first_java = kinds.index("J")
    assert [fn in w["text"] for fn, w in zip(exp["java_functions"], want[first_java:])] == \
        [True] * 3, want[first_java:first_java + 3]
    rc, t = ehbt(ehbt_bin, exp["core"])
    frames = t["frames"]
    assert (rc, t["stop_reason"]) == (1, "no_unwind_info"), (rc, t["stop_detail"])
    check_frames(frames, want)
    assert len(frames) == first_java + 1, ce.describe(frames)
    assert all(f["source"] != "scan" for f in frames)
    level2 = want[first_java + 1]
    assert "return address %s at " % level2["pc"] in t["stop_detail"], t["stop_detail"]
    assert "dispatch stub" in t["stop_detail"], t["stop_detail"]


def test_megamorphic_case_through_the_debugger_plugins(ehbt_bin, build_dir, tmp_path):
    """GDB's and LLDB's `ehbt --json` on the same core walk the crashing thread as the CLI does
    (without a perf map: the plugins read none): the same frames and the same typed stop."""
    import ehbt_py as h
    from test_lldb_plugin import run_lldb

    exp = expected("java_jit_megamorphic")
    h.import_ehbt(build_dir)
    _, want = ehbt(ehbt_bin, exp["core"])
    out = tmp_path / "gdb.json"
    text = h.run_gdb(build_dir, [exp["exe"], exp["core"]], [
        "python open(%r, 'w').write(gdb.execute('ehbt --json', to_string=True))" % str(out)])
    assert out.exists(), text[-3000:]
    got = {}
    got["gdb"] = json.loads([ln for ln in out.read_text().splitlines() if ln.startswith("{")][0])
    lout = tmp_path / "lldb.json"
    text = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s ehbt --json" % lout],
                    pre=["target create %s --core %s" % (exp["exe"], exp["core"])])
    assert lout.exists(), text[-3000:]
    captured = lout.read_text()
    got["lldb"] = json.loads(captured[captured.find("{"):])
    for who, doc in got.items():
        [t] = [t for t in doc["threads"] if t["crashing"]]
        assert [f["pc"] for f in t["frames"]] == [f["pc"] for f in want["frames"]], who
        assert (t["stop_reason"], t["stop_detail"]) == (want["stop_reason"],
                                                        want["stop_detail"]), who


def test_perf_map_option_through_the_debugger_plugins(ehbt_bin, build_dir, tmp_path):
    """GDB's and LLDB's `ehbt --perf-map FILE` on java_jit_fp's core: the CLI's frames with
    `--perf-map FILE`, every JIT frame named by the map's own entry (read here), never from a
    file's symbol table."""
    import ehbt_py as h
    from test_lldb_plugin import run_lldb

    exp = expected("java_jit_fp")
    h.import_ehbt(build_dir)
    _, want = ehbt(ehbt_bin, exp["core"], "--perf-map", exp["perf_map"])
    entries = perf_map_names(exp["perf_map"])
    out = tmp_path / "gdb.json"
    text = h.run_gdb(build_dir, [exp["exe"], exp["core"]], [
        "python open(%r, 'w').write(gdb.execute('ehbt -json -perf-map %s', to_string=True))"
        % (str(out), exp["perf_map"])])
    assert out.exists(), text[-3000:]
    got = {"gdb": json.loads([ln for ln in out.read_text().splitlines()
                              if ln.startswith("{")][0])}
    lout = tmp_path / "lldb.json"
    text = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s ehbt --json --perf-map %s"
                                          % (lout, exp["perf_map"])],
                    pre=["target create %s --core %s" % (exp["exe"], exp["core"])])
    assert lout.exists(), text[-3000:]
    captured = lout.read_text()
    got["lldb"] = json.loads(captured[captured.find("{"):])
    keys = ("pc", "source", "module", "symbol", "jit")
    for who, doc in got.items():
        [t] = [t for t in doc["threads"] if t["crashing"]]
        assert [[f.get(k) for k in keys] for f in t["frames"]] == \
            [[f.get(k) for k in keys] for f in want["frames"]], who
        jit = [f for f in t["frames"] if f.get("jit")]
        assert len(jit) > 3, who
        for f in jit:
            assert f["module"] is None and f["symbol"] == perf_name(entries, int(f["pc"], 16))
        assert sum(fn in (f["symbol"] or "") for f in jit for fn in exp["java_functions"]) == 3
