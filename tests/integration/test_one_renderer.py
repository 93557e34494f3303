# SPDX-License-Identifier: Apache-2.0
"""One renderer (issue 30): GDB's `ehbt`, LLDB's `ehbt` and ehbt-triage print what the CLI
prints, because all of them render through the engine's report layer (ehbt.Report).

For every x86_64 fixture core, and the aarch64 chain core (GDB: gdb-multiarch with the
cross sysroot; LLDB: the engine given the sysroot):

- text: `ehbt --all-threads` in GDB and in LLDB is, byte for byte, the CLI's
  `ehbt core CORE --all-threads` from its first `Thread` line on (the plugins print the
  thread blocks without the CLI's Core/Executable/Arch/Signal header);
- JSON: `ehbt --all-threads --json` in each debugger is the CLI's document field for field,
  after the normalisations listed in NORMALISED (each with its reason), and nothing else;
- triage: the threads and frames ehbt-triage stores for the core carry the same
  (function, module, module offset) per frame, thread for thread, as the CLI's document.

The CLI is the reference: its output is what users and docs/formats.md are promised.
Each debugger is given what the CLI is given: the core, its executable where the fixture
names one, the sysroot and the debug-file directory where the case has them."""

import json
import pathlib
import re
import sqlite3
import subprocess
import sys

import pytest

import cores_expect as ce
import ehbt_py as h
from test_lldb_plugin import run_lldb

pytestmark = pytest.mark.usefixtures("built")

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = (ROOT / "cores" / "out").resolve()
TRIAGE = ROOT / "triage" / "ehbt-triage"

X86_64 = sorted(p.stem for p in (OUT / "x86_64").glob("*.core"))
# Cores left out of the debugger comparison (none now). node_abort was: its walk goes through
# JIT code that only the engine's core target knows (anonymous executable segments, the perf
# map); the plugins' walks now take it from that target (ehbt.debugger_support.module_set).
WALKED_DIFFERENTLY = set()
CASES = [("x86_64", n) for n in X86_64 if n not in WALKED_DIFFERENTLY] + [("aarch64", "chain")]

# What may differ between a debugger's document and the CLI's, and why. Nothing else may.
NORMALISED = {
    "modules order": "each debugger lists its own modules first (GDB in `info files` order, "
                     "LLDB in its target's module order), then those only the engine found in "
                     "the core; the CLI lists the core's order. The frames name modules by "
                     "path, so the order carries no information: compared as a set by path.",
    "LLDB's own symbols": "where the engine knows no symbol for a frame, LLDB's `ehbt` names it "
                          "from LLDB's symbol tables (Report.add_thread's symbol_of; docs/lldb.md)"
                          ": such a frame's symbol and symbol_offset (JSON) and its `in NAME ()` "
                          "(text) are accepted where the CLI has none (`in ?? ()`), only there.",
}
FRAME_LINE = re.compile(r"^(#\d+ +0x[0-9a-f]+ in )(.+?)( \(\).*)$")


@pytest.fixture(scope="module")
def built(build_dir):
    h.import_ehbt(build_dir)
    h.need_gdb()


def case_inputs(arch, name):
    """(core, executable or None, sysroot or None, debug dir or None): the core under this
    tree's cores/out (a fixture's record may name another worktree's copy), the rest from the
    fixture's record."""
    core = OUT / arch / ("%s.core" % name)
    if not core.exists():
        pytest.fail("no fixture core %s (run cores/make-cores.sh %s)" % (core, arch))
    exp_path = OUT / arch / ("%s.expected.json" % name)
    exp = json.loads(exp_path.read_text()) if exp_path.exists() else {}
    exe = exp.get("exe_file")
    exe = str(OUT / arch / pathlib.Path(exe).relative_to(pathlib.Path(exp["core"]).parent)) \
        if exe else None
    debug = "%s/usr/lib/debug" % exp["debug_sysroot"] if exp.get("debug_sysroot") else None
    if debug:
        debug = str(OUT / arch / pathlib.Path(debug).relative_to(pathlib.Path(exp["core"]).parent))
    return str(core), exe, exp.get("sysroot"), debug


def cli(ehbt_bin, core, exe, sysroot, debug, *more):
    cmd = [str(ehbt_bin), "core", core, "--all-threads", *more]
    if exe:  # the debuggers are given it with `file` / `target create`
        cmd += ["--exe", exe]
    if sysroot:
        cmd += ["--sysroot", sysroot]
    if debug:
        cmd += ["--debug-dir", debug]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def gdb_outputs(build_dir, arch, core, exe, sysroot, debug, tmp_path):
    """(text, json) GDB's `ehbt --all-threads [--json]` printed."""
    gdb = ce.MAKE.ARCHES[arch]["gdb"]
    h.need_gdb(gdb)
    pre = ["set debug-file-directory %s" % debug] if debug else []
    if sysroot:
        pre.append("set sysroot " + sysroot)
    pre += (["file " + exe] if exe else []) + ["core " + core]
    files = {k: tmp_path / ("gdb-%s.out" % k) for k in ("text", "json")}
    commands = ["python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (str(f), c)
                for f, c in ((files["text"], "ehbt --all-threads"),
                             (files["json"], "ehbt --all-threads --json"))]
    out = h.run_gdb(build_dir, [], pre + commands, gdb=gdb)
    assert all(f.exists() for f in files.values()), out[-3000:]
    return files["text"].read_text(), files["json"].read_text()


def lldb_outputs(build_dir, core, exe, sysroot, debug, tmp_path):
    pre = ["settings set target.debug-file-search-paths %s" % debug] if debug else []
    pre.append("target create %s--core %s" % (exe + " " if exe else "", core))
    files = {k: tmp_path / ("lldb-%s.out" % k) for k in ("text", "json")}
    # LLDB alone finds no libraries of a qemu core (it names no files): the engine is given
    # the sysroot, as the CLI is.
    more = " --sysroot %s" % sysroot if sysroot else ""
    out = run_lldb(build_dir, tmp_path, [
        "ehbt_test_capture %s ehbt --all-threads%s" % (files["text"], more),
        "ehbt_test_capture %s ehbt --all-threads --json%s" % (files["json"], more)], pre=pre)
    assert all(f.exists() for f in files.values()), out[-3000:]
    return files["text"].read_text(), files["json"].read_text()


def thread_blocks(text):
    """The text from the first `Thread` line on."""
    m = re.search(r"^Thread \d+", text, re.M)
    assert m, text[-3000:]
    return text[m.start():]


def the_document(text):
    """The one JSON line of a plugin's output (GDB may print its own notes before it)."""
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert len(lines) == 1, text[-2000:]
    return json.loads(lines[0])


def normalised(doc, cli_doc=None):
    """The document with NORMALISED applied; given the CLI's, LLDB's own symbols of frames
    the CLI has none for are dropped."""
    doc = json.loads(json.dumps(doc))
    doc["modules"] = sorted(doc["modules"], key=lambda m: m["path"])  # "modules order"
    if cli_doc is not None:  # "LLDB's own symbols"
        for t, w in zip(doc["threads"], cli_doc["threads"]):
            for f, wf in zip(t["frames"], w["frames"]):
                if wf.get("symbol") is None and f.get("symbol") is not None:
                    f["symbol"] = f["symbol_offset"] = None
    return doc


def lldb_text_normalised(text, cli_text):
    """LLDB's text with "LLDB's own symbols" undone: a frame line naming a function where the
    CLI's line (same place, otherwise identical) says `in ?? ()`."""
    got, want = text.splitlines(True), cli_text.splitlines(True)
    if len(got) != len(want):
        return text
    out = []
    for g, w in zip(got, want):
        mg, mw = FRAME_LINE.match(g), FRAME_LINE.match(w)
        if g != w and mg and mw and mw.group(2) == "??" and \
                (mg.group(1), mg.group(3)) == (mw.group(1), mw.group(3)):
            g = w
        out.append(g)
    return "".join(out)


def differences(want, got, who):
    """Every field where a debugger's (normalised) document differs from the CLI's."""
    want, got = normalised(want), normalised(got, want if who == "lldb" else None)
    if want == got:
        return []
    errors = []
    for key in sorted(set(want) | set(got)):
        if key not in ("modules", "threads") and want.get(key, "<absent>") != got.get(key,
                                                                                   "<absent>"):
            errors.append("%s %s: %r, CLI %r" % (who, key, got.get(key, "<absent>"),
                                                 want.get(key, "<absent>")))
    cli_paths = [m["path"] for m in want["modules"]]
    for m in got["modules"]:
        ref = [w for w in want["modules"] if w["path"] == m["path"]]
        if not ref:
            errors.append("%s module %s: not in the CLI's list" % (who, m["path"]))
        elif ref[0] != m:
            errors.append("%s module %r, CLI %r" % (who, m, ref[0]))
    missing = set(cli_paths) - {m["path"] for m in got["modules"]}
    if missing:
        errors.append("%s modules missing: %s" % (who, sorted(missing)))
    if len(want["threads"]) != len(got["threads"]):
        errors.append("%s: %d threads, CLI %d" % (who, len(got["threads"]),
                                                  len(want["threads"])))
    for w, g in zip(want["threads"], got["threads"]):
        for key in sorted(set(w) | set(g)):
            if key != "frames" and w.get(key) != g.get(key):
                errors.append("%s thread %s %s: %r, CLI %r" % (who, w["tid"], key, g.get(key),
                                                               w.get(key)))
        if len(w["frames"]) != len(g["frames"]):
            errors.append("%s thread %s: %d frames, CLI %d" % (who, w["tid"], len(g["frames"]),
                                                               len(w["frames"])))
        for wf, gf in zip(w["frames"], g["frames"]):
            if wf != gf:
                errors.append("%s thread %s frame %s: %r, CLI %r" % (who, w["tid"], wf["index"],
                                                                     gf, wf))
    return errors or ["%s: documents differ (%r)" % (who, got)]


@pytest.mark.parametrize("arch,name", CASES, ids=["%s-%s" % c for c in CASES])
def test_debuggers_print_the_clis_report(build_dir, ehbt_bin, tmp_path, arch, name):
    core, exe, sysroot, debug = case_inputs(arch, name)
    want_text = thread_blocks(cli(ehbt_bin, core, exe, sysroot, debug))
    want_doc = json.loads(cli(ehbt_bin, core, exe, sysroot, debug, "--json"))
    assert want_doc["threads"] and want_doc["threads"][0]["frames"], want_doc
    gdb_text, gdb_json = gdb_outputs(build_dir, arch, core, exe, sysroot, debug, tmp_path)
    lldb_text, lldb_json = lldb_outputs(build_dir, core, exe, sysroot, debug, tmp_path)
    errors = []
    lldb_text = lldb_text_normalised(thread_blocks(lldb_text), want_text)
    for who, text in (("gdb", gdb_text), ("lldb", lldb_text)):
        if thread_blocks(text) != want_text:
            errors.append("%s text differs:\n--- CLI\n%s--- %s\n%s" % (
                who, want_text, who, thread_blocks(text)))
    errors += differences(want_doc, the_document(gdb_json), "gdb")
    errors += differences(want_doc, the_document(lldb_json), "lldb")
    assert not errors, "\n".join(errors)


# ---- ehbt-triage ----------------------------------------------------------------------------

def frames_by_tid(threads):
    """{tid: [(function, module, module offset)]} of a document's threads."""
    return {t["tid"]: [(f.get("symbol"), f.get("module"), f.get("module_offset"))
                       for f in t["frames"]] for t in threads}


@pytest.fixture(scope="module")
def triage_store(build_dir, tmp_path_factory):
    """One ehbt-triage run over the x86_64 cores (given like the CLI: with the debug-file
    directory of the case that has one); the SQLite store it wrote and that directory."""
    work = tmp_path_factory.mktemp("triage")
    debug = [case_inputs("x86_64", n)[3] for n in X86_64]
    debug = sorted({d for d in debug if d})
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(build_dir / "engine" / "python"),
           "EHBT_BIN": str(build_dir / "engine" / "tools" / "ehbt")}
    args = [sys.executable, str(TRIAGE), "--db", str(work / "store.sqlite"), "-j", "2"]
    for d in debug:
        args += ["--debug-dir", d]
    args += [case_inputs("x86_64", n)[0] for n in X86_64]
    proc = subprocess.run(args, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return work / "store.sqlite", debug


def stored_threads(db, core):
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT id, status, error FROM cores WHERE path = ?", (core,)).fetchone()
        assert row is not None, "triage stored no row for %s" % core
        assert row[1] == "ok", row
        threads = []
        for tid, thread_id in con.execute("SELECT tid, id FROM threads WHERE core_id = ? "
                                          "ORDER BY id", (row[0],)).fetchall():
            # A row stands for `repeats` equal frames (a recursion's).
            frames = [{"symbol": s, "module": m, "module_offset": o}
                      for s, m, o, n in con.execute(
                          "SELECT symbol, module, module_offset, repeats FROM frames "
                          "WHERE thread_id = ? ORDER BY idx", (thread_id,))
                      for _ in range(n)]
            threads.append({"tid": tid, "frames": frames})
        return threads
    finally:
        con.close()


@pytest.mark.parametrize("name", X86_64)
def test_triage_stores_the_clis_frames(ehbt_bin, triage_store, name):
    db, debug = triage_store
    core = case_inputs("x86_64", name)[0]
    cmd = [str(ehbt_bin), "core", core, "--all-threads", "--json"]
    for d in debug:
        cmd += ["--debug-dir", d]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    want = frames_by_tid(json.loads(proc.stdout)["threads"])
    got = frames_by_tid(stored_threads(db, core))
    assert got == want
