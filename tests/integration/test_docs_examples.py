# SPDX-License-Identifier: Apache-2.0
"""Every command example in docs/*.md and README.md runs, so the docs cannot go stale.

The fenced code blocks are read; each line that starts (after an optional `$ ` prompt) with
`ehbt `, `ehbt-triage `, `sqlite3 `, `(gdb) ` or `(lldb) ` is an example. Its placeholders
(CORE, DIR, PID, ...) are replaced through the explicit table in world(), by fixture cores,
temporary directories and a live process this test starts; a token still spelled in capitals
afterwards is an unknown placeholder and FAILS the test, so that a new example with a new
placeholder is either mapped here or fixed in the docs. Lines with `[`, ` | ` or `...` are
synopses: they are not run, but every option they name must be in that command's --help.

What is checked: an `ehbt`/`ehbt-triage` example exits 0 (or the status EXPECTED_STATUS
gives, with the reason), never 2 (a usage error: an option the program does not accept) or a
crash; a sqlite3 query runs on the store an ehbt-triage example made; a (gdb)/(lldb) line runs
after the plugin is loaded on a fixture core without any error message. SKIP is the only way
out, each entry with its reason."""
import difflib
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
X86 = ROOT / "cores" / "out" / "x86_64"
CHAIN_CORE = X86 / "chain.core"
CHAIN_EXE = X86 / "bin" / "chain"
GDB_PLUGIN = ROOT / "plugins" / "gdb" / "ehbt.py"
LLDB_PLUGIN = ROOT / "plugins" / "lldb" / "ehbt_lldb.py"
TRIAGE = ROOT / "triage" / "ehbt-triage"
# The fixture cores a spool directory of the examples holds (all unwind completely).
SPOOL_CORES = ["chain", "noreturn", "sighandler"]

PREFIXES = ("ehbt ", "ehbt-triage ", "sqlite3 ", "(gdb) ", "(lldb) ")

# Examples not run, each with why. Matched against the example line as written in the docs.
SKIP = {
    "ehbt-triage --scheduler tcp://HOST:8786 --db postgresql://USER@DBHOST/DB /srv/cores/":
        "needs a dask.distributed cluster and a PostgreSQL server "
        "(test_triage_scale.py runs both on this machine)",
    "ehbt-triage --scheduler tcp://HOST:8786 --db postgresql://triage@DBHOST/triage /spool/cores":
        "needs a dask.distributed cluster and a PostgreSQL server "
        "(test_triage_scale.py runs both on this machine)",
    "ehbt-triage watch --scheduler tcp://HOST:8786 --db /var/lib/ehbt-triage/store.sqlite "
    "/srv/spool":
        "a resident process, and needs a dask.distributed cluster "
        "(test_triage_watch.py runs one against a cluster on this machine)",
}

# Exit status other than 0 that an example is documented to give, with why.
EXPECTED_STATUS = {}


def fenced_lines(path):
    """(line number, text) of every line inside a fenced code block of a Markdown file."""
    inside = False
    for number, line in enumerate(path.read_text().split("\n"), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if inside:
            yield number, line


def quotes_open(text):
    """Whether a shell line ends inside a quoted string (a query written over several lines)."""
    try:
        shlex.split(text, comments=True)
        return False
    except ValueError:
        return True


def examples():
    """(doc name, line number, example text) of every example, in document order."""
    found = []
    for path in DOCS:
        lines = list(fenced_lines(path))
        i = 0
        while i < len(lines):
            number, line = lines[i]
            text = line.strip()
            prompt = text.startswith("$ ")
            if prompt:
                text = text[2:]
            i += 1
            if not text.startswith(PREFIXES):
                continue
            if text.startswith("sqlite3 "):
                while quotes_open(text) and i < len(lines):
                    text += "\n" + lines[i][1].strip()
                    i += 1
            found.append((path.relative_to(ROOT).as_posix(), number, text))
            if prompt:  # the lines up to the block's end or the next prompt: its output
                shown = []
                while (i < len(lines) and lines[i][0] == number + 1 + len(shown)
                       and not lines[i][1].startswith("$ ")):
                    shown.append(lines[i][1])
                    i += 1
                if shown:
                    DOCUMENTED_OUTPUT[text] = shown
    return found


# The output a `$ COMMAND` example shows in its block, by example text.
DOCUMENTED_OUTPUT = {}


def normalized(lines):
    """Output lines with what differs between two runs of one core made out: addresses, thread
    ids, and the directories of paths (the fixture was made in another checkout)."""
    out = []
    for line in lines:
        line = re.sub(r"0x[0-9a-f]+", "0x…", line)
        line = re.sub(r"\bThread \d+", "Thread N", line)
        line = re.sub(r"(?<![\w.])[\w./-]*/([\w.+-]+)", r"\1", line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


EXAMPLES = examples()


def is_synopsis(text):
    return "[" in text or " | " in text or "..." in text


def strip_comment(text):
    return re.sub(r"\s+#\s.*$", "", text)


# --- the world the examples run in -------------------------------------------------------

def chain_tid():
    """The tid of the chain core's crashing thread, from GDB's record of it (make_cores.py)."""
    expected = json.loads(CHAIN_CORE.with_suffix(".expected.json").read_text())
    return next(t["tid"] for t in expected["threads"] if t["crashing"])


@pytest.fixture(scope="module")
def world(build_dir, tmp_path_factory):
    """A working directory (relative outputs such as crashes.sqlite land there), a spool of
    fixture cores, a systemd-coredump spool, a compressed core, a perf map and a live
    process, and the placeholder table that maps the docs' names onto them."""
    for name in SPOOL_CORES:
        assert (X86 / f"{name}.core").exists(), "fixture cores missing: bash cores/make-cores.sh"
    base = tmp_path_factory.mktemp("docs-examples")
    work = base / "work"
    work.mkdir()
    spool = base / "spool"
    spool.mkdir()
    for name in SPOOL_CORES:
        os.symlink(X86 / f"{name}.core", spool / f"{name}.core")
    coredump = base / "coredump"
    coredump.mkdir()
    # systemd-coredump's name: core.COMM.UID.BOOTID.PID.USEC, compressed with zstd.
    named = coredump / "core.chain.1000.0123456789abcdef0123456789abcdef.4242.1764720000000000"
    subprocess.run(["zstd", "-q", "-o", str(named) + ".zst", str(CHAIN_CORE)], check=True)
    compressed = base / "compressed-chain.core.zst"
    shutil.copy(str(named) + ".zst", compressed)
    empty = base / "empty-dir"
    empty.mkdir()
    live = subprocess.Popen(["sleep", "600"])
    perf_map = base / f"perf-{live.pid}.map"
    perf_map.write_text("7f0000001000 100 LazyCompile:~handler app.js:1\n")
    table = {
        "CORE": str(CHAIN_CORE),
        "core.app.1000.ID.PID.TIME.zst": str(compressed),
        "DIR": str(empty),
        "PID": str(live.pid),
        "perf-PID.map": str(perf_map),
        "/srv/cores/": str(spool),
        "/srv/crash-spool/": str(spool),
        "/var/lib/systemd/coredump": str(coredump),
        "FILE": str(CHAIN_CORE),  # (lldb) ehbt --core FILE
        "PREFIX/share/ehbt/gdb/ehbt.py": str(GDB_PLUGIN),
        "/usr/local/share/ehbt/gdb/ehbt.py": str(GDB_PLUGIN),
        "PREFIX/share/ehbt/lldb/ehbt_lldb.py": str(LLDB_PLUGIN),
        "/usr/local/share/ehbt/lldb/ehbt_lldb.py": str(LLDB_PLUGIN),
        "COMMAND": "core",  # ehbt COMMAND --help
        # (gdb)/(lldb) ehbt --thread TID: the chain core's one thread, as its GDB record says.
        "TID": str(chain_tid()),
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = str(build_dir / "engine" / "python")
    env["EHBT_PYTHONPATH"] = str(build_dir / "engine" / "python")
    env["EHBT_BIN"] = str(build_dir / "engine" / "tools" / "ehbt")
    env.pop("DEBUGINFOD_URLS", None)
    yield {"work": work, "table": table, "env": env, "build": build_dir}
    live.send_signal(signal.SIGKILL)
    live.wait()


def substitute(tokens, table):
    """The tokens with every placeholder replaced; fails on a placeholder the table lacks."""
    out = []
    for token in tokens:
        if token in table:
            out.append(table[token])
            continue
        if "/" in token and not token.startswith("/") and (ROOT / token).exists():
            token = str(ROOT / token)  # a path in the source tree, as run from its root
        if "=" in token and token.startswith("-"):
            key, _, value = token.partition("=")
            token = key + "=" + table.get(value, value)
        for name, value in table.items():
            if name.startswith("/") or "." in name:
                token = token.replace(name, value)
        unknown = re.findall(r"\b[A-Z][A-Z_]+\b", token)
        assert not unknown, (f"unknown placeholder {unknown} in {token!r}: "
                             "map it in the table of world()")
        out.append(token)
    return out


def program(name, build_dir):
    if name == "ehbt":
        return [str(build_dir / "engine" / "tools" / "ehbt")]
    if name == "ehbt-triage":
        return [sys.executable, str(TRIAGE)]
    return [name]


def run(argv, world, timeout=300):
    proc = subprocess.run(argv, cwd=world["work"], env=world["env"], capture_output=True,
                          text=True, timeout=timeout)
    return proc


def ensure_store(world):
    """crashes.sqlite as the triage examples make it (the sqlite3 examples query it)."""
    db = world["work"] / "crashes.sqlite"
    if not db.exists():
        proc = run(program("ehbt-triage", world["build"]) +
                   ["--db", str(db), world["table"]["/srv/cores/"]], world)
        assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the examples ------------------------------------------------------------------------

def example_id(example):
    doc, number, text = example
    return f"{doc}:{number}"


def help_text(name, sub, world):
    argv = program(name, world["build"]) + ([sub] if sub else []) + ["--help"]
    proc = run(argv, world)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check_synopsis(text, world):
    words = text.split()
    name = words[0]
    sub = words[1] if len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]) else None
    if name == "ehbt" and sub in ("dump", "convert", "check"):
        sub = None
    if name == "ehbt" and words[1:2] == ["sframe"]:
        sub = "sframe"
    known = help_text(name, sub, world)
    options = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text))
    missing = [o for o in options if not re.search(r"(?<![\w-])" + re.escape(o) + r"\b", known)]
    assert not missing, f"options of the synopsis not in `{name} {sub or ''} --help`: {missing}"


def run_shell_example(text, world):
    tokens = shlex.split(text, comments=True)
    argv = substitute(tokens, world["table"]) if tokens[0] != "sqlite3" else None
    if tokens[0] == "sqlite3":  # the database is mapped; the query is SQL, not placeholders
        argv = ["sqlite3"] + substitute(tokens[1:-1], world["table"]) + tokens[-1:]
        ensure_store(world)
        proc = run(argv, world)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        return
    proc = run(program(argv[0], world["build"]) + argv[1:], world)
    expected = EXPECTED_STATUS.get(text, 0)
    assert proc.returncode == expected, (
        f"{argv} exited {proc.returncode}, the docs imply {expected}:\n"
        + proc.stdout[-2000:] + proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    if text in DOCUMENTED_OUTPUT:
        shown = normalized(DOCUMENTED_OUTPUT[text])
        actual = normalized(proc.stdout.split("\n"))
        assert actual == shown, "the docs show another output for %s:\n%s" % (
            text, "\n".join(difflib.unified_diff(shown, actual, "docs", "ehbt", lineterm="")))


DEBUGGER_ERRORS = re.compile(r"Undefined command|Python Exception|^error:|^ehbt: |Traceback"
                             r"|No symbol table|not found", re.M)


def run_gdb_example(command, world):
    command = " ".join(substitute(command.split(" "), world["table"]))
    argv = ["gdb", "-nx", "-batch", "-ex", "source %s" % GDB_PLUGIN]
    if not command.startswith("source "):
        argv += ["-ex", command]
    argv += [str(CHAIN_EXE), str(CHAIN_CORE)]
    proc = run(argv, world)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and not DEBUGGER_ERRORS.search(out), out[-3000:]


def run_lldb_example(command, world):
    command = " ".join(substitute(command.split(" "), world["table"]))
    argv = ["lldb-16", "-b", "--no-lldbinit", "-o",
            "target create %s --core %s" % (CHAIN_EXE, CHAIN_CORE),
            "-o", "command script import %s" % LLDB_PLUGIN]
    if not command.startswith("command script import "):
        argv += ["-o", command]
    proc = run(argv, world)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and not DEBUGGER_ERRORS.search(out), out[-3000:]


def test_examples_are_found():
    """The extraction finds the examples the docs are known to have (a broken parser would
    otherwise make every other test here vacuous)."""
    docs = {doc for doc, _, _ in EXAMPLES}
    assert {"README.md", "docs/cli.md", "docs/triage.md", "docs/gdb.md",
            "docs/lldb.md"} <= docs, docs
    assert len(EXAMPLES) >= 40, len(EXAMPLES)
    stale = [line for line in list(SKIP) + list(EXPECTED_STATUS)
             if line not in {strip_comment(text) for _, _, text in EXAMPLES}]
    assert not stale, f"SKIP/EXPECTED_STATUS name examples the docs no longer have: {stale}"


@pytest.mark.parametrize("example", EXAMPLES, ids=example_id)
def test_example(example, world):
    doc, number, text = example
    text = strip_comment(text)
    if text in SKIP:
        pytest.skip(SKIP[text])
    if text.startswith("(gdb) "):
        run_gdb_example(text[len("(gdb) "):], world)
    elif text.startswith("(lldb) "):
        run_lldb_example(text[len("(lldb) "):], world)
    elif is_synopsis(text):
        check_synopsis(text, world)
    else:
        run_shell_example(text, world)


# --- whole blocks: debugger init files and the Python example -----------------------------

def fenced_blocks(path):
    """(first line number, language, lines) of every fenced block of a Markdown file."""
    blocks, current = [], None
    for number, line in enumerate(path.read_text().split("\n"), 1):
        if line.lstrip().startswith("```"):
            if current is None:
                current = (number + 1, line.strip()[3:], [])
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current[2].append(line)
    return blocks


def init_files():
    """(doc, line, debugger, text) of every block the docs give as ~/.gdbinit or ~/.lldbinit
    content: a first line naming the file, or GDB's `python` ... `end` guard."""
    found = []
    for path in DOCS:
        for number, _, lines in fenced_blocks(path):
            head = lines[0].strip() if lines else ""
            debugger = ("gdb" if "~/.gdbinit" in head or (head == "python" and "ehbt.py" in
                                                          "\n".join(lines))
                        else "lldb" if "~/.lldbinit" in head else None)
            if debugger:
                found.append((path.relative_to(ROOT).as_posix(), number, debugger,
                              "\n".join(lines)))
    return found


INIT_FILES = init_files()


def test_init_files_are_found():
    assert {(doc, debugger) for doc, _, debugger, _ in INIT_FILES} >= {
        ("docs/gdb.md", "gdb"), ("docs/lldb.md", "lldb")}, INIT_FILES


@pytest.mark.parametrize("block", INIT_FILES, ids=lambda b: f"{b[0]}:{b[1]}")
def test_init_file(block, world, tmp_path):
    """The block, its plugin path mapped, as the debugger's init file: `ehbt` then works."""
    doc, number, debugger, text = block
    for name, value in world["table"].items():
        if name.startswith("/usr/local/share/ehbt/"):
            text = text.replace(name, value)
    unknown = re.findall(r"/usr/local/\S+", text)
    assert not unknown, f"unmapped path {unknown}: add it to the table of world()"
    init = tmp_path / ("gdbinit" if debugger == "gdb" else "lldbinit")
    init.write_text(text + "\n")
    if debugger == "gdb":
        argv = ["gdb", "-nx", "-batch", "-x", str(init), "-ex", "ehbt", str(CHAIN_EXE),
                str(CHAIN_CORE)]
    else:
        argv = ["lldb-16", "-b", "--no-lldbinit", "-o",
                "target create %s --core %s" % (CHAIN_EXE, CHAIN_CORE), "-s", str(init),
                "-o", "ehbt"]
    proc = run(argv, world)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and not DEBUGGER_ERRORS.search(out), out[-3000:]
    # fx_level3 is a frame of ehbt's trace (with lines, the one fx_null_write is inlined into).
    assert re.search(r"^#\d+ +(0x[0-9a-f]+ in )?fx_level3 \(\)", out, re.M), out[-3000:]


def test_python_api_example(world, tmp_path):
    """docs/python-api.md's program, on the chain core, prints what the sentence after it
    says: the frames' names in order and the stop reason."""
    path = ROOT / "docs" / "python-api.md"
    blocks = [lines for _, lang, lines in fenced_blocks(path) if lang == "python"]
    assert blocks, "no python block in docs/python-api.md"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks[0]) + "\n")
    sentence = re.search(r"On the `chain` fixture core this prints (.*?)\.\n\n",
                         path.read_text(), re.S)
    assert sentence, "the sentence saying what the example prints is gone"
    promised = re.findall(r"`([^`]+)`", sentence.group(1))
    assert len(promised) >= 3, promised
    proc = run([sys.executable, str(script), str(CHAIN_CORE)], world)
    assert proc.returncode == 0, proc.stderr
    position = 0
    for item in promised:
        found = proc.stdout.find(item, position)
        assert found >= 0, f"{item!r} not printed (in that order):\n{proc.stdout}"
        position = found + len(item)


def anchors(path):
    """GitHub's anchors for a Markdown file's headings."""
    names = set()
    for line in path.read_text().split("\n"):
        m = re.match(r"^#+\s+(.*)$", line)
        if m:
            title = re.sub(r"[^\w\- ]", "", m.group(1).lower())
            names.add(title.replace(" ", "-"))
    return names


def test_links_resolve():
    """Every relative link of the docs names a file that exists, and a heading of it."""
    broken = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append(f"{path.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{path.name}: {target} (no such heading)")
    assert not broken, broken


def test_store_schema_table(world):
    """docs/triage.md's table of the store names every column of every table of a store an
    example made (a new column must be documented)."""
    ensure_store(world)
    rows = {}
    for line in (ROOT / "docs" / "triage.md").read_text().split("\n"):
        m = re.match(r"^\| `(\w+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2)))
    db = str(world["work"] / "crashes.sqlite")
    tables = run(["sqlite3", db, "SELECT name FROM sqlite_master WHERE type = 'table'"],
                 world).stdout.split()
    assert tables and set(tables) <= set(rows), (tables, sorted(rows))
    for table in tables:
        columns = run(["sqlite3", db, f"SELECT name FROM pragma_table_info('{table}')"],
                      world).stdout.split()
        missing = [c for c in columns if c not in rows[table]]
        assert not missing, f"columns of {table} not in docs/triage.md's table: {missing}"
