# SPDX-License-Identifier: Apache-2.0
"""One report for every front end: each fixture core rendered by the CLI (`ehbt core
--all-threads`, `--json`) and by the Python module (`ehbt.target_report(...)`, and a Report
put together the way a debugger plugin does it) must give the same text byte for byte and the
same document field for field. The CLI is the reference: its output is what users and
docs/formats.md promise; the Python side must not drift from it."""
import glob
import json
import pathlib
import subprocess

import pytest

import ehbt_py

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORES = sorted(glob.glob(str(ROOT / "cores" / "out" / "*" / "*.core")))
TIMEOUT = 120


@pytest.fixture(scope="module")
def ehbt(build_dir):
    return ehbt_py.import_ehbt(build_dir)


def cli(ehbt_bin, *args):
    return subprocess.run([str(ehbt_bin), *args], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=ROOT)


def relative(path):
    """The core as the tests name it to both front ends (the report prints it as given)."""
    return str(pathlib.Path(path).relative_to(ROOT))


def open_target(ehbt, path):
    try:
        return ehbt.open_core(str(ROOT / path))
    except ehbt.Error as e:
        pytest.skip("unusable core %s: %s" % (path, e))


def test_there_are_fixture_cores():
    assert len(CORES) >= 20, "cores/out holds the fixture cores (scripts in cores/)"


@pytest.mark.parametrize("core", [relative(c) for c in CORES])
def test_cli_and_python_render_the_same_report(ehbt, ehbt_bin, core):
    text = cli(ehbt_bin, "core", core, "--all-threads")
    doc = cli(ehbt_bin, "core", core, "--all-threads", "--json")
    assert text.returncode in (0, 1), text.stderr
    target = open_target(ehbt, core)
    try:
        report = ehbt.target_report(target, threads="all", core=core)
    finally:
        target.close()
    # Text: byte for byte, and the exit status the CLI derives from the same stops.
    assert report.text() == text.stdout
    assert report.exit_status == text.returncode == doc.returncode
    # JSON: field for field, and byte for byte as the CLI indents it.
    assert report.to_dict() == json.loads(doc.stdout)
    assert report.json() == doc.stdout
    # Compact: the same document on one line, as Python's json.dumps spells it (fixture paths
    # and names are ASCII, so ensure_ascii changes nothing).
    compact = report.json(compact=True)
    assert compact.count("\n") == 1 and compact.endswith("\n")
    assert compact[:-1] == json.dumps(json.loads(doc.stdout), separators=(",", ":"))
    assert json.loads(compact) == report.to_dict()


@pytest.mark.parametrize("core", [relative(c) for c in CORES])
def test_a_report_put_together_like_a_plugin_is_the_same(ehbt, ehbt_bin, core):
    """What a debugger front end does -- its own walks, added thread by thread to a Report
    with the target's modules, signal and warnings -- renders what the CLI prints for the
    crashing thread (header off: the debugger commands print thread blocks only)."""
    target = open_target(ehbt, core)
    try:
        whole = ehbt.target_report(target, core=core)
        index = target.crashing_thread if target.crashing_thread < len(target.threads) else 0
        thread = target.threads[index]
        report = ehbt.Report(target.arch, core=core, executable=target.executable,
                             input_format=target.input_format)
        sig = target.signal
        if sig is not None:
            # A signal a process sent (abort's tgkill) names its sender, not an address.
            sender = sig.sender
            report.set_signal(sig.number, sig.code, sig.address,
                              sender_pid=sender.pid if sender else None,
                              sender_uid=sender.uid if sender else None)
        report.set_modules(target.modules)
        for w in target.warnings:
            report.add_warning(w)
        report.add_thread(thread.tid, target.unwind_thread(index),
                          crashing=target.signal is not None, name=thread.name)
    finally:
        target.close()
    assert report.to_dict() == whole.to_dict()
    text = cli(ehbt_bin, "core", core).stdout
    assert report.text() == whole.text() == text
    # The thread blocks alone: what follows the header's "Signal:" line.
    assert report.text(header=False) == text[text.index("\n\nThread ") + 1:]
    [t] = report.threads
    assert t.text() == report.text(header=False)
    # A frame with calls inlined at its pc is several lines (GDB's frames), numbered on.
    assert [line for f in t.frames for line in f.text().splitlines()] == [
        line for line in report.text(header=False).splitlines()[2:]
        if not line.startswith("Backtrace stopped:")]


def test_symbol_fallback_is_asked_only_where_the_engine_has_none(ehbt):
    target = open_target(ehbt, relative(next(c for c in CORES if c.endswith("x86_64/chain.core"))))
    try:
        bt = target.unwind_thread(target.crashing_thread)
        asked = []

        def symbol_of(frame):
            asked.append(frame.pc)
            return ("from_the_debugger", frame.pc - 0x10)

        report = ehbt.Report("x86_64")
        report.add_thread(1, bt, symbol_of=symbol_of)
        plain = ehbt.Report("x86_64")
        plain.add_thread(1, bt)
    finally:
        target.close()
    named = {f.pc for f in plain.threads[0].frames if f.symbol is not None}
    unnamed = [f.pc for f in plain.threads[0].frames
               if f.symbol is None and not f.signal_trampoline]
    assert named, "the chain fixture's own functions have symbols"
    assert asked == unnamed
    for f, g in zip(report.threads[0].frames, plain.threads[0].frames):
        if g.symbol is None and not g.signal_trampoline:
            assert (f.symbol, f.symbol_offset) == ("from_the_debugger", 0x10)
            assert " in from_the_debugger () " in f.text() + " "
        else:
            assert (f.symbol, f.symbol_offset) == (g.symbol, g.symbol_offset)


def test_names_come_from_the_engine(ehbt):
    # <signal.h> (Linux) and the psABIs' DWARF register numbers.
    assert ehbt.describe_signal(11, 1, 0) == "SIGSEGV, SEGV_MAPERR at 0x0"
    assert ehbt.describe_signal(6, -6) == "SIGABRT, SI_TKILL"
    assert ehbt.describe_signal(11) == "SIGSEGV"
    assert ehbt.signal_code_name(7, 2) == "BUS_ADRERR"
    assert ehbt.signal_code_name(11, 99) is None
    assert ehbt.register_name("x86_64", 7) == "rsp"
    assert ehbt.register_name("i386:x86-64", 16) == "rip"
    assert ehbt.register_name("aarch64", 31) == "sp"
    assert ehbt.register_name("s390x", 15) == "r15"
    assert ehbt.register_name(ehbt.Arch.I386, 4) == "esp"
    names, pc, sp = ehbt.general_registers("aarch64")
    assert (len(names), names["x29"], pc, sp) == (32, 29, "pc", "sp")
    for spelled, arch in [("i386:x86-64", "x86_64"), ("s390:64-bit", "s390x"),
                          ("aarch64", "aarch64"), ("arm64", "aarch64"), ("i386:intel", "i386"),
                          ("x86_64-pc-linux-gnu", "x86_64"), ("i686", "i386")]:
        assert str(ehbt.Arch.from_name(spelled)) == arch, spelled
    with pytest.raises(ValueError):
        ehbt.Arch.from_name("mips")
    assert ehbt.STOP_REASONS[:2] == ("outermost", "max_frames")
    assert "go_pclntab" in ehbt.FRAME_SOURCES


def test_a_front_ends_own_warning_is_kind_other(ehbt):
    report = ehbt.Report("x86_64", pid=42, executable="/bin/x")
    report.add_warning("the debugger could not read the auxv")
    doc = report.to_dict()
    assert doc["pid"] == 42 and "core" not in doc
    assert doc["warnings"] == [{"kind": "other", "message": "the debugger could not read the "
                                "auxv", "path": None, "option": None}]
    # Neither a core nor a process: the document still names its "core" (null).
    assert ehbt.Report("i386").to_dict()["core"] is None


def test_to_dict_reads_strings_as_json_does(ehbt):
    """Report.to_dict builds the document without its JSON text: a name or path from a core
    that is not UTF-8 must come out as json.loads reads the text's \\u00XX escapes (each such
    byte the code point of its value), valid UTF-8 as it is. Expected strings by hand."""
    core = b"/c\xff\xc3(\xed\xa0\x80z"  # U+00FF, a truncated sequence, a surrogate
    exe = b"/x\xe2\x82\xac\xf4\x90\x80\x80\x00\n"  # a euro sign, then above U+10FFFF
    report = ehbt.Report("x86_64", core=core, executable=exe)
    doc = report.to_dict()
    assert doc == json.loads(report.json()) == json.loads(report.json(compact=True))
    assert doc["core"] == "/c\u00ff\u00c3(\u00ed\u00a0\u0080z"
    assert doc["executable"] == "/x\u20ac\u00f4\u0090\u0080\u0080\x00\n"
    assert type(doc["threads"]) is list and doc["signal"] is None
