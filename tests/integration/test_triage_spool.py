# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage on crash spools as they are in the wild (issues #13 and #15): a
systemd-coredump spool (cores/make-spool.sh: names and compression as systemd-coredump makes
them), compressed cores counted once with their plain copies, --debug-dir, signatures over the
fixture cores of every architecture without sysroots, the HTML report's counts, and the store's
schema migration.

Expected values are independent of ehbt: the spool's manifest (what make_spool.py wrote into
each name; the pid is the main thread's tid as GDB listed it), GDB's frames of each fixture
core (<name>.expected.json), and the fixture programs' own function names.
"""

import json
import shutil
import os
import re
import sqlite3
import subprocess
import sys

import pytest

import cores_expect as ce
from test_triage import ROOT, read_jsonl, tool_env, triage  # noqa: F401

sys.path.insert(0, str(ROOT / "triage"))
from ehbt_triage import content_hash  # noqa: E402
from ehbt_triage import signature as sigmod  # noqa: E402
from ehbt_triage import spool as spoolmod  # noqa: E402

SPOOL_FIELDS = ("process_name", "uid", "boot_id", "pid", "core_time")


@pytest.fixture(scope="module")
def spool(fixture_cores, tmp_path_factory):
    """The spool made by cores/make-spool.sh from the fixture cores, and its manifest."""
    d = tmp_path_factory.mktemp("spool") / "coredump"
    subprocess.run(["bash", str(ROOT / "cores" / "make-spool.sh"), str(d)], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    manifest = json.loads((d / "spool.json").read_text())
    (d / "spool.json").unlink()  # only cores in the spool
    if not any(m["fixture"] == "chain" and m["arch"] == "x86_64" for m in manifest.values()):
        pytest.skip("the x86_64 fixture cores could not be made")
    return d, manifest


@pytest.fixture(scope="module")
def spool_run(tool_env, spool, tmp_path_factory):
    d, manifest = spool
    work = tmp_path_factory.mktemp("spoolrun")
    tmp = work / "tmp"
    tmp.mkdir()
    proc = triage(tool_env, "--coredump-dir", d, "--db", work / "db", "--jsonl",
                  work / "o.jsonl", "--html", work / "r.html", "-j", "2", cwd=work,
                  extra_env={"TMPDIR": str(tmp)})
    recs = {os.path.basename(r["core"]): r for r in read_jsonl(work / "o.jsonl")}
    return proc, recs, work


def gdb_identity(exp, inlined=True):
    """A crash as GDB tells it: the crashing thread's first three functions of the program
    itself (its own module, inlined calls included), after libc's and libstdc++'s abort
    machinery. The Go and no-CFI
    fixtures (other expected formats) are one program each; the Go builds (plain, stripped,
    PIE) are one crash per source."""
    if exp.get("format") in ("ehbt-go-expected/1", "ehbt-go-deadlock-expected/1"):
        # One crash per source: gocrash.go (go, gostripped, gopie), cgocrash (cgo, cgostripped),
        # gosystemstack.go (gosys, gosysstripped), godeadlock.go (and its stripped build).
        return ("go program", re.sub(r"(stripped|pie)$", "", exp["program"]))
    if exp.get("format") == "ehbt-go-lines-expected/1":  # goinline.go, plain and stripped
        return ("go program", "goinline")
    if "threads" not in exp:
        # node_abort and node_deopt are both process.abort() called from JavaScript: node's
        # native frames, GDB's view, are the same. (java_jit and java_jit_fp both say
        # "JavaJit.java": one program, run with and without -XX:+PreserveFramePointer.)
        program = exp["program"]
        return ("program", "node process.abort()" if program.startswith("node_") else program)
    (thread,) = [t for t in exp["threads"] if t.get("crashing")] or exp["threads"][:1]
    # GDB's frames, the calls it shows inlined into a frame included (they are frames of a
    # signature since signature version 2, #28). With inlined=False only the physical ones:
    # through qemu's gdbstub GDB hides an inlined call whose first instruction is the pc (native
    # GDB and the DWARF show it), so for the bucket check the same crash would read as two.
    own = [name for f in thread["frames"] if f.get("module") == exp["program"]
           for name in ([c["function"] for c in f.get("inlined", [])] if inlined else [])
           + [f.get("function")] if name]
    return tuple(own[:3])


# ---------------------------------------------------------------------------------------------
# systemd-coredump names


def test_parse_systemd_names():
    boot = "3ec699180e1d4c22ade03ec681fa8798"
    got = spoolmod.parse_name("core.my\\x2eapp\\x2fv2.1000.%s.4242.1717652311000000.zst" % boot)
    assert got == {"process_name": "my.app/v2", "uid": 1000, "boot_id": boot, "pid": 4242,
                   "core_time": 1717652311.0, "compression": "zstd"}
    # Read from the right: a COMM with literal dots (a hand-made copy) still parses.
    assert spoolmod.parse_name("core.a.b.0.%s.1.2" % boot)["process_name"] == "a.b"
    assert spoolmod.parse_name("core.x.0.%s.1.2.lz4" % boot)["compression"] == "lz4"
    assert spoolmod.parse_name("core.x.0.%s.1.2" % boot)["compression"] is None
    for bad in ("core", "core.1234", "core.x.0.%s.1" % boot, "core.x.0.%s.1.2.gz" % boot,
                "core.x.0.NOTHEX%s.1.2" % boot[6:], "xcore.x.0.%s.1.2" % boot):
        assert spoolmod.parse_name(bad) is None, bad
    assert spoolmod.escape("my.app/v2 x") == "my\\x2eapp\\x2fv2\\x20x"


def test_coredump_dir_reads_names_not_mtimes(spool, spool_run):
    d, manifest = spool
    proc, recs, work = spool_run
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Failed" not in proc.stdout, proc.stdout
    assert set(recs) == set(manifest)
    con = sqlite3.connect(work / "db")
    con.row_factory = sqlite3.Row
    for name, want in manifest.items():
        rec = recs[name]
        assert rec["status"] in ("ok", "seen_before"), rec
        for key in SPOOL_FIELDS:
            if key == "core_time" and want[key] is None:
                continue  # not a systemd name: the file's mtime
            assert rec[key] == want[key], (name, key, rec[key], want[key])
        assert rec["compression"] == want["compression"], name
        row = con.execute("SELECT * FROM cores WHERE sha256 = ?", (rec["sha256"],)).fetchone()
        if rec["status"] == "ok":
            for key in SPOOL_FIELDS:
                if want[key] is not None:
                    assert row[key] == want[key], (name, key)
    # A name that is not systemd's: triaged, its fields null (never guessed), the mtime kept.
    (other,) = [n for n, m in manifest.items() if m["uid"] is None]
    assert recs[other]["status"] == "ok"
    assert all(recs[other][k] is None for k in ("process_name", "uid", "boot_id", "pid"))
    assert recs[other]["core_time"] == os.stat(d / other).st_mtime
    assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "6"
    con.close()
    # No decompressed copy is left behind.
    assert os.listdir(work / "tmp") == []


def test_plain_and_zstd_copies_are_one_core(spool, spool_run):
    d, manifest = spool
    proc, recs, work = spool_run
    chains = [n for n, m in manifest.items() if m["fixture"] == "chain" and m["arch"] == "x86_64"]
    assert len(chains) == 2 and {manifest[n]["compression"] for n in chains} == {None, "zstd"}
    a, b = (recs[n] for n in chains)
    assert a["sha256"] == b["sha256"] and a["bucket"] == b["bucket"]
    assert sorted([a["status"], b["status"]]) == ["ok", "seen_before"]
    con = sqlite3.connect(work / "db")
    assert con.execute("SELECT count FROM buckets WHERE id = ?", (a["bucket"],)).fetchone()[0] == 1
    assert con.execute("SELECT COUNT(*) FROM cores").fetchone()[0] == len(manifest) - 1
    con.close()
    assert "%d analysed, 1 seen before, 0 failed" % (len(manifest) - 1) in proc.stdout


def test_compressed_cores_sign_like_their_plain_originals(tool_env, spool, spool_run, tmp_path):
    d, manifest = spool
    proc, recs, work = spool_run
    originals = sorted({str(ROOT / "cores" / "out" / m["arch"] / (m["fixture"] + ".core"))
                        for m in manifest.values()})
    plain = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", *originals)
    assert plain.returncode in (0, 1), plain.stderr
    by_fixture = {}
    for r in read_jsonl(tmp_path / "o.jsonl"):
        arch, name = r["core"].split("/")[-2], os.path.basename(r["core"])[:-len(".core")]
        by_fixture[(arch, name)] = r
    for name, m in manifest.items():
        orig = by_fixture[(m["arch"], m["fixture"])]
        assert recs[name]["signature"] == orig["signature"], name
        assert recs[name]["sha256"] == orig["sha256"], name  # the decompressed content's key


def test_truncated_compressed_core_fails_with_its_reason(tool_env, spool, tmp_path):
    d, manifest = spool
    (name,) = [n for n, m in manifest.items() if m["compression"] == "xz"
               and m["arch"] == "x86_64"]
    data = (d / name).read_bytes()
    cut = tmp_path / name
    cut.write_bytes(data[:len(data) // 2])
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", cut)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (rec,) = read_jsonl(tmp_path / "o.jsonl")
    assert rec["status"] == "failed" and "xz stream" in rec["error"], rec
    assert rec["pid"] == manifest[name]["pid"]  # the name is still read


def test_html_report_shows_every_core_and_agreeing_counts(spool, spool_run):
    d, manifest = spool
    proc, recs, work = spool_run
    page = (work / "r.html").read_text()
    con = sqlite3.connect(work / "db")
    n_ok = con.execute("SELECT COUNT(*) FROM cores WHERE status = 'ok'").fetchone()[0]
    n_buckets = con.execute("SELECT COUNT(*) FROM buckets WHERE count > 0").fetchone()[0]
    con.close()
    head = re.search(r"(\d+) analysed core\(s\) in (\d+) bucket\(s\), (\d+) failed", page)
    assert head and (int(head.group(1)), int(head.group(2)), int(head.group(3))) == (
        n_ok, n_buckets, 0)
    assert len(re.findall(r'<tr class="bucket" ', page)) == n_buckets
    for name, rec in recs.items():
        if rec["status"] != "ok":
            continue
        row = page.split('<tr class="bucket" data-bucket="%d"' % rec["bucket"])[1]
        row = row.split('<tr class="bucket"')[0]
        assert "<code>%s</code>" % (d / name) in row, name
        assert rec["signal"] is None or rec["signal"]["name"] in row
        m = manifest[name]
        assert ">%s<" % m["arch"] in row
        if m["core_time"] is not None:
            assert '<svg class="trend"' in row
            assert "<code>%s</code>" % m["boot_id"] in row and "<td>%d</td>" % m["pid"] in row
        if rec["partial"]:
            assert 'class="flag partial"' in row, name
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_html_failed_count_is_the_failed_list(tool_env, spool, tmp_path):
    d, manifest = spool
    bad = tmp_path / "in"
    bad.mkdir()
    for i in range(7):
        (bad / ("junk%d.core" % i)).write_bytes(b"\x7fELF" + bytes(60) + b"cut")
    good = next(n for n, m in manifest.items() if m["compression"] == "zstd")
    proc = triage(tool_env, "--db", tmp_path / "db", "--html", tmp_path / "r.html",
                  *[bad / f for f in sorted(os.listdir(bad))], d / good)
    assert proc.returncode == 1
    page = (tmp_path / "r.html").read_text()
    head = re.search(r"(\d+) analysed core\(s\) in (\d+) bucket\(s\), (\d+) failed", page)
    listed = page.count('<li class="fail">')
    assert listed == 7 and int(head.group(3)) == listed and int(head.group(1)) == 1


# ---------------------------------------------------------------------------------------------
# Signatures


def _doc(frames, signal=None, exe="/opt/app", arch="x86_64"):
    return {"signal": signal, "executable": exe, "arch": arch,
            "modules": [{"path": "/opt/app", "build_id": "ab", "file": "/opt/app"}],
            "threads": [{"tid": 1, "crashing": True, "frames": frames}]}


def _f(symbol=None, module="/opt/app", off="0x10", pc="0x7f0000000010"):
    return {"symbol": symbol, "module": module, "module_offset": off, "pc": pc}


LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def test_signature_skips_unnamed_libc_frames_inside_the_reporting_run():
    s = sigmod.Signer()
    frames = [_f(None, LIBC, "0x9183a"), _f("raise", LIBC), _f("abort", LIBC),
              _f("fx_main_abort"), _f("main"), _f("__libc_start_call_main", LIBC),
              _f("__libc_start_main_impl", LIBC), _f("_start")]
    assert s.sign(_doc(frames)) == "fx_main_abort | main"
    # An unnamed frame of the program itself is not crash reporting, nor one no skip-listed
    # frame follows.
    assert s.sign(_doc([_f(None, off="0x44"), _f("abort", LIBC), _f("main")])) == \
        "app+0x44 | abort | main"
    assert s.sign(_doc([_f(None, LIBC, "0x1"), _f("f"), _f("main")])) == \
        "libc.so.6+0x1 | f | main"
    # main's caller is start code even without a name.
    assert s.sign(_doc([_f("f"), _f("main"), _f(None, LIBC, "0x27780")])) == "f | main"
    # Thread start frames are dropped too.
    assert s.sign(_doc([_f("worker"), _f("start_thread", LIBC), _f("clone3", LIBC)])) == "worker"


def test_signature_normalises_compiler_suffixes():
    s = sigmod.Signer()
    frames = [_f("parse.constprop.0.isra.0"), _f("load.cold"), _f("ns::run(int) [clone .cold]"),
              _f("helper.part.1"), _f("g.lto_priv.0"), _f("runtime.mapaccess1.abi0"),
              _f("main")]
    assert s.sign(_doc(frames)) == "parse | load | ns::run(int) | helper | g"
    assert s.sign(_doc(frames[5:])) == "runtime.mapaccess1 | main"


def test_signature_without_names_is_unreliable_and_keyed_by_program():
    s = sigmod.Signer()
    frames = [_f(None, off="0x1148"), _f(None, off="0x1158"), _f(None, module=None,
                                                                  pc="0x5500000990")]
    sig, unreliable = s.sign_with_trust(_doc(frames, exe="/bin/one"))
    assert unreliable and sig == "?one/x86_64: app+0x1148 | app+0x1158 | <unknown>@0x5500000990"
    assert s.sign(_doc(frames, exe="/bin/two")) != sig
    assert s.sign(_doc(frames, exe="/bin/one", arch="s390x")) != sig
    assert s.sign_with_trust(_doc([_f("f")] + frames))[1] is False


FIXTURE_ARCHES = ("x86_64", "aarch64", "s390x", "i386")


def test_mixed_architectures_without_sysroots_never_merge_different_crashes(
        tool_env, fixture_cores, tmp_path):
    """Every fixture core of every architecture, no --sysroot: two cores share a bucket only
    when GDB (with full debug info) names the same crash for both."""
    dirs = [ROOT / "cores" / "out" / a for a in FIXTURE_ARCHES
            if (ROOT / "cores" / "out" / a).is_dir()]
    if len(dirs) < 2:
        pytest.skip("fixture cores of fewer than two architectures")
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", "-j", "2",
                  *dirs, timeout=1200)
    # Libraries and executables are missing for the foreign cores: exit 1, and said so.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Analysed without some of their files" in proc.stdout
    recs = read_jsonl(tmp_path / "o.jsonl")
    buckets = {}
    for r in recs:
        assert r["status"] == "ok", r
        path = r["core"]
        if path.endswith(".dmp"):
            # A minidump (cores/make_minidumps.py) shows the crash of its program's core.
            exp_file = json.loads(open(path + ".json").read())["core_expected"]
        else:
            exp_file = path[:-len(".core")] + ".expected.json"
        exp = json.loads(open(exp_file).read())
        # Physical frames: a signature that counts inlined calls may split a crash more
        # finely than that; this checks only that it never merges two.
        buckets.setdefault(r["bucket"], set()).add(gdb_identity(exp, inlined=False))
        if r["unreliable"]:
            assert r["signature"].startswith(("?", "SIG")) and "?" in r["signature"]
    merged = {b: ids for b, ids in buckets.items() if len(ids) > 1}
    assert not merged, merged
    assert any(r["missing_modules"] for r in recs)
    assert any(r["partial"] for r in recs)


# ---------------------------------------------------------------------------------------------
# --debug-dir reaches the engine


def test_debug_dir_names_the_frames(tool_env, fixture_cores, tmp_path):
    exp = ce.expected_case(fixture_cores, "x86_64", "debugfile", pytest.skip)
    if not exp.get("debug_sysroot"):
        pytest.skip("no debug tree for the debugfile case")
    sysroots = [exp["sysroot"]] if exp["sysroot"] else []
    args = []
    for s in sysroots:
        args += ["--sysroot", s]
    without = triage(tool_env, "--db", tmp_path / "a.db", "--jsonl", tmp_path / "a.jsonl",
                     *args, exp["core"])
    (rec,) = read_jsonl(tmp_path / "a.jsonl")
    assert "fx_" not in rec["signature"], rec["signature"]
    debug = os.path.join(exp["debug_sysroot"], "usr", "lib", "debug")
    with_dir = triage(tool_env, "--db", tmp_path / "b.db", "--jsonl", tmp_path / "b.jsonl",
                      *args, "--debug-dir", debug, exp["core"])
    assert with_dir.returncode in (0, 1), with_dir.stderr
    (rec,) = read_jsonl(tmp_path / "b.jsonl")
    want = gdb_identity(exp)
    assert want and sigmod.SEPARATOR.join(want) in rec["signature"], (rec["signature"], want)
    assert without.returncode in (0, 1)


# ---------------------------------------------------------------------------------------------
# Schema migration


V1_CORES = """CREATE TABLE cores (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL, size INTEGER, executable TEXT, arch TEXT, signal TEXT,
  signal_number INTEGER, signal_code INTEGER, fault_addr TEXT, core_time REAL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), error TEXT, stop_reason TEXT,
  signature TEXT, bucket_id INTEGER REFERENCES buckets(id), analysed_at REAL NOT NULL)"""


def test_version_1_sqlite_store_is_migrated(tool_env, spool, tmp_path):
    d, manifest = spool
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema', '1')")
    con.execute(V1_CORES)
    con.execute("INSERT INTO cores(sha256, path, status, error, analysed_at) "
                "VALUES ('00', '/old.core', 'failed', 'old failure', 1.0)")
    con.commit()
    con.close()
    name = next(n for n, m in manifest.items() if m["compression"] == "lz4")
    proc = triage(tool_env, "--db", db, d / name)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    con = sqlite3.connect(db)
    cols = {r[1] for r in con.execute("PRAGMA table_info(cores)")}
    assert {"process_name", "uid", "boot_id", "pid", "compression", "unreliable",
            "missing_modules", "warnings", "file_id"} <= cols
    assert con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "6"
    # It has a core (a failed one): keyed by version 1, as every store of its time.
    assert con.execute("SELECT value FROM meta WHERE key='content_key'").fetchone()[0] == "1"
    assert con.execute("SELECT error, pid FROM cores WHERE path='/old.core'").fetchone() == (
        "old failure", None)
    assert con.execute("SELECT pid, process_name, compression FROM cores WHERE path = ?",
                       (str(d / name),)).fetchone() == (manifest[name]["pid"],
                                                        manifest[name]["process_name"], "lz4")
    con.close()


# ---------------------------------------------------------------------------------------------
# PostgreSQL: the same columns, and a version-1 store migrated


@pytest.fixture(scope="module")
def postgres(request):
    import scale_services as svc

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg not installed (scripts/install-deps.sh installs python3-psycopg)")
    pg = svc.Postgres(svc.unprivileged_user())
    request.addfinalizer(pg.stop)
    return pg.start()


def test_postgres_store_has_the_spool_columns_and_migrates(tool_env, spool, postgres, tmp_path):
    import psycopg  # noqa: F811 (the fixture checked that it is there)

    d, manifest = spool
    url = postgres.fresh_db("spool")
    with psycopg.connect(url, autocommit=True) as c:  # a store made by schema version 1
        c.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        c.execute("INSERT INTO meta VALUES ('schema', '1')")
        c.execute("CREATE TABLE buckets (id BIGSERIAL PRIMARY KEY, signature TEXT NOT NULL "
                  "UNIQUE, first_seen DOUBLE PRECISION, last_seen DOUBLE PRECISION, count BIGINT "
                  "NOT NULL DEFAULT 0, example_core_id BIGINT)")
        c.execute(V1_CORES.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY")
                  .replace(" REAL", " DOUBLE PRECISION"))
        c.execute("INSERT INTO cores(sha256, path, status, error, analysed_at) "
                  "VALUES ('00', '/old.core', 'failed', 'old failure', 1.0)")
    proc = triage(tool_env, "--coredump-dir", d, "--db", url, "--jsonl", tmp_path / "o.jsonl",
                  "-j", "2")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    recs = {os.path.basename(r["core"]): r for r in read_jsonl(tmp_path / "o.jsonl")}
    with psycopg.connect(url) as c:
        assert c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "6"
        assert c.execute("SELECT value FROM meta WHERE key = 'content_key'").fetchone()[0] == "1"
        plain = [n for n, m in manifest.items() if m["compression"] is None]
        assert plain
        for name in plain:  # the run keyed its cores by version 1 too
            assert recs[name]["sha256"] == content_hash.python_sparse_sha256(d / name, 1), name
        assert c.execute("SELECT error FROM cores WHERE path = '/old.core'").fetchone()[0] == \
            "old failure"
        for name, m in manifest.items():
            if recs[name]["status"] != "ok":
                continue
            row = c.execute("SELECT process_name, uid, boot_id, pid, core_time, compression "
                            "FROM cores WHERE sha256 = %s", (recs[name]["sha256"],)).fetchone()
            if m["uid"] is None:
                assert row[:4] == (None, None, None, None), name
            else:
                assert row[:5] == (m["process_name"], m["uid"], m["boot_id"], m["pid"],
                                   m["core_time"]), name
            assert row[5] == m["compression"], name
        # The plain core and its .zst copy: one core.
        assert c.execute("SELECT COUNT(*) FROM cores WHERE status = 'ok'").fetchone()[0] == \
            len(manifest) - 1


def test_postgres_and_sqlite_stores_have_one_schema(postgres, tmp_path):
    """New stores of both kinds, made by the tool's own code: the same tables, with the same
    columns in the same order, each of a type of the same kind (SQLite's INTEGER is 64 bits,
    PostgreSQL's integer 32, so an INTEGER column may be integer or bigint there), the same
    NOT NULL columns and the same indexes."""
    from ehbt_triage.store import Store
    from ehbt_triage.stores import open_store

    url = postgres.fresh_db("oneschema")
    open_store(url).close()
    Store(str(tmp_path / "s.db")).close()
    lite = sqlite3.connect(tmp_path / "s.db")
    tables = [r[0] for r in lite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    kinds = {"INTEGER": ("integer", "bigint"), "REAL": ("double precision",), "TEXT": ("text",)}
    import psycopg

    with psycopg.connect(url) as pg:
        assert [r[0] for r in pg.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "ORDER BY table_name")] == tables
        for table in tables:
            want = [(r[1], r[2], bool(r[3] or r[5])) for r in
                    lite.execute("PRAGMA table_info(%s)" % table)]
            got = pg.execute("SELECT column_name, data_type, is_nullable = 'NO' FROM "
                             "information_schema.columns WHERE table_name = %s "
                             "ORDER BY ordinal_position", (table,)).fetchall()
            assert [g[0] for g in got] == [w[0] for w in want], table
            for (name, lite_type, lite_not_null), (_, pg_type, pg_not_null) in zip(want, got):
                assert pg_type in kinds[lite_type], (table, name, lite_type, pg_type)
                assert pg_not_null == lite_not_null, (table, name)
        pg_indexes = {r[0] for r in pg.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
            "AND indexname NOT LIKE '%%_pkey' AND indexname NOT LIKE '%%_key'")}
    lite_indexes = {r[0] for r in lite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")}
    lite.close()
    assert pg_indexes == lite_indexes and "frames_thread" in lite_indexes


ABORTS = [(a, n) for a in ("aarch64", "s390x", "x86_64", "i386")
          for n in ("threads", "noreturn", "terminate") if (a, n) in ce.ALL_CASES]


@pytest.mark.parametrize("arch,name", ABORTS, ids=["%s-%s" % c for c in ABORTS])
def test_abort_cores_with_sysroots_start_at_the_programs_frames(tool_env, fixture_cores, arch,
                                                                name, tmp_path):
    """With the libraries found (sysroot) but libc without .symtab, the abort path starts with
    unnamed libc frames (__pthread_kill_implementation): the signature still begins where
    GDB shows the program's own first function, and holds no process-start frame."""
    exp = ce.expected_case(fixture_cores, arch, name, pytest.skip)
    args = ["--sysroot", exp["sysroot"]] if exp["sysroot"] else []
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", *args,
                  exp["core"])
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    (rec,) = read_jsonl(tmp_path / "o.jsonl")
    want = [f for f in gdb_identity(exp) if f != "_start"]
    got = [re.sub(r"\.cold$", "", x) for x in rec["signature"].split(" | ")]
    assert got[:len(want)] == want, (rec["signature"], want)
    assert not rec["unreliable"]
    assert not any(x in rec["signature"] for x in ("__libc_start", "_start", "start_thread"))
    if "main" in want:  # nothing below main, named or not
        assert rec["signature"].endswith("main"), rec["signature"]


def test_debuginfod_fetches_the_missing_executable(tool_env, fixture_cores, tmp_path):
    """A real debuginfod server (test_debuginfod's) serving the buildid case's executable,
    which is missing where its core names it: with --debuginfod the signature names GDB's
    functions; without a server the core is keyed by offsets, unreliable, and exit 1."""
    import test_debuginfod as dbg

    if shutil.which("debuginfod") is None:
        pytest.skip("debuginfod not installed (scripts/install-deps.sh installs it)")
    exp = ce.expected_case(fixture_cores, "x86_64", "buildid", pytest.skip)
    gen = dbg.server.__wrapped__(fixture_cores, _Factory(tmp_path))
    url = next(gen)
    try:
        env = dict(tool_env, **{k: v for k, v in dbg.env_for(url, tmp_path / "cache").items()
                               if k.startswith("DEBUGINFOD")})
        proc = triage(env, "--db", tmp_path / "a.db", "--jsonl", tmp_path / "a.jsonl",
                      "--debuginfod", exp["core"])
    finally:
        gen.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (rec,) = read_jsonl(tmp_path / "a.jsonl")
    assert rec["signature"].split(" ", 1)[1].startswith(" | ".join(gdb_identity(exp))), rec
    assert not rec["unreliable"] and not rec["missing_modules"]
    env = {k: v for k, v in tool_env.items() if not k.startswith("DEBUGINFOD")}
    proc = triage(env, "--db", tmp_path / "b.db", "--jsonl", tmp_path / "b.jsonl", exp["core"])
    assert proc.returncode == 1 and "Analysed without some of their files" in proc.stdout
    (rec,) = read_jsonl(tmp_path / "b.jsonl")
    assert rec["unreliable"] and rec["missing_modules"], rec


class _Factory:
    """The one method of pytest's tmp_path_factory the server fixture uses."""

    def __init__(self, base):
        self.base = base

    def mktemp(self, name):
        d = self.base / name
        d.mkdir()
        return d


@pytest.mark.parametrize("fmt", ["zstd", "xz", "lz4", "gzip"])
def test_decompressed_copy_is_sparse_and_keyed_like_the_original(tmp_path, fmt, monkeypatch):
    """plain_core on a 256 MiB file that is mostly holes: the key equals the original's
    content key, the copy holds only the data blocks on disk, and it is gone when closed."""
    from ehbt_triage import content_hash
    from ehbt_triage.plain_core import PlainCore

    if shutil.which({"xz": "xz"}.get(fmt, fmt)) is None:
        pytest.skip("%s not installed" % fmt)
    orig = tmp_path / "sparse.core"
    with open(orig, "wb") as f:
        f.write(b"\x7fELF" + bytes(range(256)) * 64)
        for mib in (3, 77, 200):
            f.seek(mib << 20)
            f.write(os.urandom(100000))  # crosses 64 KiB blocks
        f.truncate(256 << 20)
    packed = tmp_path / "sparse.core.packed"
    cmd = {"zstd": ["zstd", "-q", "-c"], "xz": ["xz", "-c", "-T1", "-0"],
           "lz4": ["lz4", "-q", "-c"], "gzip": ["gzip", "-c", "-1"]}[fmt]
    with open(packed, "wb") as out:
        subprocess.run(cmd + [str(orig)], stdout=out, check=True)
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with PlainCore(str(packed)) as plain:
        assert plain.compression == fmt and plain.path != str(packed)
        assert os.listdir(tmp) == []  # never linked into a directory: gone with the worker
        assert content_hash.sparse_sha256(plain.path) == content_hash.sparse_sha256(str(orig))
        st = os.stat(plain.path)
        assert st.st_size == 256 << 20
        assert st.st_blocks * 512 < 4 << 20  # ~0.4 MiB of data, not 256 MiB
    assert plain._file is None and os.listdir(tmp) == []
