# SPDX-License-Identifier: Apache-2.0
"""`ehbt core` where the unwind tables end (cores/make_nocfi_cores.py): musl static (no CFI
anywhere), a stripped Rust panic=abort binary, node's JIT frames, the stack scan on aarch64
and s390x qemu cores; and the rule that stack scanning never shows up where tables cover
every frame (all fixture cores).

Expected frames never come from ehbt: GDB on the unstripped Rust build, eu-stack and node's
perf map for node, and for musl (where GDB and eu-stack stop after 2 and 1 frames) the
program's structure, each return address checked against the call instruction before it.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import cores_expect as ce

OUT = os.path.join(str(ce.OUT), "x86_64")  # EHBT_CORES_OUT, as make_nocfi_cores.py
SCRIPT = os.path.join(str(ce.ROOT), "cores", "make_nocfi_cores.py")
CASES = ["musl_sigabort", "rust_abort", "node_abort", "node_deopt"]
TOOLS = {"musl_sigabort": ["musl-gcc"], "rust_abort": ["/usr/bin/rustc"], "node_abort": ["node"],
         "node_deopt": ["node"]}


def expected(name):
    path = os.path.join(OUT, name + ".expected.json")
    if not os.path.exists(path):
        missing = [t for t in TOOLS[name] if not shutil.which(t)]
        assert not missing, "%s needs %s (scripts/install-deps.sh)" % (name, missing)
        subprocess.run([sys.executable, SCRIPT, "--only", name], check=True)
    with open(path) as f:
        return json.load(f)


def ehbt(ehbt_bin, core, *extra):
    p = subprocess.run([str(ehbt_bin), "core", core, "--json", *extra], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def crashing(doc):
    threads = [t for t in doc["threads"] if t["crashing"]]
    assert len(threads) == 1
    return threads[0]


def call_before(exe, pc):
    """objdump's instruction that ends at pc (a link-time address of a non-PIE exe)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % (pc - 16),
                          "--stop-address=%#x" % pc, exe], capture_output=True, text=True).stdout
    insns = re.findall(r"^\s*([0-9a-f]+):\s+(.*)$", out, re.M)
    return insns[-1][1] if insns else ""


def test_musl_static_abort_in_signal_handler(ehbt_bin):
    exp = expected("musl_sigabort")
    rc, doc = ehbt(ehbt_bin, exp["core"])
    t = crashing(doc)
    frames = t["frames"]
    assert rc == 0 and t["stop_reason"] == "outermost", (t["stop_reason"], t["stop_detail"])
    got = [f["symbol"] for f in frames]
    want = list(exp["functions"])
    # musl's _start is an assembler symbol of size 0, which covers no address (ehbt names a
    # pc only by a symbol that covers it): the last frame is checked by the entry point.
    assert want[-1] == "_start" and got[-1] in (None, "_start"), got
    assert got[:-1] == want[:-1], got
    header = subprocess.run(["readelf", "-h", exp["exe"]], capture_output=True, text=True)
    entry = int(re.search(r"Entry point address:\s+(0x[0-9a-f]+)", header.stdout).group(1), 16)
    assert 0 < int(frames[-1]["pc"], 16) - entry < 64, (frames[-1], hex(entry))
    # The frame the signal interrupted comes from the kernel's signal frame.
    assert frames[exp["sigtramp_index"] + 1]["source"] == "signal", frames
    # Independent check of every return address: the instruction before it is a call, and a
    # direct call goes to the function of the frame below (or, across musl's sibling calls
    # from _start, to _start_c which jumps on).
    for i, f in enumerate(frames[1:], start=1):
        if i == exp["sigtramp_index"] or i == exp["sigtramp_index"] + 1:
            continue  # the trampoline and the interrupted pc were not reached by a call
        insn = call_before(exp["exe"], int(f["pc"], 16))
        assert insn.startswith("call"), (i, f, insn)
        callee = frames[i - 1]["symbol"]
        m = re.search(r"<([^>+]+)>", insn)
        if m and callee not in ("libc_start_main_stage2", "__restore_sigs"):
            assert m.group(1) == callee, (i, insn, callee)
    assert len(frames) > max(exp["gdb_frames"], exp["eu_stack_frames"])


def test_rust_panic_abort_stripped(ehbt_bin):
    exp = expected("rust_abort")
    rc, doc = ehbt(ehbt_bin, exp["core"])
    t = crashing(doc)
    assert rc == 0 and t["stop_reason"] == "outermost", (t["stop_reason"], t["stop_detail"])
    got = [f["pc"] for f in t["frames"]]
    want = [f["pc"] for f in exp["frames"]]
    assert got == want, "\n".join("%s %s" % p for p in zip(got, want))
    assert len(got) > exp["eu_stack_frames"]


def test_node_jit_frames_named_from_perf_map(ehbt_bin):
    exp = expected("node_abort")
    rc, doc = ehbt(ehbt_bin, exp["core"], "--perf-map", exp["perf_map"])
    t = crashing(doc)
    assert rc == 0 and t["stop_reason"] == "outermost", (t["stop_reason"], t["stop_detail"])
    frames = t["frames"]
    assert [f["pc"] for f in frames] == [f["pc"] for f in exp["frames"]]
    jit = [f for f in frames if f.get("jit")]
    assert jit and all(f["module"] is None for f in jit)
    names = [f["symbol"] or "" for f in jit]
    order = [next(i for i, n in enumerate(names) if re.search(r"\b%s\b" % fn, n))
             for fn in exp["js_functions"]]
    assert order == sorted(order), names
    assert any("node::Start" in (f["symbol"] or "") for f in frames)
    assert frames[-1]["symbol"] == "_start"
    # Without the map: the same frames, the JIT ones unnamed.
    _, bare = ehbt(ehbt_bin, exp["core"])
    bt = crashing(bare)["frames"]
    assert [f["pc"] for f in bt] == [f["pc"] for f in frames]
    assert all(f["symbol"] is None for f in bt if f.get("jit"))


def test_node_deoptimised_frames_with_planted_return_addresses(ehbt_bin):
    """V8's deoptimiser plants the start of Builtins_InterpreterEnterAtNextBytecode as the
    return address of the frames it rebuilds: no call precedes it, yet it is a frame. Every
    frame eu-stack finds by the frame-pointer chain, in order, none skipped by a scan, and
    the planted ones named by the function they start (looked up at pc, not pc - 1)."""
    exp = expected("node_deopt")
    rc, doc = ehbt(ehbt_bin, exp["core"])
    t = crashing(doc)
    assert rc == 0 and t["stop_reason"] == "outermost", (t["stop_reason"], t["stop_detail"])
    frames = t["frames"]
    assert [f["pc"] for f in frames] == [f["pc"] for f in exp["frames"]]
    assert all(f["source"] != "scan" for f in frames)
    planted = [f for f in frames if f["pc"] == exp["planted_pc"]]
    assert planted
    for f in planted:
        assert (f["symbol"], f["symbol_offset"]) == (
            "Builtins_InterpreterEnterAtNextBytecode", "0x0")
    assert frames[-1]["symbol"] == "_start"


def test_unreadable_perf_map_is_a_warning(ehbt_bin, tmp_path):
    exp = expected("node_abort")
    p = subprocess.run([str(ehbt_bin), "core", exp["core"], "--perf-map",
                        str(tmp_path / "absent.map")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "perf map" in p.stderr and "absent.map" in p.stderr


def test_no_scan_frames_where_tables_cover_everything(ehbt_bin, fixture_cores):
    """The fixture cores that tables fully cover never show a scanned frame. Exempt: the
    cases built to leave the tables (nounwind, smashed), and the PLT cases, whose stubs have
    no CFI on aarch64 and s390x (the PLT-stub rule is tagged scan too)."""
    exempt = {"nounwind", "smashed", "plt", "pltcrash", "scan"} | set(CASES)
    seen = 0
    for core in sorted(glob.glob(os.path.join(str(ce.ROOT), "cores", "out", "*", "*.core"))):
        name = os.path.basename(core)[:-len(".core")]
        exp_path = core[:-len(".core")] + ".expected.json"
        if name in exempt or not os.path.exists(exp_path):
            continue
        with open(exp_path) as f:
            exp = json.load(f)
        if exp.get("format") != "ehbt-expected/1":
            continue
        sysroots, exe = ce.default_args(exp)
        _, doc = ce.run_ehbt(ehbt_bin, core, sysroots=sysroots, exe=exe)
        for t in doc["threads"]:
            scanned = [f for f in t["frames"] if f["source"] == "scan"]
            assert not scanned, (core, t["tid"], scanned)
        seen += 1
    assert seen > 0


SCAN_ARCHES = ["aarch64", "s390x"]


def scan_expected(arch):
    path = os.path.join(str(ce.OUT), arch, "scan.expected.json")
    if not os.path.exists(path):
        assert ce.arch_tools_present(arch), "%s cross tools and qemu (scripts/install-deps.sh)" % arch
        subprocess.run([sys.executable, SCRIPT, "--only", "scan_" + arch], check=True)
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("arch", SCAN_ARCHES)
def test_scan_on_qemu_cores_matches_gdb(ehbt_bin, arch):
    """The program's four functions have no CFI and no frame chain (checked when the core is
    made); libc's callers of main have CFI. Every frame must be GDB's (live, on the copy that
    keeps .debug_frame), the three callers above the crash found by the scan, and the walk
    must reach _start through libc's tables: a scanned caller with a wrong sp would derail it
    there, and a stale return address left on the stack would show as a wrong pc."""
    exp = scan_expected(arch)
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe)
    assert ce.compare(exp, doc, rc) == []
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    sources = {f["symbol"]: f["source"] for f in thread["frames"]}
    for fn in ("fx_nounwind_outer", "fx_unwind_caller", "main"):
        assert sources[fn] == "scan", (fn, sources)
    assert sources["__libc_start_main"] == "eh_frame"


def test_python_open_core_perf_map(build_dir):
    """The Python module: perf_map= names JIT frames; Frame.jit and the report's frame
    records (ehbt.target_report) agree with the CLI's JSON."""
    import ehbt_py

    ehbt = ehbt_py.import_ehbt(build_dir)
    exp = expected("node_abort")
    target = ehbt.open_core(exp["core"], perf_map=exp["perf_map"])
    bt = target.unwind_thread(target.crashing_thread)
    records = ehbt.target_report(target).to_dict()["threads"][0]["frames"]
    assert [r["pc"] for r in records] == [f["pc"] for f in exp["frames"]]
    jit = [r for r in records if r.get("jit")]
    assert jit and all(r["module"] is None for r in jit)
    assert any("fx_js_level1" in (r["symbol"] or "") for r in jit)
    assert [f.jit for f in bt.frames] == [bool(r.get("jit")) for r in records]


def test_live_node_reads_its_perf_map(ehbt_bin, tmp_path):
    """`ehbt pid` of a running node: JIT frames named from /tmp/perf-PID.map by itself.

    A sample can catch node's main thread inside V8's runtime (a scavenge, a compile) called
    from a builtin that V8 copied into anonymous memory and that --perf-basic-prof does not
    list: the walk then honestly stops there ("in no module") before any JS frame. Such a
    sample says nothing about the perf map, so node is sampled again, up to 20 times; the
    first sample that reaches JS code must name the frames in order."""
    node = shutil.which("node")
    assert node, "node is needed (scripts/install-deps.sh)"
    script = tmp_path / "spin.js"
    script.write_text("function fx_spin3() { let x = 0; for (;;) { x = (x * 31 + 7) | 0; } }\n"
                      "function fx_spin2() { fx_spin3(); }\n"
                      "function fx_spin1() { fx_spin2(); }\n"
                      "fx_spin1();\n")
    p = subprocess.Popen([node, "--perf-basic-prof", "--interpreted-frames-native-stack",
                          str(script)], cwd=str(tmp_path))
    perf_map = "/tmp/perf-%d.map" % p.pid
    samples = []
    try:
        # Wait until node has compiled the innermost function (its perf map line is written).
        for _ in range(200):
            if os.path.exists(perf_map) and "fx_spin3" in open(perf_map).read():
                break
            subprocess.run(["sleep", "0.05"])
        for _ in range(20):
            r = subprocess.run([str(ehbt_bin), "pid", str(p.pid), "--json"],
                               capture_output=True, text=True, timeout=120)
            thread = json.loads(r.stdout)["threads"][0]
            samples.append(thread)
            if any(f.get("jit") for f in thread["frames"]):
                break
            subprocess.run(["sleep", "0.1"])
    finally:
        p.kill()
        p.wait()
        if os.path.exists(perf_map):
            os.unlink(perf_map)
    frames = samples[-1]["frames"]
    assert any(f.get("jit") for f in frames), (
        "no sample reached JS code: %s" % [(s.get("stop_reason"), s.get("stop_detail"),
                                            [f["symbol"] for f in s["frames"]][-3:])
                                           for s in samples])
    names = [f["symbol"] or "" for f in frames if f.get("jit")]
    order = [next((i for i, n in enumerate(names) if re.search(r"\b%s\b" % fn, n)), None)
             for fn in ("fx_spin2", "fx_spin1")]
    assert None not in order and order == sorted(order), names
    assert any("node::Start" in (f["symbol"] or "") for f in frames), frames
