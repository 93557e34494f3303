# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage end to end: real cores from a small crash program built here, run several times.

Expected values come from outside the tool: the function names are the program's own source
(below), the ASLR bases are printed by the program itself before it crashes, the offsets of
the stripped binary come from `nm` on its unstripped twin, and the HTML is checked by
headless Chromium. The tool runs as a user would run it: the triage/ehbt-triage script with
PYTHONPATH=<build>/engine/python (the engine package, or the CLI fallback when the package
is not built).
"""

import json
import os
import pathlib
import random
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "triage" / "ehbt-triage"
sys.path.insert(0, str(ROOT / "triage"))

from ehbt_py import triage_env  # noqa: E402
from ehbt_triage import content_hash  # noqa: E402
from ehbt_triage import forked  # noqa: E402
from ehbt_triage import signature as sigmod  # noqa: E402

CRASHY_C = r"""
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NI __attribute__((noinline, noclone))
#define KEEP() __asm__ volatile("" ::: "memory")

static int* hidden_null(void) {
  int* p = 0;
  __asm__("" : "+r"(p));
  return p;
}

NI void fx_a3(int v) { *(volatile int*)hidden_null() = v; KEEP(); }
NI void fx_a2(int v) { fx_a3(v + 1); KEEP(); }
NI void fx_a1(int v) { fx_a2(v + 1); KEEP(); }

NI void fx_b2(int v) { *(volatile int*)hidden_null() = v * 7; KEEP(); }
NI void fx_b1(int v) { fx_b2(v + 3); KEEP(); }

NI void fx_abort2(void) { abort(); }
NI void fx_abort1(void) { fx_abort2(); KEEP(); }

NI void fx_assert1(int v) { assert(v == 42); KEEP(); }

int main(int argc, char** argv) {
  printf("main=%p\n", (void*)main);
  fflush(stdout);
  const char* mode = argc > 1 ? argv[1] : "a";
  if (!strcmp(mode, "a")) fx_a1(argc);
  if (!strcmp(mode, "b")) fx_b1(argc);
  if (!strcmp(mode, "abort")) fx_abort1();
  if (!strcmp(mode, "assert")) fx_assert1(argc);
  return 0;
}
"""

# How many runs of each crash the module's fixture makes: (binary, mode) -> runs.
RUNS = {"a": ("crashy", "a", 3), "b": ("crashy", "b", 2), "stripped": ("crashy-stripped", "a", 2),
        "abort": ("crashy", "abort", 2), "assert": ("crashy", "assert", 1)}


# ---------------------------------------------------------------------------------------------
# Fixtures: the program, its cores, the tool's environment


def _core_pattern():
    try:
        return open("/proc/sys/kernel/core_pattern").read().strip()
    except OSError:
        return ""


def _kernel_core_in_cwd():
    p = _core_pattern()
    return p.startswith("core") and "/" not in p and not p.startswith("|")


def _crash_once(exe, mode, rundir, core_path):
    """Runs exe until it crashes; moves its core to core_path; returns the printed main()."""
    os.makedirs(rundir)

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    if _kernel_core_in_cwd():
        proc = subprocess.run([exe, mode], cwd=rundir, preexec_fn=limits, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, timeout=60)
        assert proc.returncode < 0, "%s %s did not crash" % (exe, mode)
        found = [f for f in os.listdir(rundir) if f == "core" or f.startswith("core.")]
        assert len(found) == 1, found
        shutil.move(os.path.join(rundir, found[0]), core_path)
        out = proc.stdout
    else:
        # The kernel sends cores elsewhere: GDB runs the program (ASLR left on) and writes it.
        proc = subprocess.run(
            ["gdb", "-batch", "-nx", "-ex", "set disable-randomization off", "-ex", "run",
             "-ex", "gcore " + core_path, "-ex", "kill", "--args", exe, mode],
            cwd=rundir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        out = proc.stdout
        assert os.path.exists(core_path), out
    m = re.search(r"main=(0x[0-9a-f]+)", out)
    assert m, out
    return int(m.group(1), 16)


@pytest.fixture(scope="module")
def crashy(tmp_path_factory):
    d = tmp_path_factory.mktemp("crashy")
    src = d / "crashy.c"
    src.write_text(CRASHY_C)
    exe = d / "crashy"
    subprocess.run(["gcc", "-O0", "-g", "-fPIE", "-pie", "-o", str(exe), str(src)], check=True)
    stripped = d / "crashy-stripped"
    subprocess.run(["strip", "-o", str(stripped), str(exe)], check=True)
    return d


@pytest.fixture(scope="module")
def cores(crashy, tmp_path_factory):
    """{name: [(core path, address of main in that run)]} in a directory of its own."""
    out = tmp_path_factory.mktemp("cores")
    runs = tmp_path_factory.mktemp("runs")
    result = {}
    for name, (binary, mode, count) in RUNS.items():
        result[name] = []
        for i in range(count):
            core = str(out / ("%s-%d.core" % (name, i)))
            main = _crash_once(str(crashy / binary), mode, str(runs / ("%s-%d" % (name, i))), core)
            result[name].append((core, main))
    return result


@pytest.fixture(scope="module")
def core_dir(cores):
    return os.path.dirname(cores["a"][0][0])


@pytest.fixture(scope="module")
def tool_env(build_dir):
    return triage_env(build_dir)


def triage(env, *args, cwd=None, extra_env=None, timeout=600):
    e = dict(env)
    e.update(extra_env or {})
    return subprocess.run(["/usr/bin/python3", str(TRIAGE)] + [str(a) for a in args], env=e,
                          cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_core(records):
    return {os.path.basename(r["core"]): r for r in records}


@pytest.fixture(scope="module")
def first_run(tool_env, core_dir, tmp_path_factory):
    """One run over every core: (process, jsonl records by core name, db path, work dir)."""
    work = tmp_path_factory.mktemp("run1")
    proc = triage(tool_env, "--jsonl", work / "out.jsonl", "--html", work / "report.html",
                  "-j", "2", core_dir, cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, by_core(read_jsonl(work / "out.jsonl")), work / "ehbt-triage.sqlite", work


def parts(sig):
    """The frame labels of a signature, without the signal prefix."""
    text = re.sub(r"^SIG[A-Z0-9]+(@0x0)? ", "", sig)
    text = re.sub(r"^\?[^:]*: ", "", text)  # an unreliable signature's "?EXE/ARCH: "
    return text.split(" | ")


# ---------------------------------------------------------------------------------------------
# Signatures and buckets


def test_aslr_runs_land_in_one_bucket(cores, first_run):
    mains = [m for _, m in cores["a"]]
    assert len(set(mains)) == len(mains), "ASLR off? main() at %s" % [hex(m) for m in mains]
    _, recs, _, _ = first_run
    rs = [recs["a-%d.core" % i] for i in range(len(cores["a"]))]
    assert len({r["bucket"] for r in rs}) == 1
    assert len({r["signature"] for r in rs}) == 1
    sig = rs[0]["signature"]
    assert sig.startswith("SIGSEGV@0x0 "), sig
    assert parts(sig)[:4] == ["fx_a3", "fx_a2", "fx_a1", "main"], sig
    # main's callers (__libc_start_call_main, __libc_start_main, _start) start the process:
    # they are left out rather than filling the --top 5 slots.
    assert len(parts(sig)) == 4
    # The frames themselves moved with ASLR: the pcs differ, the module offsets do not.
    pcs = {r["crashing_thread"]["frames"][0]["pc"] for r in rs}
    offs = {r["crashing_thread"]["frames"][0]["module_offset"] for r in rs}
    assert len(pcs) == len(rs) and len(offs) == 1


def test_different_sites_get_different_buckets(first_run):
    _, recs, _, _ = first_run
    a, b = recs["a-0.core"], recs["b-0.core"]
    assert a["bucket"] != b["bucket"]
    assert parts(b["signature"])[:3] == ["fx_b2", "fx_b1", "main"], b["signature"]
    assert recs["b-1.core"]["bucket"] == b["bucket"]
    buckets = {r["bucket"] for r in recs.values()}
    assert len(buckets) == 5  # a, b, stripped a, abort, assert


def test_stripped_binary_buckets_by_module_offset(crashy, first_run):
    _, recs, _, _ = first_run
    s0, s1 = recs["stripped-0.core"], recs["stripped-1.core"]
    assert s0["bucket"] == s1["bucket"]
    assert s0["bucket"] != recs["a-0.core"]["bucket"]
    labels = parts(s0["signature"])
    # Where fx_a3 lies, according to nm on the unstripped twin (same code, same addresses).
    nm = subprocess.run(["nm", "-S", str(crashy / "crashy")], stdout=subprocess.PIPE,
                        text=True, check=True).stdout
    syms = {}
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
    m = re.fullmatch(r"crashy-stripped\+0x([0-9a-f]+)", labels[0])
    assert m, s0["signature"]
    off = int(m.group(1), 16)
    lo, size = syms["fx_a3"]
    assert lo <= off < lo + size, (hex(off), hex(lo), size)
    # The callers are return addresses inside fx_a2 and fx_a1.
    for label, fn in zip(labels[1:3], ["fx_a2", "fx_a1"]):
        m = re.fullmatch(r"crashy-stripped\+0x([0-9a-f]+)", label)
        assert m, label
        lo, size = syms[fn]
        assert lo < int(m.group(1), 16) <= lo + size, (label, fn)


def test_abort_and_assert_skip_the_reporting_frames(first_run):
    _, recs, _, _ = first_run
    ab = recs["abort-0.core"]
    assert ab["signal"]["name"] == "SIGABRT"
    assert not ab["signature"].startswith("SIG"), ab["signature"]
    assert parts(ab["signature"])[:3] == ["fx_abort2", "fx_abort1", "main"], ab["signature"]
    # ...while the raw stack does start inside libc's abort machinery.
    top = [f["symbol"] for f in ab["crashing_thread"]["frames"][:2]]
    assert "fx_abort2" not in top, top
    assert recs["abort-1.core"]["bucket"] == ab["bucket"]
    asrt = recs["assert-0.core"]
    assert parts(asrt["signature"])[:2] == ["fx_assert1", "main"], asrt["signature"]


def test_skip_option_adds_patterns(tool_env, cores, tmp_path):
    core = cores["a"][0][0]
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl",
                  "--skip", "fx_a[0-9]", "--top", "2", core)
    assert proc.returncode == 0, proc.stderr
    (rec,) = read_jsonl(tmp_path / "o.jsonl")
    # main's callers start the process: not part of a signature, so main is all that is left.
    assert rec["signature"] == "SIGSEGV@0x0 main", rec["signature"]


FIXTURE_ABORTS = ("noreturn", "threads", "terminate")


@pytest.fixture(scope="module")
def fixture_aborts(tmp_path_factory):
    """The abort()ing fixture cores of cores/out/x86_64 (made if missing), copied aside, with
    GDB's expected frames."""
    src = ROOT / "cores" / "out" / "x86_64"
    if not all((src / (n + ".expected.json")).exists() for n in FIXTURE_ABORTS):
        subprocess.run(["bash", str(ROOT / "cores" / "make-cores.sh"), "x86_64", "--only",
                        ",".join(FIXTURE_ABORTS)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=1200)
    d = tmp_path_factory.mktemp("fixture_aborts")
    expected = {}
    for n in FIXTURE_ABORTS:
        if not (src / (n + ".expected.json")).exists():
            pytest.skip("fixture core %s could not be made" % n)
        shutil.copy(src / (n + ".core"), d / (n + ".core"))
        expected[n] = json.loads((src / (n + ".expected.json")).read_text())
    return d, expected


def test_fixture_abort_cores_skip_the_abort_machinery(tool_env, fixture_aborts, tmp_path):
    d, expected = fixture_aborts
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = by_core(read_jsonl(tmp_path / "o.jsonl"))
    for n in FIXTURE_ABORTS:
        exp = expected[n]
        (thread,) = [t for t in exp["threads"] if t.get("crashing")]
        # GDB's frames: libc's abort path (and libstdc++'s terminate path) first, then the
        # program's own functions, which is where the signature must begin.
        gdb = [f["function"] for f in thread["frames"]]
        first_own = next(i for i, f in enumerate(thread["frames"]) if f["module"] == n)
        # ...up to main: its callers (__libc_start_call_main ...) start the process and are
        # left out of signatures.
        # (_start is crt1.o's start code, linked into the program.)
        own = [f["function"] for f in thread["frames"][first_own:]
               if f["module"] == n and f["function"] != "_start"]
        want = own[:3]
        got = [re.sub(r"\.cold$", "", label) for label in parts(recs[n + ".core"]["signature"])]
        assert got[:3] == want, (n, recs[n + ".core"]["signature"], gdb)
        assert not recs[n + ".core"]["signature"].startswith("SIG")
    con = sqlite3.connect(tmp_path / "db")
    nthreads = con.execute("SELECT COUNT(*) FROM threads t JOIN cores c ON c.id = t.core_id "
                           "WHERE c.path LIKE '%threads.core'").fetchone()[0]
    assert nthreads == len(expected["threads"]["threads"])
    con.close()


# ---------------------------------------------------------------------------------------------
# Output formats


def test_jsonl_schema(first_run, cores):
    _, recs, _, _ = first_run
    assert len(recs) == sum(n for _, _, n in RUNS.values())
    keys = {"core", "executable", "signal", "signature", "bucket", "crashing_thread",
            "stop_reason", "error"}
    for name, r in recs.items():
        assert keys <= set(r), name
        assert r["error"] is None and r["status"] == "ok"
        assert isinstance(r["bucket"], int)
        assert r["executable"].endswith("crashy" if not name.startswith("stripped")
                                        else "crashy-stripped")
        assert set(r["signal"]) >= {"number", "name", "code", "address"}
        assert r["stop_reason"] in sigmod_stop_reasons()
        t = r["crashing_thread"]
        assert isinstance(t["tid"], int) and t["frames"]
        for i, f in enumerate(t["frames"]):
            assert f["index"] == i
            assert re.fullmatch(r"0x[0-9a-f]+", f["pc"])
    assert recs["a-0.core"]["signal"]["name"] == "SIGSEGV"
    assert recs["a-0.core"]["signal"]["number"] == 11


def sigmod_stop_reasons():
    return {"outermost", "max_frames", "no_module", "no_unwind_info", "memory_fault",
            "bad_unwind_info", "unsupported", "no_progress", "bad_pc"}


def test_text_report_lists_buckets(first_run):
    proc, recs, _, _ = first_run
    out = proc.stdout
    assert "Buckets of the 10 core(s)" in out
    table = [l for l in out.splitlines() if re.match(r"\s+\d+\s+\d+\s+", l)]
    assert len(table) == 5
    first = table[0].split()
    assert first[0] == "3" and first[1] == "3" and "fx_a3" in table[0]  # most cores first
    assert "10 core(s): 10 analysed, 0 seen before, 0 failed" in out


def test_store_contents(first_run):
    _, recs, db, _ = first_run
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = con.execute("SELECT status, COUNT(*) FROM cores GROUP BY status").fetchall()
    assert rows == [("ok", 10)]
    for bid, sig, count in con.execute("SELECT id, signature, count FROM buckets"):
        n = con.execute("SELECT COUNT(*) FROM cores WHERE bucket_id=? AND status='ok'",
                        (bid,)).fetchone()[0]
        assert n == count, sig
    # One thread per core (the program is single-threaded), crashing, with its frames.
    for core_id, nthreads in con.execute("SELECT core_id, COUNT(*) FROM threads GROUP BY core_id"):
        assert nthreads == 1
    assert con.execute("SELECT COUNT(*) FROM threads WHERE crashing = 1").fetchone()[0] == 10
    key = con.execute("SELECT build_id_key, module, module_offset FROM frames "
                      "WHERE idx = 0 AND symbol = 'fx_a3' LIMIT 1").fetchone()
    assert re.fullmatch(r"[0-9a-f]{16,}\+0x[0-9a-f]+", key[0]), key
    assert key[0].endswith("+" + key[2])
    con.close()


def test_seen_before_not_counted_twice(tool_env, first_run, cores, tmp_path):
    _, recs, db, work = first_run
    copy = tmp_path / "renamed.core"
    shutil.copy(cores["a"][0][0], copy)
    con = sqlite3.connect(db)
    before = con.execute("SELECT COUNT(*) FROM cores").fetchone()[0]
    count_a = con.execute("SELECT count FROM buckets WHERE id=?",
                          (recs["a-0.core"]["bucket"],)).fetchone()[0]
    proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / "o.jsonl", copy, cores["b"][0][0],
                  cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "0 analysed, 2 seen before" in proc.stdout
    assert con.execute("SELECT COUNT(*) FROM cores").fetchone()[0] == before
    assert con.execute("SELECT count FROM buckets WHERE id=?",
                       (recs["a-0.core"]["bucket"],)).fetchone()[0] == count_a == 3
    out = by_core(read_jsonl(tmp_path / "o.jsonl"))
    r = out["renamed.core"]
    assert r["status"] == "seen_before" and r["bucket"] == recs["a-0.core"]["bucket"]
    assert r["signature"] == recs["a-0.core"]["signature"]
    assert [f["symbol"] for f in r["crashing_thread"]["frames"][:3]] == ["fx_a3", "fx_a2", "fx_a1"]
    con.close()


@pytest.mark.parametrize("jobs", ["1", str(max(2, os.cpu_count() or 1))])
def test_speculative_analysis_keys_and_skips(tool_env, cores, tmp_path, jobs):
    """A fresh core is analysed while it is hashed, or right after without waiting for the
    parent's answer when every CPU has a worker (workers.py, "spec"; -j1 on a machine of two
    CPUs or more is the first, -j as many as the CPUs the second). The keys stored must be the
    content keys computed alone (the Python definition), a copy's speculative analysis (its
    content is analysed once) must not be stored, and a skipped copy whose analysis then hangs
    is not a failure: its outcome was "seen before" already."""
    a, b = cores["a"][0][0], cores["b"][0][0]
    copy = tmp_path / "copy-of-a.core"
    shutil.copy(a, copy)
    db = tmp_path / "db"
    proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / "1.jsonl", "-j", jobs, a, copy, b)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 analysed, 1 seen before, 0 failed" in proc.stdout
    recs = by_core(read_jsonl(tmp_path / "1.jsonl"))
    # With -j2 the two copies are keyed at once by two workers: whichever key reaches the
    # parent first is the one analysed (workers.py: "a copy in flight"), the other is seen
    # before. Which one is timing, not a promise; that exactly one is, is.
    statuses = sorted((recs[os.path.basename(p)]["status"], str(p)) for p in (a, copy))
    assert [s for s, _ in statuses] == ["ok", "seen_before"], statuses
    analysed = statuses[0][1]
    con = sqlite3.connect(db)
    stored = dict(con.execute("SELECT path, sha256 FROM cores").fetchall())
    assert stored == {analysed: _reference_sparse_sha256(a), b: _reference_sparse_sha256(b)}
    # Only the two analysed cores have threads and frames; nothing of the copy's analysis.
    assert con.execute("SELECT COUNT(DISTINCT core_id) FROM threads").fetchone()[0] == 2
    assert con.execute("SELECT COUNT(*) FROM frames WHERE core_id NOT IN "
                       "(SELECT id FROM cores)").fetchone()[0] == 0
    threads = con.execute("SELECT COUNT(*) FROM threads").fetchone()[0]
    frames = con.execute("SELECT COUNT(*) FROM frames").fetchone()[0]
    # Another copy, skipped as seen before while its speculative analysis hangs: the worker is
    # killed at the deadline without a failure, and the next core is still done.
    copy2 = tmp_path / "hang-copy-of-b.core"
    shutil.copy(b, copy2)
    proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / "2.jsonl", "-j", jobs,
                  "--timeout", "3", copy2, a,
                  extra_env={"EHBT_TRIAGE_TEST_FAULT": "hang:hang-copy"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 analysed, 2 seen before, 0 failed" in proc.stdout
    recs = by_core(read_jsonl(tmp_path / "2.jsonl"))
    assert recs["hang-copy-of-b.core"]["status"] == "seen_before"
    assert con.execute("SELECT COUNT(*) FROM cores").fetchone()[0] == 2
    assert con.execute("SELECT COUNT(*) FROM threads").fetchone()[0] == threads
    assert con.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == frames
    con.close()


def test_worker_keys_a_core_without_the_threading_module(tool_env, cores, tmp_path):
    # -j1 on a machine of two CPUs or more keys a core on a second thread while it analyses
    # it: the engine's thread (ehbt.ContentKeyJob), not Python's, whose module cost a fresh
    # worker about 2 ms to import before its first core. No process of the run imports it.
    proc = triage(tool_env, "--db", tmp_path / "db", "-j", "1", cores["a"][0][0],
                  extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 analysed" in proc.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")]
    assert "ehbt_triage.workers" in imported  # the import times are there to read
    assert "threading" not in imported, proc.stderr


_REAP_LATER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from ehbt_triage import signature, workers
options = {"sysroots": [], "debug_dirs": [], "debuginfod": False, "key_version": 2,
           "send_frames": False}
out = {}
for later in (True, False):
    pool = workers.WorkerPool(1, options, signature.Signer())
    errors = []
    pool.run([sys.argv[2]], lambda *a: True, lambda task, r: errors.append(r["error"]),
             reap_later=later)
    exiting = [proc for proc, _ in pool._exiting]
    before = [proc.exitcode for proc in exiting]
    pool.reap()
    reaped = []
    for proc in exiting:
        try:
            os.waitpid(proc.pid, os.WNOHANG)
            reaped.append(False)
        except ChildProcessError:
            reaped.append(True)
    out[str(later)] = {"errors": errors, "before": before, "after": [p.exitcode for p in exiting],
                       "reaped": reaped, "left": len(pool._exiting)}
print(json.dumps(out))
"""


def test_batch_leaves_its_workers_exiting_until_reaped(tool_env, cores):
    """Feed.run(reap_later=True), as a one-shot run calls it: the core is analysed, the idle
    worker is told to stop and left to exit while the run writes its reports (not waited for),
    and reap() then waits for it: exit code 0, nothing left to reap, its pid no longer the
    parent's child. Without reap_later, run() waits itself and leaves nothing."""
    proc = subprocess.run(["/usr/bin/python3", "-c", _REAP_LATER, str(TRIAGE.parent),
                           cores["a"][0][0]], env=tool_env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["True"] == {"errors": [None], "before": [None], "after": [0], "reaped": [True],
                           "left": 0}, got
    assert got["False"] == {"errors": [None], "before": [], "after": [], "reaped": [],
                            "left": 0}, got


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_store_of_version_1_keys_keeps_them(tool_env, cores, tmp_path, jobs):
    """A store made before content keys had versions (schema 3, no 'content_key' in meta)
    holds version-1 keys: it is migrated to schema 4 recording version 1, and a copy of a
    stored core under another name is still known (its version-1 key computed), never counted
    twice. An empty old store takes content key version 2. (-j1 keys while analysing, -j2 keys first.)"""
    a, b = cores["a"][0][0], cores["b"][0][0]
    db = tmp_path / "old.db"
    proc = triage(tool_env, "--db", db, "-j", jobs, a)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    con = sqlite3.connect(db)
    assert dict(con.execute("SELECT key, value FROM meta")) == {
        "schema": "6", "content_key": "2", "signature_version": "3"}
    assert con.execute("SELECT sha256 FROM cores").fetchall() == [(_reference_sparse_sha256(a),)]
    # What the previous release left: schema 3, no content_key, version-1 keys.
    con.execute("UPDATE cores SET sha256 = ?", (_reference_sparse_sha256(a, 1),))
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    con.execute("DELETE FROM meta WHERE key IN ('content_key', 'signature_version')")
    con.commit()
    copy = tmp_path / "renamed-a.core"
    shutil.copy(a, copy)
    proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / "o.jsonl", "-j", jobs, copy, b)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 analysed, 1 seen before, 0 failed" in proc.stdout
    recs = by_core(read_jsonl(tmp_path / "o.jsonl"))
    assert recs["renamed-a.core"]["status"] == "seen_before"
    assert recs["renamed-a.core"]["sha256"] == _reference_sparse_sha256(a, 1)
    # ... and its buckets by signature version 1 (physical frames only, #28), kept as well.
    assert dict(con.execute("SELECT key, value FROM meta")) == {
        "schema": "6", "content_key": "1", "signature_version": "1"}
    assert dict(con.execute("SELECT path, sha256 FROM cores")) == {
        a: _reference_sparse_sha256(a, 1), b: _reference_sparse_sha256(b, 1)}
    con.close()
    # An old store without cores: nothing to stay compatible with, the current version (3).
    empty = tmp_path / "empty-old.db"
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema', '3')")
    con.execute(CORES_V3)
    con.commit()
    proc = triage(tool_env, "--db", empty, "-j", jobs, b)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert dict(con.execute("SELECT key, value FROM meta")) == {
        "schema": "6", "content_key": "2", "signature_version": "3"}
    assert con.execute("SELECT sha256 FROM cores").fetchall() == [(_reference_sparse_sha256(b),)]
    con.close()


CORES_V3 = """CREATE TABLE cores (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL, size INTEGER, executable TEXT, arch TEXT, signal TEXT,
  signal_number INTEGER, signal_code INTEGER, fault_addr TEXT, core_time REAL,
  status TEXT NOT NULL, error TEXT, stop_reason TEXT, signature TEXT, bucket_id INTEGER,
  analysed_at REAL NOT NULL, process_name TEXT, uid INTEGER, boot_id TEXT, pid INTEGER,
  compression TEXT, unreliable INTEGER, missing_modules TEXT, warnings TEXT, file_id TEXT)"""


def test_store_of_a_newer_schema_is_refused(tool_env, cores, tmp_path):
    """A store whose schema is newer than this tool's (or whose keys are of a version it does
    not know) is a usage error, and is left as it was: writing our schema version over it
    would hide from the newer tool that an older one changed it."""
    db = tmp_path / "new.db"
    proc = triage(tool_env, "--db", db, cores["a"][0][0])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema'")
    con.commit()
    proc = triage(tool_env, "--db", db, cores["b"][0][0])
    assert proc.returncode == 2
    assert "made by a newer ehbt-triage (schema version 7; this one knows 6)" in proc.stderr
    assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("7",)
    assert con.execute("SELECT COUNT(*) FROM cores").fetchone() == (1,)
    con.execute("UPDATE meta SET value = '6' WHERE key = 'schema'")
    con.execute("UPDATE meta SET value = '9' WHERE key = 'content_key'")
    con.commit()
    proc = triage(tool_env, "--db", db, cores["b"][0][0])
    assert proc.returncode == 2
    assert "content key version '9', which this ehbt-triage does not know" in proc.stderr
    assert con.execute("SELECT COUNT(*) FROM cores").fetchone() == (1,)
    con.close()


def _identity(path):
    st = os.stat(path)
    return "%d:%d:%d:%d:%d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_rerun_does_not_hash_unchanged_files(tool_env, cores, tmp_path):
    """A re-run finds a stored core's file unchanged (same path, device, inode, size, mtime and
    ctime) and counts it seen before without a worker hashing it ("keysegv" would crash the
    worker given it); a file rewritten with the same bytes is hashed again, and its new
    identity recorded once it has been quiet for a second."""
    d = tmp_path / "in"
    d.mkdir()
    a, b = d / "a.core", d / "b.core"
    shutil.copy(cores["a"][0][0], a)
    shutil.copy(cores["b"][0][0], b)
    time.sleep(1.1)  # quiet: a file changed in the last second gets no identity
    db = tmp_path / "db"
    assert triage(tool_env, "--db", db, d).returncode == 0
    con = sqlite3.connect(db)
    assert dict(con.execute("SELECT path, file_id FROM cores").fetchall()) == {
        str(a): _identity(a), str(b): _identity(b)}
    crash_a = {"EHBT_TRIAGE_TEST_FAULT": "keysegv:/a.core"}
    proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / "2.jsonl", d, extra_env=crash_a)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 analysed, 2 seen before, 0 failed" in proc.stdout
    assert {r["status"] for r in read_jsonl(tmp_path / "2.jsonl")} == {"seen_before"}
    # Same bytes, written again: a new ctime, so the worker is given the file (and crashes).
    a.write_bytes(a.read_bytes())
    proc = triage(tool_env, "--db", db, d, extra_env=crash_a)
    assert proc.returncode == 1 and "worker died: SIGSEGV" in proc.stdout, proc.stdout
    assert con.execute("SELECT file_id FROM cores WHERE path = ?", (str(a),)).fetchone()[0] != (
        _identity(a))
    time.sleep(1.1)
    proc = triage(tool_env, "--db", db, d)  # hashed: seen before, the identity recorded
    assert proc.returncode == 0 and "0 analysed, 2 seen before" in proc.stdout, proc.stdout
    assert con.execute("SELECT file_id FROM cores WHERE path = ?", (str(a),)).fetchone()[0] == (
        _identity(a))
    proc = triage(tool_env, "--db", db, d, extra_env=crash_a)
    assert proc.returncode == 0 and "0 analysed, 2 seen before" in proc.stdout, proc.stdout
    con.close()


def _echo_then(conn, how):
    conn.send(("ready", os.getpid(), b"x" * 300000))  # larger than a pipe's buffer
    if how == "raise":
        raise RuntimeError("on purpose")
    if how == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "wait":
        conn.recv()  # EOFError when the parent closes its end: the child then exits 1


@pytest.mark.parametrize("how,code", [("return", 0), ("raise", 1), ("segv", -signal.SIGSEGV),
                                      ("wait", 1), ("kill", -signal.SIGKILL)])
def test_forked_child_exit_codes_and_messages(how, code):
    """forked.Child (the workers' processes): messages both ways, the exit code the parent's
    "worker died" line is built from, and a sentinel that fires however the child ends."""
    child = forked.Child(_echo_then, ("wait" if how == "kill" else how,))
    kind, pid, blob = child.conn.recv()
    assert (kind, pid, len(blob)) == ("ready", child.pid, 300000)
    if how == "kill":
        assert child.is_alive()
        child.kill()
    elif how == "wait":
        assert child.is_alive()
        os.close(child.conn._w)  # the parent's end of the child's input: EOF for the child
        child.conn._w = None
    assert forked.wait([child.sentinel], timeout=30) == [child.sentinel]
    assert child.join(30) == code
    assert not child.is_alive()
    child.close()


def test_channel_carries_plain_values_and_other_objects():
    """forked.Channel marshals plain values and pickles anything else (an exception, an
    IntEnum): what comes out equals what went in, type included."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    a, b = forked.Channel(down_r, up_w), forked.Channel(up_r, down_w)
    values = [("core", 3, "/x/core.1"), None, {"doc": {"threads": [{"tid": 1}]}, "rows": (
        [(1, 0, "outermost", None)], [(0, 1, "0x10", None, 2.5, True, b"\x00")])},
        ValueError("not marshal's"), signal.SIGSEGV, {"set": {1, 2}}]
    for v in values:
        b.send(v)
        got = a.recv()
        assert type(got) is type(v) and repr(got) == repr(v)
    a.close()
    b.close()


def test_bad_files_fail_and_the_rest_succeed(tool_env, cores, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    good = [cores["a"][0][0], cores["b"][0][0]]
    for g in good:
        shutil.copy(g, d)
    with open(good[0], "rb") as f:
        head = f.read(100)  # the ELF header of a core, nothing after it
    (d / "truncated.core").write_bytes(head)
    (d / "notes.txt").write_text("not a core\n")  # inside a directory: skipped with a note
    garbage = tmp_path / "garbage.core"
    garbage.write_bytes(bytes(random.Random(7).getrandbits(8) for _ in range(4096)))
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", d, garbage)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "skipped %s" % (d / "notes.txt") in proc.stderr
    failed = proc.stdout.split("Failed (2):")[1]
    assert "truncated.core: " in failed and "garbage.core: not an ELF core" in failed
    recs = by_core(read_jsonl(tmp_path / "o.jsonl"))
    assert recs["truncated.core"]["status"] == "failed" and recs["truncated.core"]["error"]
    assert recs["garbage.core"]["status"] == "failed"
    assert recs["a-0.core"]["status"] == "ok" and recs["b-0.core"]["status"] == "ok"
    assert "notes.txt" not in recs


@pytest.mark.parametrize("fault,expect", [("segv", "worker died: SIGSEGV"),
                                          ("hang", "timed out after 3s"),
                                          ("oom", "out of memory")])
def test_worker_crash_hang_and_oom_are_failures(tool_env, cores, tmp_path, fault, expect):
    paths = [cores["a"][0][0], cores["b"][0][0], cores["abort"][0][0]]
    # Only the hang needs a short deadline; the others must not run into it on a busy machine.
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl",
                  "--timeout", "3" if fault == "hang" else "60", "-j", "2", *paths,
                  extra_env={"EHBT_TRIAGE_TEST_FAULT": fault + ":/b-0.core",
                             "EHBT_TRIAGE_MEMORY_LIMIT": str(768 << 20)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    recs = by_core(read_jsonl(tmp_path / "o.jsonl"))
    assert recs["b-0.core"]["status"] == "failed"
    assert expect in recs["b-0.core"]["error"], recs["b-0.core"]["error"]
    assert recs["a-0.core"]["status"] == "ok" and recs["abort-0.core"]["status"] == "ok"
    con = sqlite3.connect(tmp_path / "db")
    status, sha256 = con.execute(
        "SELECT status, sha256 FROM cores WHERE path LIKE '%b-0.core'").fetchone()
    con.close()
    # Stored under its content key (the reference implementation's): for the crash and the
    # hang, the key the worker left on its board before it stopped (workers.KeyBoard).
    assert status == "failed"
    assert sha256 == content_hash.python_sparse_sha256(cores["b"][0][0], 2)
    # A later run without the fault analyses the failed core again and buckets it.
    proc = triage(tool_env, "--db", tmp_path / "db", *paths)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 analysed, 2 seen before, 0 failed" in proc.stdout


@pytest.mark.parametrize("columns", ["50", "100", None])
def test_help_is_argparse_own_at_any_width(monkeypatch, columns):
    """cli._Formatter finds the terminal width without shutil: --help (and so the man page
    made from it) is what argparse's own formatter writes, at any width."""
    import argparse

    from ehbt_triage import cli

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for make in (cli.parser, cli.report_parser):
        ours = make()
        plain = make()
        plain.formatter_class = argparse.HelpFormatter
        assert ours.format_help() == plain.format_help()
        assert ours.format_usage() == plain.format_usage()


def test_usage_errors(tool_env, tmp_path):
    assert triage(tool_env, "--db", tmp_path / "db", tmp_path / "nope").returncode == 2
    assert triage(tool_env, "--skip", "(", tmp_path).returncode == 2
    assert triage(tool_env, "--top", "0", tmp_path).returncode == 2
    # No PATH: the systemd-coredump spool /var/lib/systemd/coredump (exit 2 when it is not
    # there, else it is triaged).
    proc = triage(tool_env, "--db", tmp_path / "db2", cwd=tmp_path)
    if os.path.isdir("/var/lib/systemd/coredump"):
        assert proc.returncode in (0, 1), proc.stderr
    else:
        assert proc.returncode == 2 and "/var/lib/systemd/coredump" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Killed runs


def _committed(db):
    try:
        con = sqlite3.connect(db, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM cores").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _check_consistent(db):
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT COUNT(*) FROM threads WHERE core_id NOT IN "
                       "(SELECT id FROM cores)").fetchone()[0] == 0
    assert con.execute("SELECT COUNT(*) FROM frames WHERE thread_id NOT IN "
                       "(SELECT id FROM threads)").fetchone()[0] == 0
    # Every stored core is whole: its one thread and its frames are there.
    for (cid,) in con.execute("SELECT id FROM cores WHERE status='ok'").fetchall():
        count = con.execute("SELECT COUNT(*) FROM threads WHERE core_id=?", (cid,)).fetchone()[0]
        assert count == 1
        assert con.execute("SELECT COUNT(*) FROM frames WHERE core_id=?", (cid,)).fetchone()[0] >= 3
    for bid, count in con.execute("SELECT id, count FROM buckets").fetchall():
        assert count == con.execute("SELECT COUNT(*) FROM cores WHERE bucket_id=? AND "
                                    "status='ok'", (bid,)).fetchone()[0]
    n = con.execute("SELECT COUNT(*) FROM cores").fetchone()[0]
    assert n == con.execute("SELECT COUNT(DISTINCT sha256) FROM cores").fetchone()[0]
    con.close()
    return n


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_without_duplicates(tool_env, core_dir, tmp_path, how):
    db = tmp_path / "db"
    cmd = ["/usr/bin/python3", str(TRIAGE), "--db", str(db), "-j", "1", core_dir]
    env = dict(tool_env, EHBT_TRIAGE_TEST_DELAY="0.7")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while _committed(db) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(how)
    out, err = proc.communicate(timeout=60)
    if how == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    done = _check_consistent(db)
    assert 3 <= done < 10
    proc = triage(tool_env, "--db", db, "-j", "2", core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%d analysed, %d seen before, 0 failed" % (10 - done, done) in proc.stdout
    assert _check_consistent(db) == 10


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_stopped_run_keeps_exactly_its_committed_batches(tool_env, core_dir, tmp_path, how):
    """Cores are committed in batches (here one batch for the whole run): Ctrl-C commits every
    core the run reported (the JSONL has a line per reported core), SIGKILL loses the open
    batch and nothing else, and either way the next run does exactly the rest."""
    db, out = tmp_path / "db", tmp_path / "o.jsonl"
    cmd = ["/usr/bin/python3", str(TRIAGE), "--db", str(db), "--jsonl", str(out), "-j", "1",
           core_dir]
    env = dict(tool_env, EHBT_TRIAGE_TEST_DELAY="0.3", EHBT_TRIAGE_TEST_BATCH_SECONDS="3600")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while (not out.exists() or len(read_jsonl(out)) < 3) and time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.05)
    assert _committed(db) == 0  # the batch is still open: nothing is visible to others yet
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    reported = [r for r in read_jsonl(out) if r["status"] == "ok"]
    assert len(reported) >= 3
    done = _check_consistent(db)
    if how == signal.SIGINT:
        assert proc.returncode == 130, err
        assert done == len(reported)
    else:
        assert proc.returncode == -signal.SIGKILL
        assert done == 0
    proc = triage(tool_env, "--db", db, "-j", "2", core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%d analysed, %d seen before, 0 failed" % (10 - done, done) in proc.stdout
    assert _check_consistent(db) == 10


def test_store_batch_keeps_whole_cores_and_commits_when_full(tmp_path, monkeypatch):
    """Store-level: a batch commits when BATCH_CORES cores are in it or flush() is called; a
    core that fails half-way (a frame naming a thread that does not exist) and a core that is
    already stored leave the other cores of the batch as they were."""
    from ehbt_triage import store as storemod

    monkeypatch.setattr(storemod, "BATCH_SECONDS", 3600.0)
    monkeypatch.setattr(storemod, "BATCH_CORES", 3)
    path = str(tmp_path / "batch.db")
    st = storemod.Store(path)

    def doc(n):
        return {"executable": "/opt/app", "arch": "x86_64", "signal": None, "modules": [],
                "threads": [{"tid": n, "crashing": True, "stop_reason": "outermost",
                             "frames": [{"index": i, "pc": "0x1%d" % i, "symbol": "f%d" % n}
                                        for i in range(3)]}]}

    def info(n):
        return {"sha256": "%064x" % n, "path": "c%d" % n, "size": 1, "core_time": float(n)}

    def visible():  # what another connection (a report, another run) sees
        con = sqlite3.connect(path)
        try:
            return sorted(r[0] for r in con.execute("SELECT path FROM cores"))
        finally:
            con.close()

    st.record_ok(info(0), doc(0), "f0")
    st.record_ok(info(0), doc(0), "f0")  # stored already: nothing added, nothing undone
    broken = storemod.document_rows(doc(1), lambda f: None)
    broken[1][0][0] = 5  # the first frame in thread 5 of a 1-thread core
    with pytest.raises(sqlite3.IntegrityError):
        st.record_ok(info(1), doc(1), "f1", rows=broken)
    st.record_failed(info(2), "unreadable")
    assert visible() == []
    assert st.core_by_hash("%064x" % 0)["path"] == "c0"  # this run sees its own batch
    st.record_ok(info(3), doc(3), "f3")  # the third core of the batch: committed
    assert visible() == ["c0", "c2", "c3"]
    st.record_ok(info(4), doc(4), "f4")
    assert visible() == ["c0", "c2", "c3"]
    st.close()  # flushes
    assert visible() == ["c0", "c2", "c3", "c4"]
    assert _check_consistent(path) == 4


def test_bucket_counters_follow_each_ok_core(tmp_path):
    """Store-level: a bucket's count, first_seen and last_seen are kept per stored core (count
    + 1, the range widened; store._count_in_bucket) and equal the aggregates over its ok cores:
    core times 5, none, 3, 9 and a failed core at 1 give 4 cores from 3 to 9; forgetting the
    core at 9 (a recount) leaves 3 from 3 to 5, and a new core at 7 makes 4 from 3 to 7. A
    bucket made by a core that is undone is made again by the next core of its signature."""
    from ehbt_triage import store as storemod

    st = storemod.Store(str(tmp_path / "count.db"))
    doc = {"executable": "/opt/app", "arch": "x86_64", "signal": None, "modules": [],
           "threads": [{"tid": 1, "crashing": True, "stop_reason": "outermost",
                        "frames": [{"index": 0, "pc": "0x10", "symbol": "f"}]}]}

    def info(n, t):
        return {"sha256": "%064x" % n, "path": "c%d" % n, "size": 1, "core_time": t}

    def counters(bucket):
        return tuple(st.db.execute("SELECT count, first_seen, last_seen, example_core_id "
                                   "FROM buckets WHERE id = ?", (bucket,)).fetchone())

    first, bucket = st.record_ok(info(0, 5.0), doc, "f")
    assert counters(bucket) == (1, 5.0, 5.0, first)
    st.record_ok(info(1, None), doc, "f")
    assert counters(bucket) == (2, 5.0, 5.0, first)
    st.record_ok(info(2, 3.0), doc, "f")
    late, _ = st.record_ok(info(3, 9.0), doc, "f")
    st.record_failed(info(4, 1.0), "unreadable")
    st.record_ok(info(2, 3.0), doc, "f")  # stored already: not counted twice
    assert counters(bucket) == (4, 3.0, 9.0, first)
    st.forget_core(late)
    assert counters(bucket) == (3, 3.0, 5.0, first)
    st.record_ok(info(5, 7.0), doc, "f")
    assert counters(bucket) == (4, 3.0, 7.0, first)
    # A core that made a new bucket and failed half-way takes its bucket row with it: the
    # next core of that signature makes it again (the store remembers bucket ids).
    broken = storemod.document_rows(doc, lambda f: None)
    broken[1][0][0] = 5  # a frame in thread 5 of a 1-thread core
    with pytest.raises(sqlite3.IntegrityError):
        st.record_ok(info(6, 1.0), doc, "g", rows=broken)
    assert st.db.execute("SELECT COUNT(*) FROM buckets WHERE signature = 'g'").fetchone()[0] == 0
    core, other = st.record_ok(info(7, 2.0), doc, "g")
    assert counters(other) == (1, 2.0, 2.0, core)
    # Each ok core's frame is in its own thread (the thread ids the store hands out).
    assert st.db.execute("SELECT COUNT(*) FROM frames f JOIN threads t ON t.id = f.thread_id "
                         "AND t.core_id = f.core_id").fetchone()[0] == 5
    st.close()


def test_key_board_gives_the_parent_what_a_killed_worker_left(tmp_path):
    """workers.KeyBoard: the key a worker posts for its core is read by the parent after the
    worker was SIGKILLed; nothing is read for another task, nor from a board never posted to;
    a key too large for the page is refused (the worker then sends it)."""
    from ehbt_triage.workers import KeyBoard

    board = KeyBoard()
    assert board.read(0) is None
    key = ("ab" * 32, 315392, 1717652311.5, "65024:1:315392:1:2")
    pid = os.fork()
    if pid == 0:  # the worker: posts, then is killed mid-analysis
        try:
            board.post(41, ("old",) * 3)
            board.post(42, key)
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert board.read(42) == key
    assert board.read(41) is None and board.read(43) is None
    assert board.post(7, "x" * KeyBoard.SIZE) is False
    assert board.read(42) == key  # a refused post leaves the board as it was
    board.close()


# ---------------------------------------------------------------------------------------------
# The HTML report in a real browser


def test_html_report_says_the_signal_as_every_ehbt_report(first_run):
    """The buckets' signal is the engine's description (ehbt.describe_signal, what the CLI's
    "Signal:" line and the thread headers say), not a layout of triage's own. The "a" crash
    writes through a null pointer: SIGSEGV, si_code SEGV_MAPERR, fault address 0."""
    _, _, _, work = first_run
    text = (work / "report.html").read_text()
    assert '<td class="signal">SIGSEGV, SEGV_MAPERR at 0x0' in text, text[:3000]
    assert "(code " not in text


def test_html_report_in_headless_chromium(first_run):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (scripts/install-deps.sh installs it)")
    _, recs, _, work = first_run
    page = work / "report.html"
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "<link" not in text and "src=" not in text
    profile = tempfile.mkdtemp()
    try:
        proc = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
             "--dump-dom", page.as_uri()],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        shot = work / "report.png"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--user-data-dir=" + profile, "--window-size=1200,900",
             "--screenshot=" + str(shot), page.as_uri()],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    dom = proc.stdout
    assert "Uncaught" not in proc.stderr, proc.stderr
    assert '<span id="js-ok">interactive</span>' in dom  # the script ran to its end
    rows = re.findall(r'<tr class="bucket" data-bucket="(\d+)"', dom)
    assert sorted(map(int, rows)) == sorted({r["bucket"] for r in recs.values()})
    assert "fx_a3 | fx_a2 | fx_a1" in dom
    assert dom.count('<rect class="bar"') >= 1 and "<svg" in dom
    assert "crashy-stripped" in dom  # the stripped bucket's example stack shows its module
    assert shot.exists() and shot.stat().st_size > 1000


# ---------------------------------------------------------------------------------------------
# The in-process engine and the CLI fallback agree


def test_python_package_and_cli_fallback_agree(tool_env, cores, build_dir, tmp_path):
    if not (build_dir / "engine" / "python" / "ehbt").is_dir() or "EHBT_BIN" not in tool_env:
        pytest.skip("needs both the Python package (EHBT_PYTHON=ON) and the CLI")
    probe = subprocess.run(["/usr/bin/python3", "-c", "import ehbt._ehbt"], env=tool_env)
    if probe.returncode != 0:
        pytest.skip("the ehbt Python package is not importable in this build")
    paths = [c for name in ("a", "stripped", "abort") for c, _ in cores[name][:1]]
    sigs = {}
    for mode in ("python", "cli"):
        proc = triage(tool_env, "--db", tmp_path / (mode + ".db"), "--jsonl",
                      tmp_path / (mode + ".jsonl"), *paths,
                      extra_env={"EHBT_TRIAGE_ENGINE": mode})
        assert proc.returncode == 0, proc.stderr
        assert ("Engine: ehbt Python package" in proc.stdout) == (mode == "python"), proc.stdout
        sigs[mode] = {k: v["signature"] for k, v in by_core(read_jsonl(
            tmp_path / (mode + ".jsonl"))).items()}
    assert sigs["python"] == sigs["cli"]


# ---------------------------------------------------------------------------------------------
# The signature rule on hand-made documents (no engine involved)


def _doc(frames, signal=None):
    return {"signal": signal, "modules": [{"path": "/opt/app", "build_id": "abcd"}],
            "threads": [{"tid": 1, "crashing": False, "frames": []},
                        {"tid": 2, "crashing": True, "frames": frames}]}


def _f(symbol=None, module="/opt/app", off="0x10", pc="0x7f0000000010"):
    return {"symbol": symbol, "module": module, "module_offset": off, "pc": pc}


def test_signature_rule_on_documents():
    s = sigmod.Signer(top=3)
    segv = {"number": 11, "name": "SIGSEGV", "code": 1, "address": "0x8"}
    frames = [_f("raise"), _f("abort"), _f("check"), _f("raise"), _f(None, off="0x1a2b"),
              _f("main")]
    # Only the leading run is skipped; a later 'raise' stays; no symbol -> module+offset.
    assert s.sign(_doc(frames, segv)) == "SIGSEGV@0x0 check | raise | app+0x1a2b"
    assert s.sign(_doc(frames, dict(segv, address="0x7ffd0000"))).startswith("SIGSEGV check")
    assert s.sign(_doc(frames, {"number": 6, "name": "SIGABRT", "code": -6,
                                "address": None})) == "check | raise | app+0x1a2b"
    # All frames skip-listed: nothing is skipped.
    assert s.sign(_doc([_f("abort"), _f("raise")])) == "abort | raise"
    assert s.sign(_doc([])) == sigmod.NO_FRAMES
    # C++ names match without their parameter lists; versions are ignored.
    assert s.sign(_doc([_f("std::terminate()"), _f("__cxa_throw"), _f("ns::f(int) const"),
                        _f("raise@@GLIBC_2.2.5")])) == "ns::f(int) const | raise"
    assert sigmod.frame_key(_f(None, off="0x1a2b"), {"/opt/app": "abcd"}) == "abcd+0x1a2b"
    assert sigmod.frame_label(_f(None, module=None, pc="0x0")) == "0x0"
    assert sigmod.frame_label(_f(None, module=None, pc="0x7f12345678")) == sigmod.UNKNOWN
    assert sigmod.bare_name("(anonymous namespace)::g(char*)") == "(anonymous namespace)::g"
    # A crash in a PLT stub is labelled as the stub, not as the function it leads to.
    assert s.sign(_doc([_f("getppid@plt"), _f("caller")])) == "getppid@plt | caller"


def test_signal_trampoline_inside_the_reporting_run_is_skipped():
    """A Go crash under qemu: Go's handler re-raises SIGABRT; between the handler
    (runtime.sigtramp) and the interrupted runtime.raise lies qemu's restorer page, in no
    module. The signature reaches the user's code, not "<unknown> | runtime.raise"."""
    s = sigmod.Signer(top=3)
    go = [_f("runtime.raise.abi0"), _f("runtime.dieFromSignal"), _f("runtime.sigtramp.abi0"),
          dict(_f(None, module=None, pc="0x5500801000"), source="go_pclntab"),
          dict(_f("runtime.raise.abi0"), source="signal"), _f("runtime.dieFromSignal"),
          _f("runtime.crash"), _f("runtime.fatalpanic"), _f("runtime.gopanic"),
          _f("runtime.panicmem"), _f("runtime.sigpanic"), _f("main.fxInLeaf"), _f("main.main")]
    assert s.sign(_doc(go)) == "main.fxInLeaf | main.main"
    # A frame in no module that no signal step follows still ends the run.
    plain = [_f("abort"), _f(None, module=None, pc="0x5500801000"), _f("raise"), _f("main")]
    assert s.sign(_doc(plain)) == "<unknown> | raise | main"


def _reference_sparse_sha256(path, version=2):
    """content_hash's documented definition, the slow obvious way (whole file in memory):
    blocks of 4 KiB in version 2, 64 KiB in version 1."""
    import hashlib
    import struct
    size = 1 << 16 if version == 1 else 1 << 12
    data = pathlib.Path(path).read_bytes()
    h = hashlib.sha256(b"ehbt-sparse-sha256/%d %d\n" % (version, len(data)))
    for off in range(0, len(data), size):
        block = data[off:off + size]
        if any(block):
            h.update(struct.pack("<Q", off) + block)
    return h.hexdigest()


class _KeyImpl:
    def __init__(self, fn, version):
        self.fn, self.version = fn, version

    def __call__(self, path):
        return self.fn(path, self.version)


def _key_by_job(path, version):
    """The key as a worker gets it: computed on the engine's thread (ehbt.ContentKeyJob),
    handed to a callback, OSError included."""
    got = []
    job = content_hash.start_key_job(str(path), version, lambda d, e: got.append((d, e)))
    assert job is not None
    job.wait()
    assert len(got) == 1  # called once, and before wait() returned
    digest, error = got[0]
    if error is not None:
        raise error
    return digest


@pytest.fixture(params=[("engine", 1), ("engine", 2), ("job", 1), ("job", 2), ("python", 1),
                        ("python", 2)], ids=lambda p: "%s-v%d" % p)
def sparse_sha256(request, tool_env):
    """Every implementation of the content key, in both versions: the engine's
    (ehbt.content_key, what a run uses), the same on the engine's own thread (what a worker
    keys a core with while it analyses it) and the Python fallback (runs without the
    package). Called with a path; .version says which version it computes."""
    impl, version = request.param
    if impl == "python":
        return _KeyImpl(content_hash.python_sparse_sha256, version)
    sys.path.insert(0, tool_env["PYTHONPATH"].split(os.pathsep)[0])
    import ehbt
    content_hash._ENGINE_KEY.clear()
    if impl == "job":
        return _KeyImpl(_key_by_job, version)
    return _KeyImpl(lambda path, v: ehbt.content_key(str(path), version=v), version)


def test_content_hash_ignores_how_the_file_is_stored(tmp_path, sparse_sha256):
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:  # data, a 5 MiB hole, data across a block edge, a tail hole
        f.write(b"\x7fELF" + bytes(range(256)) * 40)
        f.seek(5 << 20)
        f.write(b"x" * 70000)
        f.seek((5 << 20) + (1 << 16) - 3)
        f.write(b"edge")
        f.truncate((9 << 20) + 123)
    full = tmp_path / "full"
    full.write_bytes(sparse.read_bytes())  # same content, no holes
    want = _reference_sparse_sha256(sparse, sparse_sha256.version)
    assert sparse_sha256(sparse) == want
    assert sparse_sha256(full) == want
    changed = bytearray(full.read_bytes())
    changed[(7 << 20)] = 1  # one byte inside what was a hole
    (tmp_path / "changed").write_bytes(changed)
    assert sparse_sha256(tmp_path / "changed") != want
    (tmp_path / "longer").write_bytes(bytes(full.read_bytes()) + b"\0")
    assert sparse_sha256(tmp_path / "longer") != want


def test_engine_content_key_errors_are_oserrors(tmp_path, tool_env):
    # The worker reports an unreadable core from OSError.strerror, as it did for Python's own
    # hash; a FIFO put in a core's place must fail at once, not block the worker.
    sys.path.insert(0, tool_env["PYTHONPATH"].split(os.pathsep)[0])
    import ehbt
    with pytest.raises(FileNotFoundError):
        ehbt.content_key(str(tmp_path / "missing"))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError) as e:
        ehbt.content_key(str(tmp_path / "fifo"))
    assert e.value.strerror
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(ValueError):
        ehbt.content_key(str(tmp_path / "f"), version=3)
    # The same errors reach a job's callback, as the exception content_key raises.
    for path, error in ((tmp_path / "missing", FileNotFoundError), (tmp_path / "fifo", OSError)):
        got = []
        ehbt.ContentKeyJob(str(path), lambda d, e: got.append((d, e))).wait()
        assert got[0][0] is None and isinstance(got[0][1], error) and got[0][1].strerror
        assert got[0][1].filename == str(path)
    with pytest.raises(ValueError):
        ehbt.ContentKeyJob(str(tmp_path / "f"), lambda d, e: None, version=3)
    with pytest.raises(TypeError):
        ehbt.ContentKeyJob(str(tmp_path / "f"), None)
    # ehbt-triage keys with the engine, not its slow Python fallback, whenever the package
    # is importable (content_hash checks that the package knows key versions).
    content_hash._ENGINE_KEY.clear()
    assert content_hash._engine_key() is ehbt.content_key
    with pytest.raises(ValueError):
        content_hash.sparse_sha256(str(tmp_path / "f"), 0)


def test_key_jobs_run_on_threads_of_their_own(tmp_path, tool_env):
    # Many jobs at once, each on its own thread with the GIL released while it hashes: every
    # callback comes once, with its own file's key; a callback that raises is reported as
    # unraisable and does not stop the others; a worker needs no threading module for them.
    sys.path.insert(0, tool_env["PYTHONPATH"].split(os.pathsep)[0])
    import ehbt
    paths = []
    for i in range(24):
        p = tmp_path / ("f%d" % i)
        p.write_bytes(bytes([i]) * (5000 + 4096 * i))
        paths.append(str(p))
    got = {}
    jobs = [ehbt.ContentKeyJob(p, lambda d, e, p=p: got.setdefault(p, []).append((d, e)))
            for p in paths]
    unraisable = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        raising = ehbt.ContentKeyJob(paths[0], lambda d, e: 1 / 0)
        raising.wait()
    finally:
        sys.unraisablehook = old_hook
    assert len(unraisable) == 1 and unraisable[0].exc_type is ZeroDivisionError
    for job in jobs:
        job.wait()
    del jobs  # waiting again (when each is let go) is harmless
    assert sorted(got) == sorted(paths)
    for p in paths:
        assert got[p] == [(ehbt.content_key(p), None)]
        assert got[p][0][0] == content_hash.python_sparse_sha256(p, 2)
    env = dict(os.environ, PYTHONPATH=tool_env["PYTHONPATH"])
    code = ("import sys, ehbt; ehbt.ContentKeyJob(sys.argv[1], lambda d, e: None).wait(); "
            "print('threading' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, paths[0]], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_content_hash_partial_last_block_and_chunk_edges(tmp_path, sparse_sha256):
    # Data on both sides of the 1 MiB read-chunk edge and in a short last block whose tail is
    # zero: each block is judged on its own bytes only.
    p = tmp_path / "edges"
    with open(p, "wb") as f:
        f.seek((1 << 20) - 5)
        f.write(b"across the chunk edge")
        f.seek((3 << 20) + (1 << 16))
        f.write(b"short last block")
        f.write(bytes(1000))
    assert sparse_sha256(p) == _reference_sparse_sha256(p, sparse_sha256.version)
    zero_tail = tmp_path / "zero-tail"
    zero_tail.write_bytes(b"head" + bytes((1 << 16) + 300))  # last block: 300 zero bytes
    assert sparse_sha256(zero_tail) == _reference_sparse_sha256(zero_tail, sparse_sha256.version)
    # A page of data alone in a 64 KiB block of zeros: one 4 KiB block in version 2, the
    # whole 64 KiB block in version 1.
    lone = tmp_path / "lone-page"
    with open(lone, "wb") as f:
        f.seek((2 << 20) + 3 * 4096)
        f.write(b"page" * 1024)
        f.truncate(4 << 20)
    assert sparse_sha256(lone) == _reference_sparse_sha256(lone, sparse_sha256.version)
    assert sparse_sha256(lone) != _reference_sparse_sha256(lone, 3 - sparse_sha256.version)


# ---------------------------------------------------------------------------------------------
# The fast paths: worker-built rows, the engine's report in-process, many-thread cores


def test_rows_built_by_the_worker_store_what_the_document_says(tmp_path):
    from ehbt_triage import store as storemod

    def frame(i, sym):
        return {"index": i, "pc": "0x%x" % (0x1000 + i), "cfa": "0x7ff0", "source": "eh_frame",
                "module": "/opt/app", "module_offset": "0x%x" % (0x100 + i), "symbol": sym,
                "symbol_offset": "0x4"}

    def doc(n):
        return {"signal": {"number": 6, "name": "SIGABRT", "code": -6, "address": None},
                "executable": "/opt/app", "arch": "x86_64",
                "modules": [{"path": "/opt/app", "build_id": "beef"}],
                "threads": [{"tid": 100 + n, "crashing": True, "stop_reason": "outermost",
                             "stop_detail": "", "frames": [frame(0, "abort"), frame(1, "f")]},
                            {"tid": 200 + n, "crashing": False, "stop_reason": "no_module",
                             "stop_detail": "pc 0x0", "frames": [frame(0, None)]},
                            {"tid": 300 + n, "crashing": False, "stop_reason": "outermost",
                             "stop_detail": "", "frames": []}]}

    def key(f):
        return "beef+" + f["module_offset"]

    dumps = []
    for with_rows in (False, True):
        st = storemod.Store(str(tmp_path / ("rows%d.db" % with_rows)))
        for n in range(2):  # two cores: the second one's thread ids must not collide
            d = doc(n)
            info = {"sha256": "%064x" % n, "path": "c%d" % n, "size": 1, "core_time": 1.0}
            rows = storemod.document_rows(d, key) if with_rows else None
            st.record_ok(info, d, "abort | f", key, rows=rows)
        db = st.db
        dumps.append((
            db.execute("SELECT c.path, t.tid, t.crashing, t.stop_reason, t.stop_detail FROM "
                       "threads t JOIN cores c ON c.id = t.core_id ORDER BY t.id").fetchall(),
            db.execute("SELECT c.path, t.tid, f.idx, f.pc, f.module, f.module_offset, "
                       "f.build_id_key, f.symbol, f.symbol_offset, f.source FROM frames f "
                       "JOIN threads t ON t.id = f.thread_id JOIN cores c ON c.id = f.core_id "
                       "WHERE t.core_id = f.core_id ORDER BY f.id").fetchall()))
        st.close()
    assert dumps[0] == dumps[1]
    threads, frames = dumps[1]
    assert [t[1] for t in threads] == [100, 200, 300, 101, 201, 301]
    # 2 + 1 + 0 frames per core, each under its own thread of its own core.
    assert [(f[0], f[1], f[2]) for f in frames] == [
        ("c0", 100, 0), ("c0", 100, 1), ("c0", 200, 0), ("c1", 101, 0), ("c1", 101, 1),
        ("c1", 201, 0)]
    assert frames[0][1:] == (100, 0, "0x1000", "/opt/app", "0x100", "beef+0x100", "abort", "0x4",
                             "eh_frame")
    # Every stored frame, field by field, is what its document says (the worker's rows share
    # one object per distinct string, and ask for each frame's key once per module+offset).
    assert frames == [("c%d" % n, t["tid"], f["index"], f["pc"], f["module"],
                       f["module_offset"], key(f), f["symbol"], f["symbol_offset"], f["source"])
                      for n in range(2) for t in doc(n)["threads"] for f in t["frames"]]
    asked = []
    storemod.document_rows(doc(0), lambda f: asked.append(f["module_offset"]))
    assert sorted(asked) == ["0x100", "0x101"]


def _recursion_doc(depth, tail=("main", "__libc_start_main", "_start")):
    """A stack overflow as the engine documents it: raise and abort on top, then `depth`
    frames of one recursive function returning to the same address (a frame 0 found from the
    context, the rest by CFI), then the tail; one module, one thread."""
    def frame(i, symbol, pc, offset, source="eh_frame"):
        return {"index": i, "pc": pc, "cfa": "0x%x" % (0x7ff000 + 16 * i), "source": source,
                "module": "/opt/app", "module_offset": offset, "symbol": symbol,
                "symbol_offset": "0x9e",
                "location": {"file": "/src/app.c", "line": 15, "column": 3}, "inlined": []}

    frames = [frame(0, "raise", "0x7f0000001000", "0x1000", "context"),
              frame(1, "abort", "0x7f0000002000", "0x2000")]
    frames += [frame(len(frames) + k, "recurse", "0x7f00000011ee", "0x11ee")
               for k in range(depth)]
    frames[2]["pc"], frames[2]["module_offset"] = "0x7f0000001182", "0x1182"  # the crash
    frames[2]["inlined"] = [{"function": "touch", "location": {"file": "/src/app.h",
                                                                "line": 3, "column": 1}}]
    frames += [frame(len(frames) + k, name, "0x7f000000%04x" % (0x3000 + k),
                     "0x%x" % (0x3000 + k)) for k, name in enumerate(tail)]
    return {"signal": {"number": 6, "name": "SIGABRT", "code": -6, "address": None},
            "executable": "/opt/app", "arch": "x86_64",
            "modules": [{"path": "/opt/app", "build_id": "beef"}],
            "threads": [{"tid": 7, "crashing": True, "stop_reason": "outermost",
                         "stop_detail": "", "frames": frames}]}


def test_deep_stack_signature_reads_only_its_top_frames():
    """The signature of a 1000-frame recursion: the inlined call, then the recursive
    function (rules 3 and 5, signature version 2), whatever lies far below; frames past
    the top ones are never labelled (a stack overflow costs the same as a short stack)."""
    s = sigmod.Signer(top=5)
    doc = _recursion_doc(1000)
    assert s.sign(doc) == "touch | recurse | recurse | recurse | recurse"
    assert sigmod.Signer(top=2).sign(doc) == "touch | recurse"
    # A start frame or main below the top frames does not shorten the signature; one within
    # them does (rule 4).
    assert s.sign(_recursion_doc(2, tail=("main", "_start"))) == \
        "touch | recurse | recurse | main"
    assert s.sign(_recursion_doc(3, tail=("start_thread", "clone3"))) == \
        "touch | recurse | recurse | recurse"
    assert s.sign(_recursion_doc(4, tail=("start_thread",))) == \
        "touch | recurse | recurse | recurse | recurse"
    labelled = []
    real = sigmod.frame_label
    try:
        sigmod.frame_label = lambda f, v: labelled.append(f["index"]) or real(f, v)
        assert s.sign(doc) == "touch | recurse | recurse | recurse | recurse"
    finally:
        sigmod.frame_label = real
    assert max(labelled) < 10  # raise, abort, then five frames (the inlined one included)


def _frames_one_each(con, where="1", args=()):
    """The frames rows selected by `where`, in id order, one tuple per frame they stand for:
    (core_id, tid, idx, pc, module, module_offset, build_id_key, symbol, symbol_offset,
    source, src_file, src_line, typeof(src_line), src_column, typeof(src_column), inlined);
    a row of `repeats` frames (NULL: one) gives that many, idx counting up from its own."""
    out = []
    for row in con.execute(
            "SELECT f.core_id, t.tid, f.idx, f.pc, f.module, f.module_offset, f.build_id_key, "
            "f.symbol, f.symbol_offset, f.source, f.src_file, f.src_line, typeof(f.src_line), "
            "f.src_column, typeof(f.src_column), f.inlined, f.repeats FROM frames f "
            "JOIN threads t ON t.id = f.thread_id WHERE " + where + " ORDER BY f.id", args):
        for k in range(row[-1] if row[-1] is not None else 1):
            out.append(row[:2] + (row[2] + k,) + row[3:-1])
    return out


def _document_frames(core_id, doc):
    """What _frames_one_each must give for a stored document: its frames, field by field."""
    return [(core_id, t["tid"], f["index"], f["pc"], f["module"], f["module_offset"],
             "beef+" + f["module_offset"], f["symbol"], f["symbol_offset"], f["source"],
             f["location"]["file"], f["location"]["line"], "integer", f["location"]["column"],
             "integer", json.dumps(f["inlined"], separators=(",", ":")) if f["inlined"] else None)
            for t in doc["threads"] for f in t["frames"]]


@pytest.mark.parametrize("depth", [1, 2, 30, 63, 64, 65, 1000])
def test_deep_stack_rows_store_every_frame(tmp_path, depth):
    """Every frame of a deep stack stored in order, field by field as the document says. The
    recursion's frames after the crashing one are equal but for their index, so they share
    one row (`repeats`): raise, abort, the crash, the recursion, main, __libc_start_main and
    _start are 6 rows for a recursion of 1 frame and 7 for any deeper one. The store reads
    them back (crashing_frames) one frame each, as the document has them."""
    from ehbt_triage import store as storemod

    doc = _recursion_doc(depth)
    frames = doc["threads"][0]["frames"]
    rows = storemod.document_rows(doc, lambda f: "beef+" + f["module_offset"])
    st = storemod.Store(str(tmp_path / "deep.db"))
    info = {"sha256": "%064x" % depth, "path": "c", "size": 1, "core_time": 1.0}
    core_id, _ = st.record_ok(info, doc, "touch | recurse", rows=rows)
    tid, stop, back = st.crashing_frames(core_id)
    st.close()
    con = sqlite3.connect(str(tmp_path / "deep.db"))
    assert _frames_one_each(con) == _document_frames(core_id, doc)
    assert len(frames) == depth + 5
    shape = con.execute("SELECT idx, repeats FROM frames ORDER BY id").fetchall()
    con.close()
    run = [(3, depth - 1)] if depth > 1 else []
    assert shape == [(0, 1), (1, 1), (2, 1)] + run + [(depth + 2, 1), (depth + 3, 1),
                                                      (depth + 4, 1)]
    assert (tid, stop) == (7, "outermost")
    assert [(f["idx"], f["pc"], f["symbol"], f["location"], f["inlined"]) for f in back] == [
        (f["index"], f["pc"], f["symbol"], f["location"], f["inlined"]) for f in frames]


def test_deep_stack_rows_break_where_frames_differ(tmp_path):
    """A row of repeated frames ends wherever a frame differs from the one before it but for
    its index + 1: at a thread's end (a second thread's recursion right after the first's),
    at a gap in the indexes, at any other field. Every frame, with its SQLite types, is what
    the document says, in the document's order."""
    from ehbt_triage import store as storemod

    doc = _recursion_doc(120, tail=())  # the thread ends in its recursion: frames 0-121
    frames = doc["threads"][0]["frames"]
    frames[30]["location"] = dict(frames[30]["location"], column=4)
    frames[50]["symbol_offset"] = "0x9f"
    for f in frames[90:]:
        f["index"] += 1  # a gap before frame 90's index
    # A second thread whose frames are the first one's last frame, the indexes going on.
    last = frames[-1]
    doc["threads"].append({"tid": 8, "crashing": False, "stop_reason": "outermost",
                           "stop_detail": "", "frames": [dict(last, index=last["index"] + 1 + k)
                                                          for k in range(40)]})
    # A line that is a float in a hand-made document is the same line to SQLite (an INTEGER
    # column keeps 15.0 as 15): it goes on the row.
    doc["threads"][1]["frames"][20]["location"] = dict(last["location"], line=15.0)

    rows = storemod.document_rows(doc, lambda f: "beef+" + f["module_offset"])
    st = storemod.Store(str(tmp_path / "runs.db"))
    info = {"sha256": "%064x" % 1, "path": "c", "size": 1, "core_time": 1.0}
    core_id, _ = st.record_ok(info, doc, "touch | recurse", rows=rows)
    st.close()
    con = sqlite3.connect(str(tmp_path / "runs.db"))
    assert _frames_one_each(con) == _document_frames(core_id, doc)
    shape = con.execute("SELECT t.tid, f.idx, f.repeats FROM frames f JOIN threads t ON "
                        "t.id = f.thread_id ORDER BY f.id").fetchall()
    con.close()
    assert shape == [(7, 0, 1), (7, 1, 1), (7, 2, 1), (7, 3, 27), (7, 30, 1), (7, 31, 19),
                     (7, 50, 1), (7, 51, 39), (7, 91, 32),
                     (8, 123, 40)]


def test_rows_of_frames_without_a_number_index_are_one_frame_each():
    """A hand-made document's equal frames whose index is not a number (a string, none)
    each make a row of their own, and an equal frame numbered after such a row starts
    one: only numbered frames that go on a numbered row join it."""
    from ehbt_triage import store as storemod

    def frame(index):
        return {"pc": "0x1", "module": "m", "module_offset": "0x1", "symbol": "s",
                "symbol_offset": "0x0", "source": "eh_frame", "location": None, "inlined": [],
                "index": index}

    doc = {"threads": [{"tid": 1, "frames": [frame(i) for i in ("a", 0, 1, None, 5, 6)]}]}
    _threads, columns = storemod.document_rows(doc, lambda f: None)
    assert columns[:3] == [[0, 0, 0, 0], ["a", 0, None, 5], [1, 2, 1, 2]]


def test_store_of_version_5_frames_read_one_each(tmp_path):
    """Frames rows of a store made before `repeats` (schema version 5: NULL once migrated)
    stand for one frame each, and a damaged count gives no more than MAX_STORED_FRAMES."""
    from ehbt_triage import store as storemod

    doc = _recursion_doc(40)
    st = storemod.Store(str(tmp_path / "old.db"))
    info = {"sha256": "%064x" % 1, "path": "c", "size": 1, "core_time": 1.0}
    core_id, _ = st.record_ok(info, doc, "touch | recurse")
    # As version 5 stored it: a row per frame, no count.
    rows = st.db.execute("SELECT * FROM frames WHERE repeats > 1").fetchall()
    names = [c[0] for c in st.db.execute("SELECT * FROM frames LIMIT 0").description]
    assert len(rows) == 1
    row = dict(zip(names, rows[0]))
    st.db.execute("DELETE FROM frames WHERE id = ?", (row["id"],))
    for k in range(row["repeats"]):
        st.db.execute("INSERT INTO frames(core_id, thread_id, idx, pc, module, symbol, src_file, "
                      "src_line, src_column) VALUES (?,?,?,?,?,?,?,?,?)",
                      (core_id, row["thread_id"], row["idx"] + k, row["pc"], row["module"],
                       row["symbol"], row["src_file"], row["src_line"], row["src_column"]))
    st.db.execute("UPDATE frames SET repeats = NULL")
    _tid, _stop, back = st.crashing_frames(core_id)
    assert [(f["idx"], f["symbol"]) for f in back] == [
        (f["index"], f["symbol"]) for f in doc["threads"][0]["frames"]]
    st.db.execute("UPDATE frames SET repeats = 1000000000 WHERE idx = 5")
    _tid, _stop, back = st.crashing_frames(core_id)
    assert len(back) == storemod.MAX_STORED_FRAMES
    assert [f["idx"] for f in back[:8]] == [0, 1, 2, 3, 4, 5, 6, 7]
    # A count below one or not a number is one frame, and the frames after it still come.
    st.db.execute("UPDATE frames SET repeats = -3 WHERE idx = 5")
    st.db.execute("UPDATE frames SET repeats = 'x' WHERE idx = 6")
    _tid, _stop, back = st.crashing_frames(core_id)
    assert [f["idx"] for f in back] == [f["index"] for f in doc["threads"][0]["frames"]]
    st.close()


def test_html_stack_folds_a_recursion_into_one_row(tmp_path):
    """The HTML report's example stack after a stack overflow: each run of frames that repeat
    the one before them (and are marked alike: skipped, in the signature, neither) is one
    row, numbered first-last with its count, so the stack's bottom (main, _start) is shown
    instead of the first 40 of a thousand equal frames."""
    from ehbt_triage import report_html
    from ehbt_triage import store as storemod

    st = storemod.Store(str(tmp_path / "deep.db"))
    info = {"sha256": "%064x" % 1, "path": "c", "size": 1, "core_time": 1.0}
    core_id, _ = st.record_ok(info, _recursion_doc(1000), "touch | recurse")
    page = report_html._stack(st, core_id, sigmod.Signer(top=5))
    st.close()
    rows = re.findall(r'<tr class="([^"]*)"><td>([^<]*)</td><td><code>([^<]*)</code>'
                      r'(?: at <code class="pos"[^>]*>[^<]*</code>)?'
                      r'(?: <span class="rep">\u00d7 (\d+)</span>)?', page)
    # raise and abort report the crash; touch (inlined into the crashing frame 2) and the
    # next four calls are the signature's five frames (version 3 counts inlined calls).
    assert rows == [
        ("skipped", "0", "raise+0x9e", ""), ("skipped", "1", "abort+0x9e", ""),
        ("insig inlined", "", "touch", ""), ("insig", "2", "recurse+0x9e", ""),
        ("insig", "3\u20135", "recurse+0x9e", "3"), ("", "6\u20131001", "recurse+0x9e", "996"),
        ("", "1002", "main+0x9e", ""), ("", "1003", "__libc_start_main+0x9e", ""),
        ("", "1004", "_start+0x9e", "")], page
    assert "more frames" not in page
    # A gap in the indexes (a hand-made document) ends the row: "6-1001" claims every index.
    doc = _recursion_doc(1000)
    for f in doc["threads"][0]["frames"][500:]:
        f["index"] += 1
    st = storemod.Store(str(tmp_path / "gap.db"))
    core_id, _ = st.record_ok(dict(info, sha256="%064x" % 2), doc, "touch | recurse")
    page = report_html._stack(st, core_id, sigmod.Signer(top=5))
    st.close()
    assert [r[1:] for r in re.findall(
        r'<tr class="([^"]*)"><td>([^<]*)</td><td><code>recurse[^<]*</code>'
        r'(?: at <code class="pos"[^>]*>[^<]*</code>)?(?: <span class="rep">\u00d7 (\d+)</span>)?',
        page)][1:] == [("3\u20135", "3"), ("6\u2013499", "494"), ("501\u20131002", "502")], page


def test_stack_overflow_core_stored_folded_and_read_back_whole(tool_env, fixture_cores,
                                                               tmp_path):
    """The real stack-overflow fixture core: analysed, its crashing thread's JSONL frames
    are GDB's first 60 (the fixture's truth stops there), then the recursion's return
    address again, then main and the C start code (the program's structure); stored, the
    recursion takes a handful of rows whose repeats add up to the frame count; a renamed
    copy, seen before, gets the same frames, every one of them, from those rows."""
    import cores_expect as ce

    exp = ce.expected_case(fixture_cores, "x86_64", "overflow", pytest.fail)
    (truth,) = [t for t in exp["threads"] if t["crashing"]]
    gdb = [f["pc"] for f in truth["frames"]]
    assert len(gdb) == 60 and len(set(gdb[1:])) == 1  # fx_recurse's call returns to one place
    core = tmp_path / "overflow.core"
    shutil.copy(exp["core"], core)
    db = tmp_path / "s.db"
    for name in ("1.jsonl", "2.jsonl"):
        proc = triage(tool_env, "--db", db, "--jsonl", tmp_path / name, core)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if name == "1.jsonl":
            core = tmp_path / "renamed-overflow.core"
            shutil.copy(exp["core"], core)
    first, = read_jsonl(tmp_path / "1.jsonl")
    again, = read_jsonl(tmp_path / "2.jsonl")
    assert (first["status"], again["status"]) == ("ok", "seen_before")
    frames = first["crashing_thread"]["frames"]
    tail = ["main", "__libc_start_call_main", "__libc_start_main", "_start"]
    assert len(frames) > 500  # a real overflow, not a short stack
    assert [f["pc"] for f in frames[:60]] == gdb
    assert {f["pc"] for f in frames[60:-4]} == {gdb[1]}
    assert [f["symbol"] for f in frames[-4:]] == tail
    kept = ("index", "pc", "module", "module_offset", "symbol", "symbol_offset", "source",
            "location", "inlined")
    assert [[f.get(k) for k in kept] for f in again["crashing_thread"]["frames"]] == [
        [f.get(k) for k in kept] for f in frames]
    assert [f["index"] for f in frames] == list(range(len(frames)))
    con = sqlite3.connect(db)
    rows, total = con.execute("SELECT COUNT(*), SUM(repeats) FROM frames f JOIN threads t "
                              "ON t.id = f.thread_id AND t.crashing").fetchone()
    con.close()
    assert total == len(frames) and rows <= 10, (rows, total)


def test_deep_stack_failing_midway_leaves_nothing_of_its_core(tmp_path):
    """A core whose recursion is stored and whose insert then fails (a trigger aborts the row
    of idx 1003, after the recursion's row of 999 frames) is undone whole -- its cores row,
    its thread, the frames rows made before the failure -- while the cores stored before and
    after it in the same batch are kept, and its bucket counts only those."""
    from ehbt_triage import store as storemod

    db = str(tmp_path / "abort.db")
    st = storemod.Store(db)
    st.db.execute("CREATE TRIGGER boom BEFORE INSERT ON frames WHEN NEW.idx = 1003 AND "
                  "(SELECT sha256 FROM cores WHERE id = NEW.core_id) = '%064x' "
                  "BEGIN SELECT RAISE(ABORT, 'boom'); END" % 2)

    def record(n, depth):
        doc = _recursion_doc(depth)
        rows = storemod.document_rows(doc, lambda f: None)
        info = {"sha256": "%064x" % n, "path": "c%d" % n, "size": 1, "core_time": float(n)}
        return st.record_ok(info, doc, "touch | recurse", rows=rows)

    first, bucket = record(1, 1000)
    with pytest.raises(sqlite3.IntegrityError):
        record(2, 1000)
    third, _ = record(3, 1000)
    st.close()
    con = sqlite3.connect(db)
    cores = con.execute("SELECT id, sha256 FROM cores ORDER BY id").fetchall()
    frames = con.execute("SELECT core_id, COUNT(*), SUM(repeats), MIN(idx), MAX(idx) "
                         "FROM frames GROUP BY core_id ORDER BY core_id").fetchall()
    threads = con.execute("SELECT core_id FROM threads ORDER BY id").fetchall()
    count = con.execute("SELECT count FROM buckets WHERE id = ?", (bucket,)).fetchone()[0]
    con.close()
    assert [c[1] for c in cores] == ["%064x" % 1, "%064x" % 3]
    assert frames == [(first, 7, 1005, 0, 1004), (third, 7, 1005, 0, 1004)]
    assert threads == [(first,), (third,)]
    assert count == 2


@pytest.fixture(scope="module")
def python_cores(tmp_path_factory):
    """Two cores of /usr/bin/python3 with 5 threads each (4 blocked in a wait, the main one in
    os.abort()): many-thread cores like the benchmark's."""
    out = tmp_path_factory.mktemp("pycores")
    prog = ("import os, threading, time\nev = threading.Event()\n"
            "ts = [threading.Thread(target=ev.wait) for _ in range(4)]\n"
            "for t in ts: t.start()\ntime.sleep(0.2)\nos.abort()\n")
    paths = []
    for i in range(2):
        run = tmp_path_factory.mktemp("pyrun")
        core = out / ("py%d.core" % i)
        if _kernel_core_in_cwd():
            def limits():
                resource.setrlimit(resource.RLIMIT_CORE,
                                   (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            subprocess.run(["/usr/bin/python3", "-c", prog], cwd=run, preexec_fn=limits,
                           stderr=subprocess.DEVNULL, timeout=60)
            found = [f for f in os.listdir(run) if f == "core" or f.startswith("core.")]
            assert len(found) == 1, found
            shutil.move(str(run / found[0]), core)
        else:
            subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore %s" % core,
                            "-ex", "kill", "--args", "/usr/bin/python3", "-c", prog], cwd=run,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            assert core.exists()
        paths.append(str(core))
    return paths


def _needs_package(tool_env):
    probe = subprocess.run(["/usr/bin/python3", "-c", "import ehbt._ehbt"], env=tool_env)
    if probe.returncode != 0:
        pytest.skip("the ehbt Python package is not importable in this build")


def test_in_process_document_is_the_clis(tool_env, ehbt_bin, python_cores, cores):
    """The in-process path (ehbt.target_report, the engine's report in C++) gives the document
    `ehbt core --json --all-threads` prints, key for key: the two paths of analyze_core are one
    report."""
    _needs_package(tool_env)
    script = r"""
import json, sys
sys.path.insert(0, %r)
from ehbt_triage import engine
assert engine.mode() == "python", engine.describe()
print(json.dumps([engine.analyze_core(p, []) for p in sys.argv[1:]]))
""" % str(ROOT / "triage")
    paths = python_cores + [cores["a"][0][0], cores["stripped"][0][0]]
    proc = subprocess.run(["/usr/bin/python3", "-c", script] + paths, env=tool_env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert len(docs) == 4
    for path, doc in zip(paths, docs):
        cli = subprocess.run([ehbt_bin, "core", path, "--json", "--all-threads"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=120)
        assert cli.returncode in (0, 1)
        assert doc == json.loads(cli.stdout), path
    for doc in docs[:2]:
        assert len(doc["threads"]) == 5
        assert sum(len(t["frames"]) for t in doc["threads"]) >= 5 * 3


def test_many_thread_cores_store_every_thread_like_the_cli(tool_env, ehbt_bin, python_cores,
                                                          tmp_path):
    """Every thread and frame of a 5-thread core lands in the store as `ehbt core --json
    --all-threads` reports it (the CLI is a separate path from the in-process engine, the
    worker-built rows and the pipelined pool), with -j1 and -j2."""
    want = {}
    for path in python_cores:
        out = subprocess.run([str(ehbt_bin), "core", path, "--json", "--all-threads"],
                             stdout=subprocess.PIPE, text=True, timeout=120)
        assert out.returncode in (0, 1)
        doc = json.loads(out.stdout)
        want[path] = [(t["tid"], t["crashing"], t["stop_reason"],
                       [(f["pc"], f["module_offset"], f["symbol"]) for f in t["frames"]])
                      for t in doc["threads"]]
        assert len(want[path]) == 5
    for jobs in ("1", "2"):
        db = tmp_path / ("j%s.db" % jobs)
        proc = triage(tool_env, "-j", jobs, "--db", db, "--jsonl", tmp_path / "o.jsonl",
                      *python_cores)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "2 analysed, 0 seen before, 0 failed" in proc.stdout
        con = sqlite3.connect(db)
        for path in python_cores:
            core_id = con.execute("SELECT id FROM cores WHERE path = ?", (path,)).fetchone()[0]
            got = []
            for tid_row, tid, crashing, stop in con.execute(
                    "SELECT id, tid, crashing, stop_reason FROM threads WHERE core_id = ? "
                    "ORDER BY id", (core_id,)).fetchall():
                frames = con.execute("SELECT pc, module_offset, symbol, repeats FROM frames "
                                     "WHERE thread_id = ? AND core_id = ? ORDER BY idx",
                                     (tid_row, core_id)).fetchall()
                got.append((tid, bool(crashing), stop,
                            [tuple(f[:3]) for f in frames for _ in range(f[3])]))
            assert got == want[path], path
        con.close()
        recs = by_core(read_jsonl(tmp_path / "o.jsonl"))
        for path in python_cores:
            r = recs[os.path.basename(path)]
            crashing = [t for t in want[path] if t[1]][0]
            assert r["crashing_thread"]["tid"] == crashing[0]
            assert [f["pc"] for f in r["crashing_thread"]["frames"]] == [
                f[0] for f in crashing[3]]
