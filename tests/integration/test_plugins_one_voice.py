# SPDX-License-Identifier: Apache-2.0
"""One voice: on the same fixture core, GDB's `ehbt`, LLDB's `ehbt` and the CLI (`ehbt core`)
print the same frame lines, signal-frame line, stop line and thread headers, and the same
ehbt-backtrace/1 document, field by field (docs/gdb.md and docs/lldb.md list the only
differences allowed, checked here as such).

The CLI is the reference; each debugger is given the same inputs (the core, its executable,
the debug-file directory where the case has one)."""

import json
import re
import subprocess

import pytest

import cores_expect as ce
import ehbt_py as h
from test_lldb_plugin import LLDB, run_lldb

pytestmark = pytest.mark.usefixtures("built")

# Cores with a signal frame, several threads, a stop before the outermost frame, a call to a
# noreturn function, a C++ terminate, and a separate debug file; and i386 qemu cores (32-bit
# registers and addresses, both i386 signal frame layouts, libraries through a sysroot).
CASES = [("x86_64", n) for n in ("chain", "sighandler", "threads", "smashed", "noreturn",
                                 "terminate", "debugfile")]
CASES += [("i386", n) for n in ("chain", "sighandler", "siginfo", "threads", "noreturn")]


@pytest.fixture(scope="module")
def built(build_dir):
    h.import_ehbt(build_dir)
    h.need_gdb()


def fixture(arch, name):
    exp_path = ce.expected_path(arch, name)
    assert exp_path.exists(), "no fixture core (run cores/make-cores.sh %s)" % arch
    exp = ce.load_expected(arch, name)
    debug_dir = "%s/usr/lib/debug" % exp["debug_sysroot"] if exp.get("debug_sysroot") else None
    return exp, debug_dir


def cli(ehbt_bin, exp, debug_dir, json_out):
    cmd = [str(ehbt_bin), "core", exp["core"], "--all-threads"]
    if exp.get("sysroot"):
        cmd += ["--sysroot", exp["sysroot"]]
    if json_out:
        cmd.append("--json")
    if debug_dir:
        cmd += ["--debug-dir", debug_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def gdb_output(build_dir, exp, debug_dir, tmp_path):
    """(text of `ehbt -all`, text of `ehbt -all -json`) from GDB."""
    pre = ["set debug-file-directory %s" % debug_dir] if debug_dir else []
    if exp.get("sysroot"):
        pre.append("set sysroot " + exp["sysroot"])
    pre += ["file " + exp["exe_file"], "core " + exp["core"]]
    files = {k: tmp_path / ("gdb-%s.out" % k) for k in ("text", "json")}
    commands = ["python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (str(f), c)
                for f, c in ((files["text"], "ehbt -all"), (files["json"], "ehbt -all -json"))]
    out = h.run_gdb(build_dir, [], pre + commands)
    assert all(f.exists() for f in files.values()), out[-3000:]
    return files["text"].read_text(), files["json"].read_text()


def lldb_output(build_dir, exp, debug_dir, tmp_path):
    pre = ["settings set target.debug-file-search-paths %s" % debug_dir] if debug_dir else []
    pre.append("target create %s --core %s" % (exp["exe_file"], exp["core"]))
    files = {k: tmp_path / ("lldb-%s.out" % k) for k in ("text", "json")}
    # LLDB alone finds no libraries of a qemu core (it names no files): the engine is given
    # the sysroot, as the CLI is.
    sysroot = " --sysroot %s" % exp["sysroot"] if exp.get("sysroot") else ""
    out = run_lldb(build_dir, tmp_path, [
        "ehbt_test_capture %s ehbt --all%s" % (files["text"], sysroot),
        "ehbt_test_capture %s ehbt --all --json%s" % (files["json"], sysroot)], pre=pre)
    assert all(f.exists() for f in files.values()), out[-3000:]
    return files["text"].read_text(), files["json"].read_text()


def thread_lines(text):
    """The lines every front end must print alike: thread headers, frames, stop lines."""
    keep = re.compile(r"^(Thread \d+.*:|#\d+ +.*|Backtrace stopped: .*)$")
    return [line for line in text.splitlines() if keep.match(line)]


def the_document(text):
    """The one JSON line of a plugin's output (GDB may print its own notes before it)."""
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert len(lines) == 1, text[-2000:]
    assert lines[0].endswith("}"), "not one compact line: " + text[-2000:]
    return json.loads(lines[0])


def module_key(m):
    return m["path"]


def compare_documents(want, got, who):
    """Field-by-field differences between the CLI's document and a plugin's."""
    errors = []
    for key in sorted(set(want) | set(got)):
        if key in ("modules", "threads"):
            continue
        if key == "warnings" and key not in want and got.get(key) == []:
            continue  # a CLI older than its "warnings" list: nothing to warn about here
        if want.get(key, "<absent>") != got.get(key, "<absent>"):
            errors.append("%s %s: %r != CLI %r" % (who, key, got.get(key, "<absent>"),
                                                   want.get(key, "<absent>")))
    cli_modules = {module_key(m): m for m in want["modules"]}
    for m in got["modules"]:
        ref = cli_modules.get(module_key(m))
        if ref is None:
            errors.append("%s module %s: not in the CLI's list" % (who, m["path"]))
        elif ref != m:
            errors.append("%s module %s: %r != CLI %r" % (who, m["path"], m, ref))
    missing = set(cli_modules) - {module_key(m) for m in got["modules"]}
    if missing:
        errors.append("%s: modules missing: %s" % (who, sorted(missing)))
    want_threads = {t["tid"]: t for t in want["threads"]}
    got_threads = {t["tid"]: t for t in got["threads"]}
    if set(want_threads) != set(got_threads):
        errors.append("%s threads %s != CLI %s" % (who, sorted(got_threads), sorted(want_threads)))
    for tid in set(want_threads) & set(got_threads):
        w, g = want_threads[tid], got_threads[tid]
        if set(w) != set(g):
            errors.append("%s thread %d keys %s != CLI %s" % (who, tid, sorted(g), sorted(w)))
        for key in ("crashing", "stop_reason", "stop_detail"):
            if w.get(key) != g.get(key):
                errors.append("%s thread %d %s: %r != CLI %r" % (who, tid, key, g.get(key),
                                                                 w.get(key)))
        if len(w["frames"]) != len(g["frames"]):
            errors.append("%s thread %d: %d frames, CLI %d" % (who, tid, len(g["frames"]),
                                                               len(w["frames"])))
        for wf, gf in zip(w["frames"], g["frames"]):
            if wf != gf:
                errors.append("%s thread %d frame %d: %r != CLI %r" % (who, tid, wf["index"],
                                                                       gf, wf))
    return errors


@pytest.mark.parametrize("arch,name", CASES, ids=["%s-%s" % c for c in CASES])
def test_same_text_and_json_as_the_cli(build_dir, ehbt_bin, tmp_path, arch, name):
    exp, debug_dir = fixture(arch, name)
    want_text = thread_lines(cli(ehbt_bin, exp, debug_dir, json_out=False))
    want_doc = json.loads(cli(ehbt_bin, exp, debug_dir, json_out=True))
    assert want_text and want_doc["threads"]
    gdb_text, gdb_json = gdb_output(build_dir, exp, debug_dir, tmp_path)
    lldb_text, lldb_json = lldb_output(build_dir, exp, debug_dir, tmp_path)
    assert thread_lines(gdb_text) == want_text, gdb_text
    assert thread_lines(lldb_text) == want_text, lldb_text
    errors = compare_documents(want_doc, the_document(gdb_json), "gdb")
    errors += compare_documents(want_doc, the_document(lldb_json), "lldb")
    assert not errors, "\n".join(errors)
    if name in ("sighandler", "siginfo"):
        assert any(line.endswith("<signal handler called>") for line in want_text), want_text
    if name == "debugfile":
        # The stripped executable's functions are named and unwound from its debug file, found
        # through the directory each debugger was told about.
        (crashing,) = [t for t in want_doc["threads"] if t["crashing"]]
        names = [f["symbol"] for f in crashing["frames"]]
        assert names[:4] == ["fx_level3", "fx_level2", "fx_level1", "main"], names


def test_lldb_is_installed():
    import shutil

    assert shutil.which(LLDB), "lldb-16 is not installed (scripts/install-deps.sh lists it)"


def test_live_breakpoint_same_document_in_gdb_and_lldb(build_dir, tmp_path):
    """The same program stopped at the same breakpoint (both debuggers disable ASLR, so the
    code addresses agree): GDB's and LLDB's documents differ only in the pid, the tid and the
    CFAs (each debugger gives the program another environment, which moves its stack). Both
    name the
    process by "pid" and give the stop's real signal (the breakpoint's SIGTRAP)."""
    exe = h.compile_chain(tmp_path / "chain")
    gdb_file, lldb_file = tmp_path / "gdb.json", tmp_path / "lldb.json"
    out = h.run_gdb(build_dir, [exe], [
        "break bottom", "run",
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(gdb_file),
        "kill"])
    assert gdb_file.exists(), out[-3000:]
    out = run_lldb(build_dir, tmp_path, [
        "breakpoint set -n bottom", "process launch",
        "ehbt_test_capture %s ehbt --json" % lldb_file, "process kill"],
        pre=["target create %s" % exe])
    assert lldb_file.exists(), out[-3000:]
    docs = [the_document(f.read_text()) for f in (gdb_file, lldb_file)]
    for doc in docs:
        assert "core" not in doc and doc["pid"] > 0
        assert doc["signal"]["name"] == "SIGTRAP", doc["signal"]
        (thread,) = doc["threads"]
        assert thread["crashing"] is True
        doc.pop("pid")
        thread.pop("tid")
        for frame in thread["frames"]:
            frame.pop("cfa")
    assert docs[0] == docs[1]


def test_python_report_of_a_live_process_has_the_clis_keys(build_dir, ehbt_bin, tmp_path):
    """ehbt.target_report of a live process names it by "pid" (no "core"), as
    `ehbt pid PID --json` does: the same top-level and thread keys."""
    import time

    ehbt = h.import_ehbt(build_dir)
    proc = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.3)  # let it reach its nanosleep
        cli_doc = json.loads(subprocess.run([str(ehbt_bin), "pid", str(proc.pid), "--json"],
                                            capture_output=True, text=True,
                                            timeout=60).stdout)
        target = ehbt.attach_process(proc.pid)
        try:
            doc = ehbt.target_report(target).to_dict()
        finally:
            target.close()
    finally:
        proc.kill()
        proc.wait()
    assert doc["pid"] == cli_doc["pid"] == proc.pid and "core" not in doc
    # stopped_us is how long `ehbt pid` itself kept the process stopped: only the CLI, which
    # attaches and detaches on its own, can say it (formats.md).
    assert "stopped_us" in cli_doc and "stopped_us" not in doc
    assert set(doc) == set(cli_doc) - {"stopped_us"}
    assert set(doc["threads"][0]) - {"name"} == set(cli_doc["threads"][0])
    assert doc["executable"] == cli_doc["executable"]


# ---- one option vocabulary (ehbt.frontend's table) ---------------------------------------------
# The CLI's long options work in both plugins, each host's own spellings stay as aliases, and
# the same command line gives the same output however it is spelled.

VOCAB_CASE = ("x86_64", "threads")  # several threads, one crashing
# Each group: spellings of one command, which must print exactly the same thing.
GDB_FORMS = [
    ["ehbt -all -n 3 -json", "ehbt --all-threads --max-frames 3 --json",
     "ehbt --all-threads --max-frames=3 --json"],
    ["ehbt -all -n 3", "ehbt --all-threads --max-frames 3"],
    ["ehbt -full -n 2", "ehbt --full --max-frames 2"],
    ["ehbt -compare", "ehbt --compare"],
    ["ehbt -version", "ehbt --version"],
]
LLDB_FORMS = [
    ["ehbt -a -c 3 -j", "ehbt --all --count 3 --json", "ehbt --all-threads --max-frames 3 --json",
     "ehbt --all-threads --max-frames=3 --json", "ehbt --all --count=3 -j"],
    ["ehbt -a -c 3", "ehbt --all-threads --max-frames 3"],
]
# The same errors, word for word, in both plugins (one line each).
SHARED_ERRORS = {
    "ehbt --sysroot /nonexistent/root": "ehbt: --sysroot /nonexistent/root: no such directory",
    "ehbt --debug-dir /nonexistent/dbg": "ehbt: --debug-dir /nonexistent/dbg: no such directory",
    "ehbt --exe /nonexistent/exe": "ehbt: --exe /nonexistent/exe: no such file",
    "ehbt --core /nonexistent/core": "ehbt: --core /nonexistent/core: no such file",
    "ehbt --source bogus":
        "ehbt: --source expects auto, eh_frame, sframe or frame_pointer, not 'bogus'",
    "ehbt --all-threads --thread 1": "ehbt: --all-threads and --thread exclude each other",
    "ehbt --thread 1": "ehbt: no thread 1 in this process",
    "ehbt --max-frames 0": "ehbt: --max-frames expects a number between 1 and 4294967295, not 0",
    "ehbt --json=yes": "ehbt: unknown argument '--json=yes' (see 'help ehbt')",
}


def gdb_capture(build_dir, exp, commands, tmp_path, tag="g"):
    """{command: what `ehbt ...` printed, or "ERROR <message>"} from one GDB session."""
    pre = ["file " + exp["exe_file"], "core " + exp["core"]]
    out_file = tmp_path / ("%s.json" % tag)
    script = tmp_path / ("%s.gdb" % tag)
    script.write_text(
        # GDB warns once, into the first command's output, about a core's register notes it
        # finds too small (`.reg-xstate` on AMD CPUs): it reads every thread's first.
        "python\nimport json\ngdb.execute('thread apply all p $pc', to_string=True)\n"
        "out = {}\nfor c in %r:\n    try:\n"
        "        out[c] = gdb.execute(c, to_string=True)\n"
        "    except gdb.error as e:\n        out[c] = 'ERROR ' + str(e)\n"
        "open(%r, 'w').write(json.dumps(out))\nend\n" % (list(commands), str(out_file)))
    text = h.run_gdb(build_dir, [], pre + ["source %s" % script])
    assert out_file.exists(), text[-3000:]
    return json.loads(out_file.read_text())


def lldb_capture(build_dir, exp, commands, tmp_path, tag="l"):
    """{command: what `ehbt ...` printed, or "ERROR <message>"} from one LLDB session."""
    files = [tmp_path / ("%s-%d.out" % (tag, i)) for i in range(len(commands))]
    text = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s %s" % (f, c)
                                          for f, c in zip(files, commands)],
                    pre=["target create %s --core %s" % (exp["exe_file"], exp["core"])])
    out = {}
    for f, c in zip(files, commands):
        assert f.exists(), text[-3000:]
        got = f.read_text()
        out[c] = "ERROR " + got.strip()[len("error: "):] if got.startswith("error: ") else got
    return out


def frames_of(doc):
    """{tid: ([(pc, symbol)], stop_reason)} of a document."""
    return {t["tid"]: ([(f["pc"], f.get("symbol")) for f in t["frames"]], t["stop_reason"])
            for t in doc["threads"]}


def test_every_spelling_prints_the_same(build_dir, tmp_path):
    exp, _ = fixture(*VOCAB_CASE)
    gdb = gdb_capture(build_dir, exp, [c for group in GDB_FORMS for c in group], tmp_path)
    lldb = lldb_capture(build_dir, exp, [c for group in LLDB_FORMS for c in group], tmp_path)
    for got, groups in ((gdb, GDB_FORMS), (lldb, LLDB_FORMS)):
        for group in groups:
            first = got[group[0]]
            assert first.strip() and not first.startswith("ERROR"), (group[0], first)
            for other in group[1:]:
                assert got[other] == first, (other, got[other], group[0], first)
    # The short and the long spellings of the same JSON command agree across the debuggers.
    assert frames_of(the_document(gdb[GDB_FORMS[0][0]])) == \
        frames_of(the_document(lldb[LLDB_FORMS[0][0]]))
    assert "GDB and ehbt agree on all" in gdb["ehbt --compare"]


def test_cli_long_options_give_the_clis_frames(build_dir, ehbt_bin, tmp_path):
    """The CLI's own option words, given to each plugin, select the same threads and frames
    as `ehbt core CORE <same words> --json`."""
    exp, _ = fixture(*VOCAB_CASE)
    other = [t["tid"] for t in exp["threads"] if not t["crashing"]][0]
    lines = ["--all-threads --max-frames 3", "--thread %d --source eh_frame" % other,
             "--thread %d --max-frames 2 --source frame_pointer" % other]
    commands = ["ehbt %s --json" % words for words in lines]
    gdb = gdb_capture(build_dir, exp, commands, tmp_path)
    lldb = lldb_capture(build_dir, exp, commands, tmp_path)
    for words, command in zip(lines, commands):
        proc = subprocess.run([str(ehbt_bin), "core", exp["core"]] + words.split() + ["--json"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr
        want = frames_of(json.loads(proc.stdout))
        assert want and all(frames for frames, _ in want.values()), proc.stdout
        assert frames_of(the_document(gdb[command])) == want, (command, gdb[command])
        assert frames_of(the_document(lldb[command])) == want, (command, lldb[command])
    # --thread names one thread, not the crashing one: exactly that thread is printed.
    assert list(frames_of(the_document(gdb[commands[1]]))) == [other]


def test_same_usage_errors_in_both_plugins(build_dir, tmp_path):
    exp, _ = fixture(*VOCAB_CASE)
    gdb = gdb_capture(build_dir, exp, list(SHARED_ERRORS), tmp_path)
    lldb = lldb_capture(build_dir, exp, list(SHARED_ERRORS), tmp_path)
    for command, message in SHARED_ERRORS.items():
        for who, got in (("gdb", gdb[command]), ("lldb", lldb[command])):
            assert got.strip() == "ERROR " + message, (who, command, got)


def option_words(text):
    """The long options an option list names: `--word` at the start of a list entry."""
    return {m for m in re.findall(r"^\s*(--[a-z][a-z-]*)", text, re.M)}


def doc_options(path):
    """The option words of a doc's "Options" section (the fenced block under it)."""
    text = path.read_text()
    section = text.split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1]
    return option_words(block), block


def test_help_and_docs_list_the_same_options(build_dir, tmp_path):
    """`help ehbt` in GDB and in LLDB, docs/gdb.md and docs/lldb.md list one set of long
    options, which holds every option of the CLI the plugins take (from `ehbt core --help`)."""
    gdb_help = h.run_gdb(build_dir, [], ["help ehbt"])
    lldb_help = run_lldb(build_dir, tmp_path, ["help ehbt"])
    gdb_set, lldb_set = option_words(gdb_help), option_words(lldb_help)
    gdb_doc, gdb_block = doc_options(h.ROOT / "docs" / "gdb.md")
    lldb_doc, lldb_block = doc_options(h.ROOT / "docs" / "lldb.md")
    assert gdb_set == lldb_set == gdb_doc == lldb_doc, (gdb_set, lldb_set, gdb_doc, lldb_doc)
    cli_words = {"--json", "--all-threads", "--thread", "--max-frames", "--sysroot",
                 "--debug-dir", "--exe", "--source"}
    assert cli_words <= gdb_set, cli_words - gdb_set
    # The docs' blocks are the help's option lines, word for word (regenerate them with
    # `python3 -m ehbt.frontend gdb|lldb`).
    for block, helptext in ((gdb_block, gdb_help), (lldb_block, lldb_help)):
        for line in block.splitlines():
            assert line in helptext.splitlines(), line
