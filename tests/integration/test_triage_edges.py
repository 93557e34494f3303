# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage's rough edges (issue #30): broken compressed cores fail at once with a clean
reason, option paths that do not exist are usage errors, the store names cores by absolute
paths, and the package's modules import each other without a cycle.

Expected values come from outside the tool: the compressed files are made (and cut) here with
the formats' own tools, whose exit statuses say that the streams are broken; the paths are
the ones this test creates; the import graph is read from the source with `ast`.
"""

import ast
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

import cores_expect as ce
from test_triage import ROOT, read_jsonl, tool_env, triage  # noqa: F401

PACKAGE = ROOT / "triage" / "ehbt_triage"
COMPRESS = {"zstd": ["zstd", "-q", "-c"], "xz": ["xz", "-c", "-T1"], "gzip": ["gzip", "-c"],
            "lz4": ["lz4", "-q", "-c"]}
DECOMPRESS = {"zstd": ["zstd", "-d", "-c", "-q"], "xz": ["xz", "-d", "-c", "-q"],
              "gzip": ["gzip", "-d", "-c", "-q"], "lz4": ["lz4", "-d", "-c", "-q"]}
# A hang detector, not a speed target: a broken core used to cost the whole --timeout (60 s).
PROMPT = 20.0


@pytest.fixture(scope="module")
def chain(fixture_cores):
    """The x86_64 `chain` fixture core's expected case (core path, sysroot)."""
    return ce.expected_case(fixture_cores, "x86_64", "chain", pytest.skip)


def _packed(core, fmt, path):
    if shutil.which(COMPRESS[fmt][0]) is None:
        pytest.skip("%s not installed" % fmt)
    with open(path, "wb") as out:
        subprocess.run(COMPRESS[fmt] + [str(core)], stdout=out, check=True)
    return path


def _broken_by_its_tool(fmt, path):
    """Whether the format's own tool refuses the file (the independent word that it is
    broken); the reason must then be the tool's, not the input's name or the tool's noise."""
    with open(path, "rb") as f:
        proc = subprocess.run(DECOMPRESS[fmt], stdin=f, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    return proc.returncode != 0


def _clean_reason(reason, path):
    """One line that names neither the core (its own column) nor stdin, in no tool's voice."""
    assert "\n" not in reason, reason
    assert str(path) not in reason and os.path.basename(str(path)) not in reason, reason
    assert "stdin" not in reason and "/*" not in reason and "*\\" not in reason, reason
    for tool in ("zstd:", "xz:", "gzip:", "lz4:", "ehbt:", "Error "):
        assert not reason.startswith(tool), reason


def _run_one(env, tmp_path, core, *extra, extra_env=None):
    db, out = tmp_path / "db", tmp_path / "o.jsonl"
    start = time.monotonic()
    proc = triage(env, "--db", db, "--jsonl", out, "--timeout", "60", *extra, core,
                  extra_env=extra_env, timeout=300)
    elapsed = time.monotonic() - start
    return proc, elapsed, read_jsonl(out)


# ---------------------------------------------------------------------------------------------
# Broken compressed cores: failed at once, with a reason that says so


@pytest.mark.parametrize("fmt", sorted(COMPRESS))
@pytest.mark.parametrize("decompressor", ["tool", "engine"])
def test_truncated_compressed_core_fails_at_once(tool_env, chain, tmp_path, fmt, decompressor):
    """A fixture core compressed by the format's tool and cut to half: failed well before the
    60 s --timeout, as truncated, stored under its path. `tool`: ehbt-triage decompresses it
    with the tool on PATH (the content key needs the plain core); `engine`: no tool on PATH,
    the engine decompresses it itself."""
    whole = _packed(chain["core"], fmt, tmp_path / "whole")
    data = whole.read_bytes()
    cut = tmp_path / ("chain.core." + fmt)
    cut.write_bytes(data[:len(data) // 2])
    assert _broken_by_its_tool(fmt, cut)
    extra_env = None
    if decompressor == "engine":
        empty = tmp_path / "no-tools"
        empty.mkdir()
        extra_env = {"PATH": str(empty)}
    proc, elapsed, recs = _run_one(tool_env, tmp_path, cut, extra_env=extra_env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert elapsed < PROMPT, "%.1f s for one broken core (--timeout 60)" % elapsed
    (rec,) = recs
    assert rec["status"] == "failed" and rec["core"] == str(cut), rec
    assert "truncated" in rec["error"] and fmt in rec["error"], rec["error"]
    assert "timed out" not in rec["error"]
    _clean_reason(rec["error"], cut)
    if decompressor == "tool":
        assert re.fullmatch(r"corrupt or truncated %s stream: [a-z][^:/\\]* "
                            r"\(\d+ bytes decompressed\)" % fmt, rec["error"]), rec["error"]
    # The text report shows the same reason once, after the path.
    assert "  %s: %s\n" % (cut, rec["error"]) in proc.stdout, proc.stdout


@pytest.mark.parametrize("fmt", ["gzip", "xz"])
def test_corrupt_compressed_core_reason_is_one_clean_line(tool_env, chain, tmp_path, fmt):
    """Bytes flipped in the middle of the stream (the tools print `gzip: stdin: ...` and
    `xz: (stdin): ...`): the reason says corrupt, without the tool's prefix or stdin."""
    data = bytearray(_packed(chain["core"], fmt, tmp_path / "whole").read_bytes())
    mid = len(data) // 3
    for i in range(mid, mid + 256):
        data[i] ^= 0x5A
    bad = tmp_path / ("chain.core." + fmt)
    bad.write_bytes(bytes(data))
    assert _broken_by_its_tool(fmt, bad)
    proc, elapsed, (rec,) = _run_one(tool_env, tmp_path, bad)
    assert proc.returncode == 1 and elapsed < PROMPT, (elapsed, proc.stdout + proc.stderr)
    assert rec["status"] == "failed" and rec["error"].startswith(
        "corrupt or truncated %s stream: " % fmt), rec
    _clean_reason(rec["error"], bad)
    assert "  %s: %s\n" % (bad, rec["error"]) in proc.stdout, proc.stdout


@pytest.mark.parametrize("engine", ["python", "cli"])
def test_engine_reason_does_not_repeat_the_path(tool_env, chain, tmp_path, engine):
    """A plain core cut inside its program headers: the engine says so as `CORE: why` (and
    the CLI as `ehbt: CORE: why`); the reason keeps only the why."""
    cut = tmp_path / "cut.core"
    cut.write_bytes(open(chain["core"], "rb").read(200))  # the ELF header and a little more
    proc, elapsed, (rec,) = _run_one(tool_env, tmp_path, cut,
                                     extra_env={"EHBT_TRIAGE_ENGINE": engine})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert rec["status"] == "failed" and rec["error"], rec
    _clean_reason(rec["error"], cut)
    assert "  %s: %s\n" % (cut, rec["error"]) in proc.stdout, proc.stdout


# ---------------------------------------------------------------------------------------------
# Option paths that do not exist


@pytest.mark.parametrize("option,kind", [("--sysroot", "missing"), ("--debug-dir", "missing"),
                                         ("--sysroot", "file"), ("--debug-dir", "file")])
def test_option_directory_that_is_not_one_is_a_usage_error(tool_env, chain, tmp_path, option,
                                                           kind):
    where = tmp_path / "nowhere"
    if kind == "file":
        where.write_text("not a directory\n")
    proc = triage(tool_env, "--db", tmp_path / "db", option, where, chain["core"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    why = "no such directory" if kind == "missing" else "not a directory"
    assert proc.stderr == "ehbt-triage: error: %s %s: %s\n" % (option, where, why)
    assert proc.stdout == "" and not (tmp_path / "db").exists()  # nothing was started


def test_exe_is_not_an_option_of_triage(tool_env, chain, tmp_path):
    """ehbt-triage has no --exe (a batch's cores come from many programs): naming one is a
    usage error that names it, not an option taken and ignored."""
    proc = triage(tool_env, "--db", tmp_path / "db", "--exe", tmp_path / "nope", chain["core"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == "ehbt-triage: error: unrecognized arguments: --exe", proc.stderr
    assert not (tmp_path / "db").exists()


# ---------------------------------------------------------------------------------------------
# Absolute paths in the store, the JSONL and the HTML


def test_paths_typed_relative_are_stored_absolute(tool_env, chain, tmp_path):
    """Run from one directory with relative paths (a core, a directory of cores, a sysroot,
    the outputs); the store, JSONL and HTML name each core by its absolute path, and so does
    a report made from another directory."""
    work = tmp_path / "work"
    (work / "spool" / "sub").mkdir(parents=True)
    (work / "sysroot").mkdir()
    shutil.copy(chain["core"], work / "one.core")
    shutil.copy(chain["core"], work / "spool" / "sub" / "copy.core")  # seen before
    (work / "spool" / "broken.core").write_bytes(open(chain["core"], "rb").read(200))  # failed
    args = ["--db", "store.sqlite", "--jsonl", "out.jsonl", "--html", "report.html"]
    if chain["sysroot"]:
        args += ["--sysroot", os.path.relpath(chain["sysroot"], work)]
    args += ["--sysroot", "sysroot", "-j", "1", "one.core", "spool"]
    proc = triage(tool_env, *args, cwd=work)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    want = {str(work / "one.core"), str(work / "spool" / "sub" / "copy.core"),
            str(work / "spool" / "broken.core")}
    recs = read_jsonl(work / "out.jsonl")
    assert {r["core"] for r in recs} == want
    assert sorted(r["status"] for r in recs) == ["failed", "ok", "seen_before"], recs
    con = sqlite3.connect(work / "store.sqlite")
    stored = {r[0] for r in con.execute("SELECT path FROM cores")}
    con.close()
    assert stored == {str(work / "one.core"), str(work / "spool" / "broken.core")}
    page = (work / "report.html").read_text()
    assert "<code>%s</code>" % (work / "one.core") in page
    assert "<code>%s</code>" % (work / "spool" / "broken.core") in page
    assert "database <code>%s</code>" % (work / "store.sqlite") in page
    # From elsewhere, every path the store gives still resolves.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = triage(tool_env, "report", "--db", work / "store.sqlite", "--html", "r.html",
                  cwd=elsewhere)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    paths = re.findall(r"<code>(/[^<]*\.core)</code>", (elsewhere / "r.html").read_text())
    assert paths and all(os.path.exists(p) for p in paths), paths


# ---------------------------------------------------------------------------------------------
# The package's import graph


def _imports(path, module):
    """The ehbt_triage modules `module` (the file at `path`) imports, anywhere in it (also
    inside functions: an import done late still closes a circle)."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and (node.module or "").split(".")[0] == "ehbt_triage":
                base = node.module[len("ehbt_triage"):].lstrip(".") or None
            else:
                continue
            if base:
                found.add(base.split(".")[0])
            else:  # from . import a, b
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ehbt_triage" and len(parts) > 1:
                    found.add(parts[1])
    return found - {module}


def _cycle(graph):
    """One import cycle of `graph` as a list of modules (first == last), or None."""
    state = {}
    stack = []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_cycle_finder_finds_a_cycle():
    """The check below can fail: a circle through three modules is found."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_every_module_imports_and_the_import_graph_has_no_cycle(tool_env):
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert {"cli", "run", "recent", "report_html", "store", "store_pg"} <= set(modules)
    # Each imported by a fresh interpreter, alone (an import order that only works after some
    # other module was loaded is found too).
    for m in modules:
        proc = subprocess.run([sys.executable, "-c", "import ehbt_triage.%s" % m],
                              env=dict(tool_env, PYTHONPATH=os.pathsep.join(
                                  [str(PACKAGE.parent), tool_env.get("PYTHONPATH", "")])),
                              capture_output=True, text=True)
        assert proc.returncode == 0, (m, proc.stderr)
    graph = {m: _imports(PACKAGE / (m + ".py"), m) for m in modules}
    unknown = {n for deps in graph.values() for n in deps} - set(modules) - {"_version"}
    assert not unknown, unknown  # the walk read every import as a module of the package
    assert graph["store_pg"] >= {"store", "schema"} and "run" in graph["cli"]
    assert _cycle(graph) is None, "import cycle: %s" % " -> ".join(_cycle(graph))


# ---------------------------------------------------------------------------------------------
# One schema for both stores


def test_sqlite_store_has_the_one_schema(tmp_path):
    """A new SQLite store's tables and columns are schema.TABLES's, in order, each column of
    the declared SQLite type; the PostgreSQL side is checked against a live server in
    test_triage_spool.py."""
    sys.path.insert(0, str(PACKAGE.parent))
    from ehbt_triage import schema
    from ehbt_triage.store import Store

    Store(str(tmp_path / "s.db")).close()
    con = sqlite3.connect(tmp_path / "s.db")
    for table, cols in schema.TABLES:
        got = [(r[1], r[2]) for r in con.execute("PRAGMA table_info(%s)" % table)]
        assert got == [(c.name, {"id": "INTEGER", "ref": "INTEGER", "int": "INTEGER",
                                 "bigint": "INTEGER", "real": "REAL", "text": "TEXT"}[c.kind])
                       for c in cols], table
    indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                         "AND name NOT LIKE 'sqlite_%'")}
    assert indexes == {name for name, _, _ in schema.INDEXES}
    con.close()
    # The PostgreSQL DDL differs from SQLite's in the spelling of types only.
    pg = schema.ddl("postgresql")
    for pg_type, sqlite_type in (("BIGSERIAL PRIMARY KEY", "INTEGER PRIMARY KEY"),
                                 ("BIGINT", "INTEGER"), ("DOUBLE PRECISION", "REAL")):
        pg = pg.replace(" %s" % pg_type, " %s" % sqlite_type)
    assert pg == schema.ddl("sqlite")
