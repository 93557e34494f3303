# SPDX-License-Identifier: Apache-2.0
"""`ehbt-triage watch` (issue #31) as a real process on a temporary spool, with local workers
or a real dask cluster (--scheduler; scheduler and workers on 127.0.0.1): cores dropped the
ways systemd-coredump and other writers drop them (a temporary name then a rename, an O_TMPFILE
linked in complete, a plain copy, zstd-compressed, written in two halves), things that are not
cores (a FIFO, a directory, a text file), cores present at start-up, SIGTERM in the middle of a
burst and a restart, a worker that crashes or hangs, a queue smaller than the burst, SIGHUP, and
the SQLite and PostgreSQL stores.

Expected values come from the test itself: which files it dropped and with which content (the
fixture cores, made distinct by a tail of bytes the engine does not read), so how many cores,
buckets and bucket counts the store must hold, and the names it wrote (systemd-coredump's
fields). Signatures are checked against GDB's own frames of each fixture core
(<name>.expected.json). Every wait is on a condition (a row in the store, a log line) with a
deadline; no timing is asserted.
"""

import ctypes
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

import scale_services as svc
from test_triage import ROOT, TRIAGE, tool_env, triage  # noqa: F401

FIXTURES = ROOT / "cores" / "out" / "x86_64"
# Small fixture cores whose crashes differ (each its own bucket): name -> a function GDB
# names in the crashing thread (from <name>.expected.json, checked below).
KINDS = ("chain", "drap", "plt", "threads", "overflow")
BOOT = "3ec699180e1d4c22ade03ec681fa8798"
WAIT = 120  # seconds: a deadline for a condition, far above what any of them takes


@pytest.fixture(scope="module")
def fixtures(fixture_cores):
    if "x86_64" not in fixture_cores["arches"]:
        pytest.skip("no x86_64 fixture cores")
    out = {}
    for name in KINDS:
        core = FIXTURES / (name + ".core")
        exp = json.loads((FIXTURES / (name + ".expected.json")).read_text())
        (thread,) = [t for t in exp["threads"] if t.get("crashing")] or exp["threads"][:1]
        own = [f["function"] for f in thread["frames"]
               if f.get("module") == exp["program"] and f.get("function")]
        out[name] = (core, own[0])
    return out


def variant(src, n):
    """The core's bytes with a tail that makes its content (and so its key) its own: the
    engine reads a core through its program headers, and the tail lies past all of them."""
    return src.read_bytes() + b"EHBT-TEST-COPY-%08d" % n


def systemd_name(comm, pid, usec, ext=""):
    return "core.%s.0.%s.%d.%d%s" % (comm, BOOT, pid, usec, ext)


def drop_renamed(spool, name, data):
    """As systemd-coredump's fallback writes a core: a temporary `.#` name, then a rename."""
    tmp = spool / (".#" + name + "a1b2c3")
    tmp.write_bytes(data)
    os.rename(tmp, spool / name)
    return spool / name


_libc = ctypes.CDLL(None, use_errno=True)
_AT_EMPTY_PATH = 0x1000


def drop_linked(spool, name, data, before_close=None):
    """As systemd-coredump usually writes a core: an O_TMPFILE file in the spool, linked under
    its name once complete (linkat), and closed after that -- after before_close() when given
    (systemd-coredump keeps the file open a while: it reads it back for the journal)."""
    fd = os.open(spool, os.O_TMPFILE | os.O_RDWR, 0o640)
    try:
        os.write(fd, data)
        if _libc.linkat(fd, b"", -100, os.fsencode(spool / name), _AT_EMPTY_PATH) != 0:
            raise OSError(ctypes.get_errno(), "linkat")
        if before_close:
            before_close()
    finally:
        os.close(fd)
    return spool / name


def logged(value):
    """A value as a log line writes it (docs/triage.md): quoted, with backslash escapes, when it
    holds a space, a quote, '=' or a backslash; as a regex."""
    text = str(value)
    if any(c in text for c in ' "=\\'):
        text = '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
    return re.escape(text)


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


class Watch:
    """One `ehbt-triage watch` process, its stderr in a file."""

    def __init__(self, env, spool, db, *extra, extra_env=None, log=None):
        self.log_path = log or (spool.parent / ("watch-%d.log" % time.monotonic_ns()))
        e = dict(env)
        e.update(extra_env or {})
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", str(TRIAGE), "watch", "--db", str(db), "-j", "2"]
            + [str(a) for a in extra] + [str(spool)],
            env=e, stdout=subprocess.DEVNULL, stderr=self.log_file, stdin=subprocess.DEVNULL)
        self.wait_log(r"event=started")

    def log(self):
        return self.log_path.read_text()

    def wait_log(self, pattern, count=1, timeout=WAIT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(re.findall(pattern, self.log())) >= count:
                return
            assert self.proc.poll() is None, "watch exited early:\n" + self.log()
            time.sleep(0.05)
        raise AssertionError("no %r in the log within %ds:\n%s" % (pattern, timeout, self.log()))

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(WAIT)
        self.log_file.close()
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()


@pytest.fixture
def watches():
    started = []
    yield started
    for w in started:
        w.kill()


def sqlite_rows(db, sql, args=()):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # before the watch made the schema
        return []
    finally:
        con.close()


def wait_for(what, predicate, watch=None, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if watch is not None:
            assert watch.proc.poll() is None, "watch exited early:\n" + watch.log()
        time.sleep(0.05)
    raise AssertionError("%s: not within %ds%s" % (what, timeout,
                                                   "\n" + watch.log() if watch else ""))


def stored(db, path):
    """The cores row stored from `path` (status, error, signature, bucket_id), or None."""
    rows = sqlite_rows(db, "SELECT status, error, signature, bucket_id, compression, "
                           "process_name, pid FROM cores WHERE path = ?", (str(path),))
    return rows[0] if rows else None


def core_count(db):
    rows = sqlite_rows(db, "SELECT COUNT(*) FROM cores")
    return rows[0][0] if rows else 0


def integrity(db):
    """(cores, ok cores, sum of bucket counts, ok cores without threads, buckets whose count
    is not their ok cores)."""
    one = lambda sql: sqlite_rows(db, sql)[0][0]  # noqa: E731
    return (one("SELECT COUNT(*) FROM cores"),
            one("SELECT COUNT(*) FROM cores WHERE status = 'ok'"),
            one("SELECT COALESCE(SUM(count), 0) FROM buckets"),
            one("SELECT COUNT(*) FROM cores c WHERE status = 'ok' AND NOT EXISTS "
                "(SELECT 1 FROM threads t WHERE t.core_id = c.id)"),
            one("SELECT COUNT(*) FROM buckets b WHERE count != (SELECT COUNT(*) FROM cores c "
                "WHERE c.bucket_id = b.id AND c.status = 'ok')"))


# ---------------------------------------------------------------------------------------------
# Cores dropped while it runs


def test_cores_dropped_while_running(tool_env, fixtures, tmp_path, watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    w = Watch(tool_env, spool, db, "--html", tmp_path / "r.html", "--report-interval", "1")
    watches.append(w)
    chain, plt, drap, threads, overflow = (fixtures[k][0] for k in
                                           ("chain", "plt", "drap", "threads", "overflow"))

    # A temporary name, then a rename (systemd-coredump's fallback), with a systemd name.
    renamed = drop_renamed(spool, systemd_name("my\\x2eapp", 4242, 1717652311000000),
                           chain.read_bytes())
    # systemd-coredump's usual way: O_TMPFILE, linked in complete.
    linked = drop_linked(spool, systemd_name("drap", 77, 1717652313000000), drap.read_bytes())
    # A FIFO, a directory with a core written into it later, a text file, a temporary name
    # that is never renamed.
    fifo = spool / "core.fifo"
    os.mkfifo(fifo)
    nested = spool / "completed" / "deeper"
    nested.mkdir(parents=True)
    (spool / "notes.txt").write_text("not a core\n")
    (spool / ".#core.never-renamed").write_bytes(overflow.read_bytes())
    in_dir = nested / "t.core"
    in_dir.write_bytes(threads.read_bytes())  # a plain write: taken when closed
    for path in (renamed, linked, in_dir):
        wait_for("%s stored" % path.name, lambda: stored(db, path), w)
    # The first core again, zstd-compressed and renamed into place: the same content, so the
    # same core, seen before.
    zst = drop_renamed(spool, systemd_name("my\\x2eapp", 4243, 1717652312000000, ".zst"),
                       zstd(chain.read_bytes()))
    w.wait_log(r"event=core status=seen_before path=%s " % logged(zst))

    # A core written in two halves: not taken while its writer has it open.
    partial = spool / "partial.core"
    data = plt.read_bytes()
    fd = os.open(partial, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data[:len(data) // 2])
        # A core dropped after the first half is stored: the watch has seen the half by then.
        marker = drop_renamed(spool, "marker.core", variant(overflow, 1))
        wait_for("marker stored", lambda: stored(db, marker), w)
        assert stored(db, partial) is None, "a core still being written was taken"
        os.write(fd, data[len(data) // 2:])
    finally:
        os.close(fd)
    wait_for("partial.core stored", lambda: stored(db, partial), w)

    # Linked in while its writer keeps it open: taken when the writer closes it (the kernel
    # reports that close under the name "#INODE"), not before.
    def still_open():
        marker2 = drop_renamed(spool, "marker2.core", variant(overflow, 2))
        wait_for("marker2 stored", lambda: stored(db, marker2), w)
        assert stored(db, spool / "held.core") is None, "taken while its writer had it open"

    held = drop_linked(spool, "held.core", variant(threads, 3), before_close=still_open)
    wait_for("held.core stored", lambda: stored(db, held), w)

    # Still alive after the FIFO: said once, never opened.
    w.wait_log(r"event=rejected path=%s reason=\"a FIFO, not opened\"" % logged(fifo))
    w.wait_log(r"event=skipped path=%s " % logged(spool / "notes.txt"))
    assert w.stop() == 0, w.log()

    rows = {p: stored(db, p) for p in (renamed, zst, linked, in_dir, partial, marker, held,
                                       spool / "marker2.core")}
    assert rows[zst] is None  # seen before: the store keeps the first file's row
    for p, row in rows.items():
        if p != zst:
            assert row and row[0] == "ok", (p, row)
    for p, name in ((renamed, "chain"), (linked, "drap"), (in_dir, "threads"),
                    (partial, "plt"), (marker, "overflow"), (held, "threads")):
        assert fixtures[name][1] in rows[p][2], (p, rows[p][2])
    # The name's fields, as the test wrote them.
    assert rows[renamed][5:7] == ("my.app", 4242)
    assert rows[linked][5:7] == ("drap", 77)
    # Exactly the seven distinct cores, each once; nothing else (no FIFO, no temporary name,
    # no half core).
    assert integrity(db) == (7, 7, 7, 0, 0)
    assert not sqlite_rows(db, "SELECT path FROM cores WHERE path LIKE '%never-renamed%' OR "
                               "path LIKE '%fifo%' OR status != 'ok'")
    page = (tmp_path / "r.html").read_text()
    assert re.search(r"7 analysed core\(s\) in 5 bucket\(s\), 1 failed", page), page[:2000]


# ---------------------------------------------------------------------------------------------
# A core written in place and closed twice


def rows_at(db, path):
    return sqlite_rows(db, "SELECT status, error FROM cores WHERE path = ? ORDER BY id",
                       (str(path),))


def write_closed(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def test_a_core_closed_half_written_then_completed_counts_once(tool_env, fixtures, tmp_path,
                                                              watches):
    """A writer that closes a core half-written and then appends the rest: the first close is
    taken, the second is the crash. The path holds one crash, as in systemd-coredump's spool:
    what was stored of the half goes -- a failure (plt's half: its notes are cut off, the
    engine says "truncated core"), whether the whole core is new (stored ok) or a copy of a
    stored core (seen before); and an ok row of the half (chain's half still has its notes:
    analysed, with the engine's truncated_core warning), the same crash counted once."""
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    html = tmp_path / "r.html"
    w = Watch(tool_env, spool, db, "--html", html, "--report-interval", "1")
    watches.append(w)
    plt = fixtures["plt"][0].read_bytes()
    original = drop_renamed(spool, "original.core", plt)
    wait_for("original.core stored", lambda: stored(db, original), w)
    for name, data, half_status in (("twice.core", variant(fixtures["plt"][0], 7), "failed"),
                                    ("again.core", plt, "failed"),
                                    ("grown.core", variant(fixtures["chain"][0], 8), "ok")):
        core = spool / name
        write_closed(core, data[:len(data) // 2])
        wait_for("the half of %s stored" % name, lambda: rows_at(db, core), w)
        ((status, error),) = rows_at(db, core)
        assert status == half_status, (name, status, error)
        if status == "failed":
            assert error.startswith("truncated core: "), error
        else:
            (warnings,) = sqlite_rows(db, "SELECT warnings FROM cores WHERE path = ?",
                                      (str(core),))[0]
            assert [x["kind"] for x in json.loads(warnings)] == ["truncated_core"], warnings
        write_closed(core, data[len(data) // 2:], "ab")
        # (an ok half has its own line: the whole core's is the second)
        w.wait_log(r"event=core status=(ok|seen_before) path=%s " % logged(core),
                   count=2 if half_status == "ok" else 1)
    w.wait_log(r"event=core status=seen_before path=%s " % logged(spool / "again.core"))
    assert w.stop() == 0, w.log()
    assert rows_at(db, spool / "twice.core") == [("ok", None)]
    assert rows_at(db, spool / "again.core") == []  # its content is stored from original.core
    assert rows_at(db, spool / "grown.core") == [("ok", None)]
    assert sqlite_rows(db, "SELECT warnings FROM cores WHERE path = ?",
                       (str(spool / "grown.core"),)) == [("[]",)]
    assert integrity(db) == (3, 3, 3, 0, 0)
    assert sorted(sqlite_rows(db, "SELECT count FROM buckets WHERE count > 0")) == [(1,), (2,)]
    assert "3 analysed core(s) in 2 bucket(s), 0 failed" in html.read_text()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.parametrize("kind,half_status", [("plt", "failed"), ("chain", "ok")])
def test_a_batch_run_after_the_core_was_completed_counts_it_once(tool_env, fixtures, tmp_path,
                                                                 kind, half_status, store,
                                                                 request):
    """The same in two batch runs: the first finds the core half-written (failed, or analysed
    as a truncated core), the second finds it whole: one ok row, one core in one bucket
    whose example it is, no threads or frames left of the half; in either store."""
    spool = tmp_path / "coredump"
    spool.mkdir()
    if store == "postgresql":
        db = request.getfixturevalue("postgres").fresh_db("twice_" + kind)
        query = lambda sql: pg_rows(db, sql)  # noqa: E731
    else:
        db = tmp_path / "db"
        query = lambda sql: sqlite_rows(db, sql)  # noqa: E731
    core = spool / "twice.core"
    at_core = "SELECT status, signature FROM cores WHERE path = '%s'" % core
    data = fixtures[kind][0].read_bytes()
    write_closed(core, data[:len(data) // 2])
    proc = triage(tool_env, "--db", db, "-j", "1", spool)
    assert proc.returncode == (1 if half_status == "failed" else 0), proc.stdout + proc.stderr
    assert [s for s, _ in query(at_core)] == [half_status]
    write_closed(core, data[len(data) // 2:], "ab")
    proc = triage(tool_env, "--db", db, "-j", "1", spool)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ((status, signature),) = query(at_core)
    assert status == "ok" and fixtures[kind][1] in signature, signature
    assert query("SELECT COUNT(*) FROM cores") == [(1,)]
    assert query("SELECT b.count FROM buckets b JOIN cores c ON c.id = b.example_core_id "
                 "WHERE b.count > 0") == [(1,)]
    assert query("SELECT COUNT(*) FROM threads WHERE core_id NOT IN "
                 "(SELECT id FROM cores)") == [(0,)]
    assert query("SELECT COUNT(*) FROM frames WHERE core_id NOT IN "
                 "(SELECT id FROM cores)") == [(0,)]


# ---------------------------------------------------------------------------------------------
# Start-up, restarts, SIGTERM


def test_catch_up_at_start_and_across_restarts(tool_env, fixtures, tmp_path, watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    before = [drop_renamed(spool, "pre-%s.core" % k, fixtures[k][0].read_bytes())
              for k in ("chain", "drap")]
    w = Watch(tool_env, spool, db)
    watches.append(w)
    # A file the start-up scan finds, closed after a write (of nothing) while the scan runs:
    # an event for it too. Still one core.
    with open(before[0], "ab"):
        pass
    for p in before:
        wait_for("%s stored" % p.name, lambda: stored(db, p), w)
    # Dropped while running, then while stopped.
    during = drop_renamed(spool, "during.core", fixtures["plt"][0].read_bytes())
    wait_for("during.core stored", lambda: stored(db, during), w)
    assert w.stop() == 0
    after = [drop_renamed(spool, "after-%d.core" % n, variant(fixtures["threads"][0], n))
             for n in range(2)]
    copy = drop_renamed(spool, "copy-of-chain.core", fixtures["chain"][0].read_bytes())
    w = Watch(tool_env, spool, db)
    watches.append(w)
    for p in after:
        wait_for("%s stored" % p.name, lambda: stored(db, p), w)
    w.wait_log(r"event=caught_up")
    assert w.stop() == 0
    assert stored(db, copy) is None  # its content was stored from pre-chain.core
    assert integrity(db) == (5, 5, 5, 0, 0)
    counts = sorted(c for (c,) in sqlite_rows(db, "SELECT count FROM buckets"))
    assert counts == [1, 1, 1, 2]
    # A third start with nothing new: nothing analysed, nothing counted again.
    w = Watch(tool_env, spool, db)
    watches.append(w)
    w.wait_log(r"event=caught_up")
    assert w.stop() == 0
    assert re.search(r"event=stopped abandoned=0 ok=0 seen_before=6 failed=0", w.log()), w.log()
    assert integrity(db) == (5, 5, 5, 0, 0)


def test_sigterm_in_a_burst_then_restart(tool_env, fixtures, tmp_path, watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    per_kind = 12
    # Slowed workers (0.2 s a core) so that the burst is still running when SIGTERM comes.
    w = Watch(tool_env, spool, db, extra_env={"EHBT_TRIAGE_TEST_DELAY": "0.2"})
    watches.append(w)
    n = 0
    for i in range(per_kind):
        for k in ("chain", "drap", "plt"):
            drop_renamed(spool, "burst-%s-%02d.core" % (k, i), variant(fixtures[k][0], n))
            n += 1
    wait_for("some burst cores stored", lambda: core_count(db) >= 4, w)
    assert w.stop() == 0, w.log()
    assert re.search(r"event=stopped abandoned=\d+", w.log())
    total, ok, counted, bare, drift = integrity(db)
    assert 4 <= total < n and total == ok == counted and bare == 0 and drift == 0
    # The restart does the rest, each core once.
    w = Watch(tool_env, spool, db)
    watches.append(w)
    wait_for("every burst core stored", lambda: core_count(db) == n, w)
    w.wait_log(r"event=caught_up")
    assert w.stop() == 0
    assert integrity(db) == (n, n, n, 0, 0)
    by_kind = {}
    for path, count in sqlite_rows(db, "SELECT c.path, b.count FROM cores c "
                                       "JOIN buckets b ON b.id = c.bucket_id"):
        by_kind.setdefault(os.path.basename(path).split("-")[1], set()).add(count)
    assert by_kind == {"chain": {per_kind}, "drap": {per_kind}, "plt": {per_kind}}


# ---------------------------------------------------------------------------------------------
# Failures, bounds, reload


@pytest.mark.parametrize("executor", ["local", "scheduler"])
@pytest.mark.parametrize("fault,expect", [("segv", "worker died: SIGSEGV"),
                                          ("hang", "timed out after 3s")])
def test_a_core_that_crashes_or_hangs_a_worker(tool_env, fixtures, tmp_path, watches, fault,
                                               expect, executor, request):
    """A local worker, or with --scheduler the analysis helper of a dask worker: killed and
    replaced, that core failed, the next ones analysed."""
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    cluster = request.getfixturevalue("cluster") if executor == "scheduler" else None
    where = ["--scheduler", cluster.address] if cluster else []
    w = Watch(tool_env, spool, db, "--timeout", "3" if fault == "hang" else "60", *where,
              extra_env={"EHBT_TRIAGE_TEST_FAULT": fault + ":bad-one"})
    watches.append(w)
    bad = drop_renamed(spool, "bad-one.core", fixtures["chain"][0].read_bytes())
    wait_for("bad-one stored", lambda: stored(db, bad), w)
    assert stored(db, bad)[0] == "failed" and expect in stored(db, bad)[1], stored(db, bad)
    # The workers were replaced: the next cores are analysed.
    good = [drop_renamed(spool, "good-%s.core" % k, fixtures[k][0].read_bytes())
            for k in ("drap", "plt", "threads")]
    for p in good:
        wait_for("%s stored" % p.name, lambda: stored(db, p), w)
    assert all(stored(db, p)[0] == "ok" for p in good)
    assert w.stop() == 0
    assert integrity(db)[:3] == (4, 3, 3)
    if cluster:
        cluster.wait_for_workers(2, timeout=60)  # the dask workers themselves survived


def test_a_queue_smaller_than_the_burst_loses_nothing(tool_env, fixtures, tmp_path, watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    # --max-images 1: each worker's image store keeps one image (a core names 3 files).
    w = Watch(tool_env, spool, db, "--queue", "2", "--max-images", "1",
              extra_env={"EHBT_TRIAGE_TEST_DELAY": "0.1"})
    watches.append(w)
    n = 24
    # Stopped while the burst lands, so that its events all wait in the kernel's queue and
    # arrive at once, more than --queue.
    w.signal(signal.SIGSTOP)
    try:
        for i in range(n):
            drop_renamed(spool, "q-%02d.core" % i, variant(fixtures["chain"][0], i))
    finally:
        w.signal(signal.SIGCONT)
    wait_for("every core stored", lambda: core_count(db) == n, w)
    assert "event=queue_full" in w.log()
    assert w.stop() == 0
    assert integrity(db) == (n, n, n, 0, 0)
    assert sqlite_rows(db, "SELECT count FROM buckets") == [(n,)]


def test_a_tiny_image_store_still_analyses_every_core(tool_env, fixtures, tmp_path, watches):
    """--max-images 1: each worker's image store keeps one image (least recently used out),
    so the files of every core (the program, libc, ld.so) push each other out and are parsed
    again, by cores of five programs in turn. Every core is still analysed: one bucket per
    program, named by the function GDB names, each counting both copies of its program."""
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    w = Watch(tool_env, spool, db, "--max-images", "1")
    watches.append(w)
    kinds = {}
    for copy in range(2):
        for k in KINDS:
            kinds[drop_renamed(spool, "%s-%d.core" % (k, copy),
                               variant(fixtures[k][0], copy))] = k
    wait_for("every core stored", lambda: core_count(db) == len(kinds), w)
    assert w.stop() == 0
    assert integrity(db) == (10, 10, 10, 0, 0)
    bucket_of = {}
    for path, k in kinds.items():
        status, error, signature, bucket, *_ = stored(db, path)
        assert status == "ok", (path, error)
        assert fixtures[k][1] in signature, (path, signature)
        bucket_of.setdefault(k, set()).add(bucket)
    assert all(len(b) == 1 for b in bucket_of.values()), bucket_of
    assert len({next(iter(b)) for b in bucket_of.values()}) == len(KINDS)
    assert sorted(sqlite_rows(db, "SELECT count FROM buckets")) == [(2,)] * len(KINDS)


def test_lost_events_are_made_good_by_a_scan(tool_env, fixtures, tmp_path, watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    w = Watch(tool_env, spool, db, extra_env={"EHBT_TRIAGE_TEST_LOSE_EVENTS": "lost"})
    watches.append(w)
    lost = drop_renamed(spool, "lost.core", fixtures["chain"][0].read_bytes())
    wait_for("lost.core stored", lambda: stored(db, lost), w)
    assert "event=overflow" in w.log()
    kept = drop_renamed(spool, "kept.core", fixtures["drap"][0].read_bytes())
    wait_for("kept.core stored", lambda: stored(db, kept), w)
    assert w.stop() == 0
    assert integrity(db) == (2, 2, 2, 0, 0)


def test_sighup_reopens_the_jsonl_and_rewrites_the_report(tool_env, fixtures, tmp_path,
                                                          watches):
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    out = tmp_path / "cores.jsonl"
    html = tmp_path / "r.html"
    w = Watch(tool_env, spool, db, "--jsonl", out, "--html", html, "--report-interval", "3600")
    watches.append(w)
    first = drop_renamed(spool, "one.core", fixtures["chain"][0].read_bytes())
    wait_for("one.core stored", lambda: stored(db, first), w)
    os.rename(out, tmp_path / "cores.jsonl.1")  # as logrotate moves it
    w.signal(signal.SIGHUP)
    w.wait_log(r"event=reloaded")
    # Rewritten at once on SIGHUP (its interval alone would wait an hour).
    assert "1 analysed core(s) in 1 bucket(s)" in html.read_text()
    second = drop_renamed(spool, "two.core", fixtures["drap"][0].read_bytes())
    wait_for("two.core stored", lambda: stored(db, second), w)
    assert w.stop() == 0
    old = [json.loads(line) for line in (tmp_path / "cores.jsonl.1").read_text().splitlines()]
    new = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["core"] for r in old] == [str(first)]
    assert [(r["core"], r["status"]) for r in new] == [(str(second), "ok")]
    assert "2 analysed core(s) in 2 bucket(s)" in html.read_text()  # the final rewrite


# ---------------------------------------------------------------------------------------------
# PostgreSQL


@pytest.fixture(scope="module")
def postgres(request):
    if not os.path.exists(os.path.join(svc.PG_BIN, "initdb")):
        pytest.skip("PostgreSQL 15 is not installed")
    pytest.importorskip("psycopg")
    pg = svc.Postgres(svc.unprivileged_user())
    request.addfinalizer(pg.stop)
    return pg.start()


def pg_rows(url, sql):
    import psycopg

    try:
        with psycopg.connect(url) as c:
            return c.execute(sql).fetchall()
    except psycopg.errors.UndefinedTable:
        return []


def test_postgresql_store(tool_env, fixtures, tmp_path, watches, postgres):
    url = postgres.fresh_db("watch")
    spool = tmp_path / "coredump"
    spool.mkdir()
    present = drop_renamed(spool, "present.core", fixtures["chain"][0].read_bytes())
    w = Watch(tool_env, spool, url)
    watches.append(w)
    dropped = [drop_renamed(spool, "d-%d.core" % n, variant(fixtures["drap"][0], n))
               for n in range(3)]
    dropped.append(drop_linked(spool, "copy.core", fixtures["chain"][0].read_bytes()))
    pg_count = lambda: (pg_rows(url, "SELECT COUNT(*) FROM cores") or [(0,)])[0][0]  # noqa
    wait_for("4 cores in PostgreSQL", lambda: pg_count() == 4, w)
    w.wait_log(r"event=core status=seen_before path=%s " % logged(dropped[-1]))
    assert w.stop() == 0
    w = Watch(tool_env, spool, url)  # a restart: nothing new
    watches.append(w)
    w.wait_log(r"event=caught_up")
    assert w.stop() == 0
    assert re.search(r"event=stopped abandoned=0 ok=0 seen_before=5 failed=0", w.log()), w.log()
    assert pg_count() == 4
    assert sorted(c for (c,) in pg_rows(url, "SELECT count FROM buckets")) == [1, 3]
    assert pg_rows(url, "SELECT COUNT(*) FROM cores c WHERE NOT EXISTS "
                        "(SELECT 1 FROM threads t WHERE t.core_id = c.id)") == [(0,)]
    assert str(present) in [p for (p,) in pg_rows(url, "SELECT path FROM cores")]


# ---------------------------------------------------------------------------------------------
# --scheduler: the cores analysed by a dask cluster's workers


def dask_env(env):
    """The dask workers import ehbt_triage and ehbt, as docs/triage.md tells users to arrange."""
    return dict(env, PYTHONPATH=os.pathsep.join([str(TRIAGE.parent), env["PYTHONPATH"]]))


@pytest.fixture(scope="module")
def cluster(tool_env, request):
    pytest.importorskip("distributed")
    if not shutil.which("dask"):
        pytest.skip("no dask command (Debian: python3-distributed)")
    c = svc.DaskCluster(dask_env(tool_env), workers=2)
    request.addfinalizer(c.stop)
    return c.start()


def helper_cores(cluster):
    """How many cores the analysis helpers of the dask workers have analysed, in all."""
    with cluster.client() as c:
        counts = c.run(lambda: sum(h.cores for h in __import__(
            "ehbt_triage.helper", fromlist=["_idle"])._idle))
    return sum(counts.values())


def children(pid):
    """The pids of a process's children (a watch with --scheduler forks no worker)."""
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            out += f.read().split()
    return out


def on_cluster(env, tmp_path, cluster, watches, extra_env):
    """(spool, db, a watch with --scheduler on a new spool)."""
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    w = Watch(env, spool, db, "--scheduler", cluster.address, extra_env=extra_env)
    watches.append(w)
    return spool, db, w


def test_scheduler_burst_sigterm_and_restart(tool_env, fixtures, tmp_path, watches, cluster):
    # Slowed helpers (0.3 s a core) so that the burst is still running when SIGTERM comes.
    spool, db, w = on_cluster(tool_env, tmp_path, cluster, watches,
                              {"EHBT_TRIAGE_TEST_DELAY": "0.3"})
    assert re.search(r"event=started .*scheduler=%s .*analysed on dask cluster" %
                     re.escape(cluster.address), w.log()), w.log()
    per_kind, n, dropped = 6, 0, {}
    for i in range(per_kind):
        for k in ("chain", "drap", "plt"):
            data = variant(fixtures[k][0], n)
            if i % 3 == 2:  # every third systemd-coredump style, compressed
                path = drop_renamed(spool, systemd_name(k, 1000 + n, 1717652311000000 + n,
                                                        ".zst"), zstd(data))
            else:
                path = drop_renamed(spool, "burst-%s-%02d.core" % (k, i), data)
            dropped[path] = k
            n += 1
    wait_for("some burst cores stored", lambda: core_count(db) >= 3, w)
    # Analysed, and no local worker: the cluster did it (local workers, forked for the first
    # core, stay until the end).
    assert children(w.proc.pid) == []
    assert w.stop() == 0, w.log()
    assert re.search(r"event=stopped abandoned=\d+", w.log()), w.log()
    total, ok, counted, bare, drift = integrity(db)
    assert 3 <= total < n and total == ok == counted and bare == 0 and drift == 0, w.log()
    # The restart does the rest, each core once; a copy of a stored core is seen before.
    w = Watch(tool_env, spool, db, "--scheduler", cluster.address)
    watches.append(w)
    wait_for("every burst core stored", lambda: core_count(db) == n, w)
    w.wait_log(r"event=caught_up")
    copy = drop_renamed(spool, "copy.core", variant(fixtures["chain"][0], 0))
    w.wait_log(r"event=core status=seen_before path=%s " % logged(copy))
    assert children(w.proc.pid) == []
    assert w.stop() == 0, w.log()
    assert integrity(db) == (n, n, n, 0, 0)
    assert stored(db, copy) is None
    bucket_of = {}
    for path, k in dropped.items():
        status, error, signature, bucket, compression, *_ = stored(db, path)
        assert status == "ok", (path, error)
        assert fixtures[k][1] in signature, (path, signature)
        assert compression == ("zstd" if path.name.endswith(".zst") else None), path
        bucket_of.setdefault(k, set()).add(bucket)
    assert all(len(b) == 1 for b in bucket_of.values()), bucket_of
    assert sorted(c for (c,) in sqlite_rows(db, "SELECT count FROM buckets")) == [per_kind] * 3


def test_scheduler_a_core_that_keeps_killing_dask_workers(tool_env, fixtures, tmp_path,
                                                          watches, cluster):
    """A core whose analysis kills the dask worker process (as a machine failure would): the
    scheduler runs its task elsewhere, and past the allowed failures (1 in these tests) gives
    it up; given up, it is run once more alone (a death counts against every task the worker
    held), kills workers again and is failed with the reason; the watch goes on with the next
    cores once the nannies have brought the workers back."""
    spool, db, w = on_cluster(tool_env, tmp_path, cluster, watches,
                              {"EHBT_TRIAGE_TEST_FAULT": "killparent:/poison.core"})
    poison = drop_renamed(spool, "poison.core", fixtures["chain"][0].read_bytes())
    w.wait_log(r'event=core status=failed path=%s .*error="dask worker died while analysing it '
               r'alone \(given up by the scheduler past its allowed-failures\)"' % logged(poison))
    assert len(re.findall(r"event=retry_alone path=%s " % logged(poison), w.log())) == 1, w.log()
    cluster.wait_for_workers(2, timeout=120)
    good = drop_renamed(spool, "good.core", fixtures["drap"][0].read_bytes())
    wait_for("good.core stored", lambda: stored(db, good), w)
    assert stored(db, good)[0] == "ok"
    assert w.stop() == 0, w.log()
    assert integrity(db) == (1, 1, 1, 0, 0)  # the poison core has no content key to store


def test_scheduler_sighup_connects_again(tool_env, fixtures, tmp_path, watches, request):
    """The scheduler restarted (same address, new workers): SIGHUP makes the watch connect to
    it again, and the cores dropped after are analysed there."""
    pytest.importorskip("distributed")
    if not shutil.which("dask"):
        pytest.skip("no dask command (Debian: python3-distributed)")
    first = svc.DaskCluster(dask_env(tool_env), workers=1)
    request.addfinalizer(first.stop)
    first.start()
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    w = Watch(tool_env, spool, db, "--scheduler", first.address)
    watches.append(w)
    one = drop_renamed(spool, "one.core", fixtures["chain"][0].read_bytes())
    wait_for("one.core stored", lambda: stored(db, one), w)
    first.stop()
    second = svc.DaskCluster(dask_env(tool_env), workers=1)
    second.port, second.address = first.port, first.address
    request.addfinalizer(second.stop)
    second.start()
    w.signal(signal.SIGHUP)
    w.wait_log(r"event=reloaded")
    assert "event=reload_failed" not in w.log(), w.log()
    two = drop_renamed(spool, "two.core", fixtures["drap"][0].read_bytes())
    wait_for("two.core stored", lambda: stored(db, two), w)
    assert helper_cores(second) == 1  # analysed by the new cluster's worker
    assert w.stop() == 0, w.log()
    assert integrity(db) == (2, 2, 2, 0, 0)
    assert stored(db, one)[0] == stored(db, two)[0] == "ok"


def event_loops(pid):
    """How many epoll descriptors a process holds: one per IO loop (dask's included)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[eventpoll]"
        except OSError:
            pass  # closed meanwhile
    return n


def log_after(w, marker):
    """The watch's log from the first line matching `marker` (a regex) on."""
    text = w.log()
    m = re.search(marker, text)
    return text[m.start():] if m else ""


def test_scheduler_down_at_sighup_keeps_the_watch_running(tool_env, fixtures, tmp_path, watches,
                                                          request):
    """The scheduler goes away (issue #31): the core in flight and those dropped meanwhile
    wait; SIGHUP then connects again on a thread, so the loop goes on (an inotify event after
    the SIGHUP is handled while the attempt is still in progress, before it is said to have
    failed), scheduler_unreachable is logged and the attempts go on with backoff; once a
    scheduler is back on the same address, every waiting core is analysed there, each counted
    once (the one in flight is not recorded failed as "cancelled"). Then the scheduler goes
    away again, and SIGHUP followed at once by SIGTERM: it stops while its attempt to connect is
    still in progress, exit status 0."""
    pytest.importorskip("distributed")
    if not shutil.which("dask"):
        pytest.skip("no dask command (Debian: python3-distributed)")
    first = svc.DaskCluster(dask_env(tool_env), workers=1)
    request.addfinalizer(first.stop)
    first.start()
    spool = tmp_path / "coredump"
    spool.mkdir()
    db = tmp_path / "db"
    # Slowed helpers (3 s a core), so that a core is still in flight when the scheduler stops.
    # Events of names with "lost" in them come as IN_Q_OVERFLOW (a line, handled by the loop).
    w = Watch(tool_env, spool, db, "--scheduler", first.address,
              extra_env={"EHBT_TRIAGE_TEST_DELAY": "3", "EHBT_TRIAGE_TEST_LOSE_EVENTS": "lost"})
    watches.append(w)
    one = drop_renamed(spool, "one.core", variant(fixtures["chain"][0], 1))
    wait_for("one.core stored", lambda: stored(db, one), w)
    two = drop_renamed(spool, "two.core", variant(fixtures["drap"][0], 2))
    # Stopped once two.core (task 1) is on the scheduler, before it is analysed (3 s).
    with first.client() as c:
        wait_for("two.core given to the scheduler", lambda: any(
            re.fullmatch(r"ehbt-core-\w+-\d+-1-\d+", k) for k in c.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.tasks))), w)
    first.stop()
    w.wait_log(r"event=scheduler_lost scheduler=%s in_flight=1 " % re.escape(first.address))
    w.wait_log(r"event=scheduler_unreachable ")  # the first attempt, right after
    loops = event_loops(w.proc.pid)
    three = drop_renamed(spool, "three.core", variant(fixtures["plt"][0], 3))
    w.signal(signal.SIGHUP)
    w.wait_log(r"event=reloaded")
    (spool / "lost-event").write_bytes(b"")
    w.wait_log(r"event=overflow")
    after_hup = log_after(w, r"event=reloaded")
    assert "event=scheduler_unreachable" not in after_hup.split("event=overflow")[0], w.log()
    w.wait_log(r"event=scheduler_unreachable .*retry_in_s=", count=2)
    # No attempt adds an IO loop (a dask client with a loop of its own never stopped it when
    # it failed to connect: a thread and 3 descriptors left per attempt). Counted by their
    # epoll descriptors, there whether an attempt is in progress or not.
    assert event_loops(w.proc.pid) == loops, (loops, event_loops(w.proc.pid))
    assert stored(db, two) is None and stored(db, three) is None, w.log()
    assert "event=reload_failed" not in w.log(), w.log()
    # A scheduler back on the same address (new workers): what waited is analysed there.
    second = svc.DaskCluster(dask_env(tool_env), workers=1)
    second.port, second.address = first.port, first.address
    request.addfinalizer(second.stop)
    second.start()
    w.wait_log(r"event=scheduler_connected scheduler=%s " % re.escape(second.address))
    wait_for("two.core and three.core stored",
             lambda: stored(db, two) and stored(db, three), w)
    assert stored(db, one)[0] == stored(db, two)[0] == stored(db, three)[0] == "ok", w.log()
    assert integrity(db) == (3, 3, 3, 0, 0)
    assert sorted(c for (c,) in sqlite_rows(db, "SELECT count FROM buckets")) == [1, 1, 1]
    assert helper_cores(second) == 2, w.log()  # each analysed once, on the new cluster
    # Down again; SIGHUP, then SIGTERM at once: no wait for the attempt (RECONNECT_TIMEOUT).
    before = w.log().count("event=scheduler_unreachable ")
    second.stop()
    # (in_flight: 0, or a core being checked again: the scans of the SIGHUP and of the lost
    # event found cores in flight, which are then hashed once more -- seen before.)
    w.wait_log(r"event=scheduler_lost .*in_flight=\d+ ")
    w.wait_log(r"event=scheduler_unreachable ", count=before + 1)
    w.signal(signal.SIGHUP)
    w.wait_log(r"event=reloaded", count=2)
    w.signal(signal.SIGTERM)
    assert w.proc.wait(WAIT) == 0, w.log()
    w.log_file.close()
    last = w.log()[w.log().rindex("event=reloaded"):]
    assert re.search(r"event=stopped abandoned=\d+ ok=3 ", last), w.log()
    assert "event=scheduler_unreachable" not in last, w.log()
    assert integrity(db) == (3, 3, 3, 0, 0)


# ---------------------------------------------------------------------------------------------
# The systemd unit


def test_systemd_unit_is_installed_hardened_and_valid(build_dir, tmp_path):
    from ehbt_py import install_into
    from ehbt_triage.cli import watch_parser

    prefix = tmp_path / "prefix"
    install_into(build_dir, prefix, "triage", "dist")
    unit = prefix / "lib" / "systemd" / "system" / "ehbt-triage-watch.service"
    text = unit.read_text()
    keys = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            keys.setdefault(k, []).append(v)
    argv = keys["ExecStart"][0].split()
    assert argv[0] == str(prefix / "bin" / "ehbt-triage") and argv[1] == "watch"
    # Its options are watch's own, its store and report in its state directory, and it
    # watches the systemd-coredump spool, read-only.
    args = watch_parser().parse_args([a.replace("%S", "/var/lib") for a in argv[2:]])
    assert args.db == "/var/lib/ehbt-triage/store.sqlite"
    assert args.html == "/var/lib/ehbt-triage/report.html"
    assert args.dirs == ["/var/lib/systemd/coredump"]
    assert keys["StateDirectory"] == ["ehbt-triage"]
    assert keys["ReadOnlyPaths"] == ["/var/lib/systemd/coredump"]
    for key, value in (("DynamicUser", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "yes"), ("PrivateNetwork", "yes"),
                       ("NoNewPrivileges", "yes"), ("KillMode", "mixed"),
                       ("ExecReload", "/bin/kill -HUP $MAINPID")):
        assert keys[key] == [value], key
    if not shutil.which("systemd-analyze"):
        pytest.skip("no systemd-analyze")
    env = dict(os.environ, MANPATH=str(prefix / "share" / "man"))
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------
# Log lines


def test_log_lines_are_key_value_and_masked(tmp_path, monkeypatch):
    from ehbt_triage.watch import Log

    db = "postgresql://triage:S3cretPass@db.example:5432/triage"
    out = tmp_path / "log"
    with open(out, "w") as stream:
        monkeypatch.delenv("JOURNAL_STREAM", raising=False)
        log = Log(db, stream)
        log("core", status="ok", path='/spool/a b"c\\d', ms=1.25, bucket=3, none=None)
        log("reload_failed", level="error", error="cannot reach %s" % db)
        # JOURNAL_STREAM naming this very stream (device:inode): journald's priority prefix.
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", "%d:%d" % (st.st_dev, st.st_ino))
        Log(db, stream)("stopped", level="warning", abandoned=0)
        monkeypatch.setenv("JOURNAL_STREAM", "%d:%d" % (st.st_dev, st.st_ino + 1))
        Log(db, stream)("stopped", abandoned=1)
    lines = out.read_text().splitlines()
    assert lines[0] == ('ehbt-triage: event=core status=ok path="/spool/a b\\"c\\\\d" '
                        'ms=1.250 bucket=3')
    assert "S3cretPass" not in lines[1] and "triage:***@db.example" in lines[1], lines[1]
    assert lines[2] == "<4>ehbt-triage: event=stopped abandoned=0"
    assert lines[3] == "ehbt-triage: event=stopped abandoned=1"


def test_a_store_that_cannot_be_opened_is_a_masked_usage_error(tool_env, tmp_path):
    spool = tmp_path / "coredump"
    spool.mkdir()
    proc = subprocess.run(
        ["/usr/bin/python3", str(TRIAGE), "watch", "--db",
         "postgresql://triage:S3cretPass@127.0.0.1:1/triage", str(spool)],
        env=tool_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "cannot open the database" in proc.stderr and "S3cretPass" not in proc.stderr
    assert "triage:***@127.0.0.1" in proc.stderr, proc.stderr
    proc = subprocess.run(["/usr/bin/python3", str(TRIAGE), "watch", str(tmp_path / "nothing")],
                          env=tool_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no such directory" in proc.stderr, proc.stderr
