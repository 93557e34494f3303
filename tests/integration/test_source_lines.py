# SPDX-License-Identifier: Apache-2.0
"""Source lines and inlined frames (#28) on the fixture cores of cores/make_line_cores.py:
`ehbt core` (JSON and text), `--no-lines`, a missing debug file, and the GDB and LLDB plugins'
`ehbt` commands, frame by frame against GDB (lines_expect.py holds the rules: every physical
frame's `location` and `inlined` chain, flattened, is GDB's frame list: function, file, line,
inline frames at the same positions)."""

import json
import os
import shutil
import subprocess

import pytest

import cores_expect as ce
import ehbt_py as h
import lines_expect as le
from test_lldb_plugin import LLDB, run_lldb

CASES = le.CASES
IDS = ["%s-%s" % c for c in CASES]
SPLIT = [c for c in CASES if c[1] in ("inlinesplit", "inlinedwz")]


@pytest.fixture(scope="session")
def line_cores():
    arches = [a for a in le.MAKE.ARCHES if ce.arch_tools_present(a)]
    return {"arches": arches, "logs": le.ensure_line_cores(arches)}


def expected(line_cores, arch, name):
    if le.missing_tools(name):
        pytest.skip("%s needs %s" % (name, ", ".join(le.missing_tools(name))))
    return ce.expected_case(line_cores, arch, name, pytest.skip)


def ehbt(ehbt_bin, exp, *more, debug_dir=True, json_out=True):
    cmd = [str(ehbt_bin), "core", exp["core"]] + le.cli_args(exp, debug_dir) + list(more)
    if json_out:
        cmd += ["--json", "--all-threads"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, "%s: exit %d\n%s" % (" ".join(cmd), proc.returncode,
                                                      proc.stderr)
    return (json.loads(proc.stdout) if json_out else proc.stdout), proc.stderr


def where(arch, name):
    return "%s/%s" % (arch, name)


# --- the CLI ---------------------------------------------------------------------------------

@pytest.mark.parametrize("arch,name", CASES, ids=IDS)
def test_json_lines_are_gdbs(ehbt_bin, line_cores, arch, name):
    exp = expected(line_cores, arch, name)
    doc, _ = ehbt(ehbt_bin, exp)
    errors = ce.compare(exp, doc, 0) + le.compare_lines(exp, doc, where(arch, name))
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("arch,name", CASES, ids=IDS)
def test_text_lines_are_gdbs(ehbt_bin, line_cores, arch, name):
    exp = expected(line_cores, arch, name)
    text, _ = ehbt(ehbt_bin, exp, json_out=False)
    crashing = [t for t in exp["threads"] if t["crashing"]][0]
    errors = le.compare_text(crashing, text, where(arch, name))
    assert not errors, "\n".join(errors) + "\n" + text


NO_LINES = [c for c in CASES if c[1] in ("inline", "inlinecxx", "inlinedwz")]


@pytest.mark.parametrize("arch,name", NO_LINES, ids=["%s-%s" % c for c in NO_LINES])
def test_no_lines_gives_no_locations(ehbt_bin, line_cores, arch, name):
    """--no-lines: every frame's location null and inlined [] (libc's too, whose debug file
    is installed on x86-64), the same frames otherwise, no position in the text."""
    exp = expected(line_cores, arch, name)
    doc, _ = ehbt(ehbt_bin, exp, "--no-lines")
    errors = ce.compare(exp, doc, 0)
    assert not errors, "\n".join(errors)
    for t in doc["threads"]:
        for f in t["frames"]:
            assert "location" in f and f["location"] is None, f
            assert f["inlined"] == [], f
    text, _ = ehbt(ehbt_bin, exp, "--no-lines", json_out=False)
    lines = le.text_frames(text)
    assert all(pos is None for _, _, _, pos in lines), text
    assert len(lines) == len([f for t in exp["threads"] if t["crashing"] for f in t["frames"]]), \
        text


@pytest.mark.parametrize("arch,name", SPLIT, ids=["%s-%s" % c for c in SPLIT])
def test_missing_debug_file_gives_no_location(ehbt_bin, line_cores, arch, name):
    """The executable is stripped and its debug file is only in the case's debug directory:
    without --debug-dir its frames have no location and no inlined calls (and no crash, the
    same pcs); the libraries' frames keep GDB's lines."""
    exp = expected(line_cores, arch, name)
    doc, _ = ehbt(ehbt_bin, exp, debug_dir=False)
    crashing = [t for t in exp["threads"] if t["crashing"]][0]
    got = [t for t in doc["threads"] if t["tid"] == crashing["tid"]][0]
    assert [f["pc"] for f in got["frames"]] == [f["pc"] for f in crashing["frames"]]
    for e, g in zip(crashing["frames"], got["frames"]):
        if e["module_file"] in (exp["exe"], exp["exe_file"]):
            assert g["location"] is None and g["inlined"] == [], g
        else:
            assert le.position_matches(g["location"], e["location"]), (g, e)


DWZ = [c for c in CASES if c[1] == "inlinedwz"]


@pytest.mark.parametrize("arch,name", DWZ, ids=["%s-%s" % c for c in DWZ])
def test_missing_dwz_file_is_no_crash_and_no_wrong_line(ehbt_bin, line_cores, arch, name,
                                                        tmp_path):
    """The debug file without the dwz common file its .gnu_debugaltlink names: what needs the
    common file is unknown; nothing may be wrong and nothing may crash. Whatever location or
    inlined call ehbt still gives is GDB's."""
    exp = expected(line_cores, arch, name)
    debug = tmp_path / "debug"
    bid = os.path.relpath(exp["debug_file"], exp["debug_dir"])
    (debug / os.path.dirname(bid)).mkdir(parents=True)
    shutil.copy2(exp["debug_file"], debug / bid)
    doc, _ = ehbt(ehbt_bin, dict(exp, debug_dir=str(debug)))
    crashing = [t for t in exp["threads"] if t["crashing"]][0]
    got = [t for t in doc["threads"] if t["tid"] == crashing["tid"]][0]
    assert [f["pc"] for f in got["frames"]] == [f["pc"] for f in crashing["frames"]]
    for e, g in zip(crashing["frames"], got["frames"]):
        if g["location"] is not None:
            assert le.position_matches(g["location"], e["location"]), (g, e)
        for call in g["inlined"]:
            gdb_calls = [c for c in e["inlined"]
                         if le.position_matches(call["location"], c["location"])]
            assert gdb_calls, (call, e["inlined"])


# --- the debugger plugins ----------------------------------------------------------------------

def plugin_inputs(exp):
    """What a debugger is given: the core, the executable as it lies, the sysroot, and the
    debug directories (the case's own, then the host's, where libc's debug file is)."""
    dirs = ([exp["debug_dir"]] if exp.get("debug_dir") else []) + ["/usr/lib/debug"]
    return exp["core"], exp["exe_file"], exp.get("sysroot"), dirs


def cli_report(ehbt_bin, exp):
    doc, _ = ehbt(ehbt_bin, exp)
    text, _ = ehbt(ehbt_bin, exp, "--all-threads", json_out=False)
    return doc, text[text.index("Thread "):]


def one_document(text):
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert len(lines) == 1, text[-3000:]
    return json.loads(lines[0])


def lines_of(doc):
    """{tid: [(pc, location, inlined)]}: the fields #28 adds, per frame."""
    return {t["tid"]: [(f["pc"], f.get("location"), f.get("inlined")) for f in t["frames"]]
            for t in doc["threads"]}


def raw_as_expected(raw):
    """cores/gdb_expect.py's record of this session, shaped as an expected file's threads."""
    return {"threads": [{"tid": t["tid"], "frames": [
        {"function": f["name"], "location": f["location"], "inlined": f["inlined"]}
        for f in t["frames"] if "error" not in f]} for t in raw["threads"]]}


@pytest.mark.parametrize("arch,name", CASES, ids=IDS)
def test_gdb_plugin_prints_the_clis_lines_and_gdbs(build_dir, ehbt_bin, line_cores, arch, name,
                                                   tmp_path):
    """GDB's `ehbt` prints the CLI's text and the CLI's location/inlined per frame, those are
    the expected file's (GDB's), and on a native core GDB's own frames in the same session
    (cores/gdb_expect.py run there too)."""
    exp = expected(line_cores, arch, name)
    gdb = ce.MAKE.ARCHES[arch]["gdb"]
    h.need_gdb(gdb)
    core, exe, sysroot, dirs = plugin_inputs(exp)
    pre = ["set debug-file-directory " + ":".join(dirs)]
    if sysroot:
        pre.append("set sysroot " + sysroot)
    pre += ["file " + exe, "core " + core, "source " + str(ce.CORES / "gdb_expect.py")]
    files = {k: tmp_path / ("gdb-%s.out" % k) for k in ("text", "json")}
    raw = tmp_path / "gdb-raw.json"
    commands = ["python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (str(f), c)
                for f, c in ((files["text"], "ehbt --all-threads"),
                             (files["json"], "ehbt --all-threads --json"))]
    commands.append("ehbt-expect %s" % raw)
    out = h.run_gdb(build_dir, [], pre + commands, gdb=gdb)
    assert all(f.exists() for f in list(files.values()) + [raw]), out[-3000:]
    want_doc, want_text = cli_report(ehbt_bin, exp)
    got_text = files["text"].read_text()
    got_text = got_text[got_text.index("Thread "):] if "Thread " in got_text else got_text
    errors = []
    if got_text != want_text:
        errors.append("GDB's ehbt text differs:\n--- CLI\n%s--- GDB\n%s" % (want_text, got_text))
    got_doc = one_document(files["json"].read_text())
    if lines_of(got_doc) != lines_of(want_doc):
        errors.append("GDB's ehbt locations differ from the CLI's:\n%s\n%s" % (
            lines_of(got_doc), lines_of(want_doc)))
    errors += le.compare_lines(exp, got_doc, "gdb plugin " + where(arch, name))
    # GDB's own frames in this session: on a native core. GDB cannot place a qemu-user core's
    # PIE executable (cores/README.md: qemu writes no contents for its read-only mappings), so
    # there it shows `??` frames; the expected file (GDB live through qemu's gdbstub at the
    # crash) stands for GDB on those arches, compared above.
    if not ce.MAKE.ARCHES[arch]["qemu"]:
        session = raw_as_expected(json.loads(raw.read_text()))
        errors += le.compare_lines(session, got_doc, "gdb session " + where(arch, name),
                                   physical_names=False)
    assert not errors, "\n".join(errors)


def lldb_own_lines(dump, exe):
    """LLDB's own frames of the executable, flattened as lines_expect does: [(kind, position)]
    (LLDB lists an inlined call as a frame of its own, like GDB)."""
    out = []
    for t in dump["threads"]:
        for f in t["frames"]:
            if f["module"] == os.path.basename(exe):
                pos = f["line"] and {"file": f["line"]["file"], "fullname": None,
                                     "line": f["line"]["line"]}
                out.append(("inline" if f["inlined"] else "frame", pos))
    return out


def same_as_lldbs(ours, lldbs, gdbs):
    """ehbt's position is LLDB's: the same line, and the same file, or the relative name the
    debug info gives (rustc records files under its working directory so; GDB's `filename`)
    where LLDB prints it joined to the compile directory (GDB's `fullname`)."""
    if le.position_matches(ours, lldbs):
        return True
    return (ours is not None and lldbs is not None and ours["line"] == lldbs["line"] and
            not os.path.isabs(ours["file"]) and lldbs["file"] == gdbs["fullname"] and
            lldbs["file"].endswith("/" + ours["file"]))


@pytest.mark.parametrize("arch,name", CASES, ids=IDS)
def test_lldb_plugin_prints_the_clis_lines_and_lldbs(build_dir, ehbt_bin, line_cores, arch,
                                                     name, tmp_path):
    """LLDB's `ehbt` prints the CLI's text and the CLI's location/inlined per frame, and they
    are GDB's; for the executable's frames, where LLDB itself read the debug info and agrees
    with GDB, they are LLDB's own positions and inline frames too."""
    if shutil.which(LLDB) is None:
        pytest.skip(LLDB + " not installed")
    exp = expected(line_cores, arch, name)
    core, exe, sysroot, dirs = plugin_inputs(exp)
    pre = ["settings set target.debug-file-search-paths %s" % " ".join(dirs),
           "target create %s --core %s" % (exe, core)]
    more = " --sysroot %s" % sysroot if sysroot else ""
    files = {k: tmp_path / ("lldb-%s.out" % k) for k in ("text", "json")}
    dump = tmp_path / "lldb-dump.json"
    out = run_lldb(build_dir, tmp_path, [
        "ehbt_test_capture %s ehbt --all-threads%s" % (files["text"], more),
        "ehbt_test_capture %s ehbt --all-threads --json%s" % (files["json"], more),
        "ehbt_test_dump %s" % dump], pre=pre)
    assert all(f.exists() for f in list(files.values()) + [dump]), out[-3000:]
    want_doc, want_text = cli_report(ehbt_bin, exp)
    got_text = files["text"].read_text()
    got_text = got_text[got_text.index("Thread "):] if "Thread " in got_text else got_text
    errors = []
    if got_text != want_text:
        errors.append("LLDB's ehbt text differs:\n--- CLI\n%s--- LLDB\n%s" % (want_text,
                                                                             got_text))
    got_doc = one_document(files["json"].read_text())
    if lines_of(got_doc) != lines_of(want_doc):
        errors.append("LLDB's ehbt locations differ from the CLI's:\n%s\n%s" % (
            lines_of(got_doc), lines_of(want_doc)))
    errors += le.compare_lines(exp, got_doc, "lldb plugin " + where(arch, name))
    exe_name = os.path.basename(exe)
    ours = [(k, pos) for k, _, pos, f in le.ehbt_flat(got_doc["threads"][0])
            if f.get("module") and os.path.basename(f["module"]) == exe_name]
    crashing = [t for t in exp["threads"] if t["crashing"]][0]
    gdbs = [(k, pos) for k, _, pos, f in le.gdb_flat(crashing)
            if f["module_file"] in (exp["exe"], exp["exe_file"])]
    theirs = lldb_own_lines(json.loads(dump.read_text()), exe)
    if len(ours) != len(gdbs):
        errors.append("executable frames with inlined ones: ehbt %d, GDB %d:\n%s" % (
            len(ours), len(gdbs), ours))
    # LLDB's own frames are a second opinion only where LLDB read the debug info as GDB did
    # (the same frames, inlined ones included): LLDB 16 finds no separate debug file of a
    # qemu core's executable, and does not read a dwz file (it then shows the physical
    # frames without lines). The plain case must be such a second opinion on x86-64.
    lldb_read_it = len(theirs) == len(gdbs) and any(lp for _, lp in theirs)
    if (arch, name) == ("x86_64", "inline"):
        assert lldb_read_it, "LLDB did not read the inline case's own DWARF: %s" % theirs
    for i, ((k, p), (lk, lp), (gk, gp)) in enumerate(zip(ours, theirs if lldb_read_it else [],
                                                         gdbs)):
        # Where the two debuggers disagree GDB is the reference (checked above); where they
        # agree ehbt must say the same.
        if lk == gk and le.position_matches(lp and dict(lp, fullname=lp["file"]), gp):
            if k != lk or not same_as_lldbs(p, lp, gp):
                errors.append("#%d: ehbt %s %s, LLDB and GDB %s %s" % (i, k, p, lk, lp))
    assert not errors, "\n".join(errors)


NO_LINES_PLUGIN = [c for c in CASES if c[1] == "inline"]


@pytest.mark.parametrize("arch,name", NO_LINES_PLUGIN, ids=["%s-%s" % c for c in NO_LINES_PLUGIN])
def test_plugins_no_lines(build_dir, ehbt_bin, line_cores, arch, name, tmp_path):
    """GDB's `ehbt -no-lines` and LLDB's `ehbt --no-lines`: the CLI's `--no-lines` document,
    no location and no inlined call in any frame."""
    exp = expected(line_cores, arch, name)
    want, _ = ehbt(ehbt_bin, exp, "--no-lines")
    core, exe, sysroot, dirs = plugin_inputs(exp)
    gdb = ce.MAKE.ARCHES[arch]["gdb"]
    h.need_gdb(gdb)
    pre = ["set debug-file-directory " + ":".join(dirs)] + (
        ["set sysroot " + sysroot] if sysroot else []) + ["file " + exe, "core " + core]
    out_file = tmp_path / "gdb.json"
    out = h.run_gdb(build_dir, [], pre + [
        "python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (
            str(out_file), "ehbt -all -json -no-lines")], gdb=gdb)
    assert out_file.exists(), out[-3000:]
    docs = {"gdb": one_document(out_file.read_text())}
    if shutil.which(LLDB):
        lldb_file = tmp_path / "lldb.json"
        more = " --sysroot %s" % sysroot if sysroot else ""
        out = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s ehbt --all-threads --json "
                                             "--no-lines%s" % (lldb_file, more)],
                       pre=["target create %s --core %s" % (exe, core)])
        assert lldb_file.exists(), out[-3000:]
        docs["lldb"] = one_document(lldb_file.read_text())
    for who, doc in docs.items():
        assert lines_of(doc) == lines_of(want), who
        assert all(f["location"] is None and f["inlined"] == []
                   for t in doc["threads"] for f in t["frames"]), (who, doc)


# --- the CPython core of the benchmarks -------------------------------------------------------

CPYTHON = "/usr/bin/python3.11"
CPYTHON_SCRIPT = r"""
import os, queue, threading, time
lock = threading.Lock(); lock.acquire()
q = queue.Queue()
ts = [threading.Thread(target=f, daemon=True) for f in (lambda: time.sleep(1000),
      lock.acquire, q.get)]
for t in ts: t.start()
time.sleep(0.3)
os.abort()
"""


def _debug_file_of(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    bid = [line.split()[-1] for line in out.splitlines() if "Build ID" in line]
    debug = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[0][:2], bid[0][2:]) if bid else None
    return debug if debug and os.path.exists(debug) else None


def test_cpython_core_lines_are_gdbs(ehbt_bin, tmp_path):
    """bench/'s CPython core (python3.11 with python3.11-dbg and libc6-dbg: DWARF for
    libpython's and libc's frames, much of it inlined): every thread's frames, inlined calls
    and lines are GDB's (cores/gdb_expect.py on the same core)."""
    exe = os.path.realpath(CPYTHON)
    if not os.path.exists(exe) or not _debug_file_of(exe):
        pytest.skip("no %s with its debug file (python3.11-dbg)" % CPYTHON)
    h.need_gdb()
    core = h.make_core(exe, tmp_path, args=["-c", CPYTHON_SCRIPT])
    raw = tmp_path / "gdb.json"
    subprocess.run(["gdb", "-batch", "-nx", "-ex", "set pagination off", "-x",
                    str(ce.CORES / "gdb_expect.py"), "-ex", "ehbt-expect %s" % raw, exe,
                    str(core)], capture_output=True, timeout=600)
    session = raw_as_expected(json.loads(raw.read_text()))
    proc = subprocess.run([str(ehbt_bin), "core", str(core), "--all-threads", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["threads"]) == len(session["threads"]) == 4
    errors = le.compare_lines(session, doc, "cpython", physical_names=False)
    assert not errors, "\n".join(errors)
