# SPDX-License-Identifier: Apache-2.0
"""Every fixture core of every architecture unwound through SFrame alone, the tables converted
in memory from each module's .eh_frame (`ehbt core --source sframe --sframe-from-eh-frame
--sframe-version 2|3`): the frames must equal the expected ones (recorded from GDB, compared
with cores_expect.py exactly as test_cores.py does), except where SFrame cannot express a
frame's unwind rule in that version.

Those exceptions are listed by hand in INEXPRESSIBLE below, each with the reason. A listed
frame must stop the walk (the crashing thread's walk ends at that frame with no_unwind_info,
the detail naming the reason, every frame before it as expected); an unlisted frame must
unwind. So the list can neither grow nor shrink silently.

Also: the programs of tests/fixtures/sframe (x86-64), whose .sframe sections binutils wrote,
unwound live from their own .sframe (ehbt pid --source sframe / auto).
"""

import json
import subprocess
import time

import pytest

import cores_expect as ce

VERSIONS = (2, 3)

# (arch, core, SFrame version, index of the last frame the walk reaches, a text the stop
# detail must contain) -> why SFrame cannot express that frame's rule.
INEXPRESSIBLE = {
    # GCC realigns fx_drap_realign's stack through a DRAP register: its CFA is r10 + 0 in the
    # prologue and [rbp - 8] (DW_CFA_def_cfa_expression) in the body. V2 can only base the
    # CFA on SP or FP with an offset; V3's flexible FDEs express both (no entry for V3).
    ("x86_64", "drap", 2, 1, "not expressible in SFrame V2: CFA based on r10"):
        "DRAP: CFA based on a register other than SP/FP, then dereferenced; needs V3",
    # fx_nounwind_crash is compiled with -fno-asynchronous-unwind-tables: no .eh_frame FDE,
    # so nothing to convert (the default walk takes the frame-pointer fallback there).
    ("x86_64", "nounwind", 2, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    ("x86_64", "nounwind", 3, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    ("aarch64", "nounwind", 2, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    ("aarch64", "nounwind", 3, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    ("s390x", "nounwind", 2, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    ("s390x", "nounwind", 3, 0, "no .eh_frame FDE to convert"): "no FDE at all",
    # debugfile is built without unwind tables: its rows are only in the separate debug
    # file's .debug_frame, which the conversion (from .eh_frame) does not read.
    ("x86_64", "debugfile", 2, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    ("x86_64", "debugfile", 3, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    ("aarch64", "debugfile", 2, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    ("aarch64", "debugfile", 3, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    ("s390x", "debugfile", 2, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    ("s390x", "debugfile", 3, 0, "no .eh_frame FDE to convert"): "rows only in .debug_frame",
    # The linker writes no FDE for the aarch64 and s390x .plt (x86-64's has one): the default
    # walk steps a PLT stub like a function entry, SFrame alone has no row for it.
    ("aarch64", "pltcrash", 2, 0, "no .eh_frame FDE to convert"): "no FDE for .plt",
    ("aarch64", "pltcrash", 3, 0, "no .eh_frame FDE to convert"): "no FDE for .plt",
    ("s390x", "pltcrash", 2, 0, "no .eh_frame FDE to convert"): "no FDE for .plt",
    ("s390x", "pltcrash", 3, 0, "no .eh_frame FDE to convert"): "no FDE for .plt",
}

# SFrame defines no i386 ABI (V2 and V3 have amd64, aarch64 and s390x only): no table of an
# i386 module is made, checked by test_i386_has_no_sframe below.
CASES = [(a, n, v) for a, n in ce.ALL_CASES for v in VERSIONS if a != "i386"]


def expected_or_fail(fixture_cores, arch, name):
    return ce.expected_case(fixture_cores, arch, name, pytest.fail)


def listed_cut(arch, name, version):
    """(frame index, detail text) when the list says this walk stops early, else None."""
    cuts = [(k[3], k[4]) for k in INEXPRESSIBLE if k[:3] == (arch, name, version)]
    assert len(cuts) <= 1, "two entries for %s/%s V%d" % (arch, name, version)
    return cuts[0] if cuts else None


def check_cut(exp_t, got_t, frame, text, where):
    """The walk reaches exactly frames 0..frame as expected and stops there, saying why."""
    head = dict(exp_t)
    head["frames"] = exp_t["frames"][:frame + 1]
    head["compare_frames"] = frame + 1
    head["stop"] = "listed"  # no stop rule of cores_expect: checked below
    errors = ce.compare_thread(head, got_t, where)
    if len(got_t["frames"]) != frame + 1:
        errors.append("%s: %d frames, the list says the walk stops at frame %d (%s: %s)" % (
            where, len(got_t["frames"]), frame, got_t.get("stop_reason"),
            got_t.get("stop_detail")))
    if got_t.get("stop_reason") != "no_unwind_info" or text not in got_t.get("stop_detail", ""):
        errors.append("%s: stop %s (%s), the list says no_unwind_info with %r" % (
            where, got_t.get("stop_reason"), got_t.get("stop_detail"), text))
    return errors


@pytest.mark.parametrize("arch,name,version", CASES, ids=["%s-%s-v%d" % c for c in CASES])
def test_core_through_converted_sframe(ehbt_bin, fixture_cores, arch, name, version):
    exp = expected_or_fail(fixture_cores, arch, name)
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe, extra=[
        "--source", "sframe", "--sframe-from-eh-frame", "--sframe-version", str(version)])
    where = "%s/%s V%d" % (arch, name, version)
    cut = listed_cut(arch, name, version)
    if cut is None:
        errors = ce.compare(exp, doc, rc)
    else:
        errors = []
        got = {t["tid"]: t for t in doc["threads"]}
        want = {t["tid"]: t for t in exp["threads"]}
        if set(got) != set(want):
            errors.append("%s: threads %s, expected %s" % (where, sorted(got), sorted(want)))
        for tid, exp_t in want.items():
            if tid not in got:
                continue
            w = "%s thread %d" % (where, tid)
            if exp_t["crashing"]:
                errors += check_cut(exp_t, got[tid], cut[0], cut[1], w)
            else:
                errors += ce.compare_thread(exp_t, got[tid], w)
        if rc != 1:
            errors.append("%s: exit status %d, expected 1 (a walk stops early)" % (where, rc))
    # SFrame only: every frame a table found is tagged sframe; trampolines are stepped by their
    # bytes (signal).
    for t in doc["threads"]:
        for f in t["frames"][1:]:
            if f["source"] not in ("sframe", "signal"):
                errors.append("%s thread %d frame %d: source %s" % (where, t["tid"], f["index"],
                                                                    f["source"]))
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("version", VERSIONS)
def test_i386_has_no_sframe(ehbt_bin, fixture_cores, version):
    """An i386 core through SFrame alone: frame 0 from the context, then a stop that says why
    no table exists (the format names no i386 ABI) instead of claiming a missing row, exit 1."""
    exp = expected_or_fail(fixture_cores, "i386", "chain")
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe, extra=[
        "--source", "sframe", "--sframe-from-eh-frame", "--sframe-version", str(version)])
    (thread,) = doc["threads"]
    assert rc == 1 and len(thread["frames"]) == 1, thread
    assert thread["frames"][0]["pc"] == exp["threads"][0]["frames"][0]["pc"]
    assert thread["stop_reason"] == "no_unwind_info", thread
    assert "SFrame defines no ABI for i386" in thread["stop_detail"], thread


def test_list_entries_name_real_cases():
    """Every entry of the list names a fixture core and a version this test runs."""
    for key in INEXPRESSIBLE:
        assert (key[0], key[1]) in ce.ALL_CASES, key
        assert key[2] in VERSIONS, key


def test_auto_prefers_converted_sframe_and_falls_back(ehbt_bin, fixture_cores):
    """--source auto with V2 tables: the DRAP function's caller comes from .eh_frame, every
    frame is as expected."""
    exp = expected_or_fail(fixture_cores, "x86_64", "drap")
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe, extra=[
        "--sframe-from-eh-frame", "--sframe-version", "2"])
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    frames = [t for t in doc["threads"] if t["crashing"]][0]["frames"]
    assert frames[1]["source"] == "sframe", frames[1]
    assert frames[2]["source"] == "eh_frame", frames[2]  # stepped from fx_drap_realign
    assert {f["source"] for f in frames[3:]} <= {"sframe"}, [f["source"] for f in frames]


def test_cli_rejects_bad_sframe_options(ehbt_bin, fixture_cores):
    exp = expected_or_fail(fixture_cores, "x86_64", "chain")
    for bad in (["--sframe-from-eh-frame", "--sframe-version", "4"],
                ["--sframe-version", "2"]):  # a version without a conversion means nothing
        proc = subprocess.run([str(ehbt_bin), "core", exp["core"], *bad], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2, (bad, proc.returncode, proc.stderr)
        assert proc.stderr.strip(), bad
    helptext = subprocess.run([str(ehbt_bin), "core", "--help"], capture_output=True, text=True,
                              timeout=60).stdout
    assert "--sframe-from-eh-frame" in helptext and "--sframe-version" in helptext


def test_python_options(build_dir, fixture_cores):
    """The Python module's UnwindOptions carries the two SFrame fields, as keywords, as
    attributes and in an options dict."""
    import ehbt_py
    ehbt = ehbt_py.import_ehbt(build_dir)
    exp = expected_or_fail(fixture_cores, "x86_64", "drap")
    target = ehbt.open_core(exp["core"])
    index = [i for i, t in enumerate(exp["threads"]) if t["crashing"]][0]
    want = [int(f["pc"], 16) for f in exp["threads"][index]["frames"]]

    o = ehbt.UnwindOptions(source="sframe", sframe_from_eh_frame=True, sframe_version=2)
    assert o.sframe_from_eh_frame is True and o.sframe_version == 2
    v2 = target.unwind_thread(index, options=o)
    assert [f.pc for f in v2.frames] == want[:2], [hex(f.pc) for f in v2.frames]
    assert v2.stop == "no_unwind_info" and "not expressible in SFrame V2" in v2.detail, v2.detail
    assert [f.source for f in v2.frames[1:]] == ["sframe"]

    v3 = target.unwind_thread(index, options={"source": "sframe", "sframe_from_eh_frame": True})
    assert [f.pc for f in v3.frames] == want and v3.stop == "outermost", (v3.stop, v3.detail)
    assert {f.source for f in v3.frames[1:]} == {"sframe"}

    assert ehbt.UnwindOptions().sframe_from_eh_frame is False
    assert ehbt.UnwindOptions().sframe_version == 3
    o.sframe_version = 3
    assert o.sframe_version == 3
    with pytest.raises(ValueError):
        o.sframe_version = 4
    with pytest.raises(ValueError):
        ehbt.UnwindOptions(sframe_version=1)


# ---- native .sframe from a real toolchain (tests/fixtures/sframe, x86-64 programs) ----

FIXTURES = ce.ROOT / "tests" / "fixtures" / "sframe"
NATIVE = [(d, p) for d in ("trixie-x86_64", "sid-x86_64")
          for p in ("chain", "noreturn", "signal", "drap")]


def wait_until_blocked(pid, timeout=10.0):
    """Waits until the program that said "ready" sleeps in its pause(2): it prints the line
    before it blocks, and a walk taken between the two (seen under load: frame 0 still in
    libc's fflush) differs from one taken after. Native x86-64 only, so pause is syscall 34
    (/proc/PID/syscall: its number first while the task sleeps in it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/syscall" % pid) as f:
                if f.read().split()[0] == "34":
                    return
        except (OSError, IndexError):
            pass
        time.sleep(0.005)
    pytest.fail("pid %d did not block in pause(2) within %gs" % (pid, timeout))


def walk_pid(ehbt_bin, pid, source):
    proc = subprocess.run([str(ehbt_bin), "pid", str(pid), "--json", "--source", source],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["threads"][0]


@pytest.mark.parametrize("directory,program", NATIVE, ids=["%s-%s" % c for c in NATIVE])
def test_native_sframe_of_a_blocked_process(ehbt_bin, directory, program):
    """A program whose .sframe binutils wrote (V2 by 2.44, V3 by 2.47.50), blocked in its own
    code: --source sframe gives the eh_frame frames as far as the program's own code goes
    (Debian 12's libc has no .sframe: the walk stops there, saying so); --source auto gives
    exactly the eh_frame frames, taking them from .eh_frame (CFI before SFrame)."""
    exe = FIXTURES / directory / program
    if not exe.exists():
        pytest.fail("missing fixture %s" % exe)
    proc = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("ready"), line
        wait_until_blocked(proc.pid)
        eh = walk_pid(ehbt_bin, proc.pid, "eh_frame")
        sf = walk_pid(ehbt_bin, proc.pid, "sframe")
        au = walk_pid(ehbt_bin, proc.pid, "auto")
    finally:
        proc.kill()
        proc.wait()
    def pcs(t):
        return [f["pc"] for f in t["frames"]]

    assert eh["stop_reason"] == "outermost", eh
    assert pcs(au) == pcs(eh) and au["stop_reason"] == "outermost", (au, eh)
    exe_name = str(exe)

    def in_exe(f):
        return f.get("module") == exe_name or f.get("file") == exe_name

    # Auto: .eh_frame covers every function of the program and comes first (a module's own
    # .sframe only serves pcs no CFI covers), so no frame of it is stepped by .sframe.
    skipped_by_gas = directory.startswith("trixie") and program == "drap"
    for prev, f in zip(au["frames"], au["frames"][1:]):
        if in_exe(prev) and prev.get("symbol") not in (None, "_start"):
            assert f["source"] in ("eh_frame", "signal"), (prev, f)
    # SFrame only: a prefix of the eh_frame walk, every frame from .sframe or a signal frame.
    n = len(sf["frames"])
    assert pcs(sf) == pcs(eh)[:n], (sf, eh)
    assert {f["source"] for f in sf["frames"][1:]} <= {"sframe", "signal"}, sf
    assert sf["stop_reason"] == "no_unwind_info", sf
    if skipped_by_gas:
        assert n == 1 and "no function of its .sframe covers the pc" in sf["stop_detail"], sf
    else:
        assert n > 2, sf
        assert "libc.so.6" in sf["stop_detail"] and "the module has no .sframe" in sf[
            "stop_detail"], sf


def test_auto_takes_sframe_where_no_cfi_covers(ehbt_bin, tmp_path):
    """The chain program with its .eh_frame (and header) removed: only its own .sframe covers
    its functions, so --source auto steps them by .sframe (and libc's by .eh_frame), giving
    the frames --source eh_frame gives on the untouched program."""
    if subprocess.run(["which", "objcopy"], capture_output=True).returncode != 0:
        pytest.skip("binutils' objcopy not installed")
    original = FIXTURES / "sid-x86_64" / "chain"
    stripped = tmp_path / "chain"
    subprocess.run(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                    str(original), str(stripped)], check=True)
    sections = subprocess.run(["readelf", "-SW", str(stripped)], capture_output=True,
                              text=True).stdout
    assert ".sframe" in sections and ".eh_frame" not in sections  # the premise, by binutils

    def walk(exe, source):
        proc = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().startswith("ready")
            return walk_pid(ehbt_bin, proc.pid, source)
        finally:
            proc.kill()
            proc.wait()

    def shape(t):  # ASLR differs between runs: compare symbols and module offsets
        return [(f.get("symbol"), f.get("module_offset")) for f in t["frames"]]

    eh = walk(original, "eh_frame")
    au = walk(stripped, "auto")
    assert eh["stop_reason"] == "outermost", eh
    assert shape(au) == shape(eh), (au, eh)
    # _start (from crt1.o, assembled without SFrame) lost its only table; it is still the
    # outermost frame, known as the function holding the ELF entry point (readelf -h).
    assert au["stop_reason"] == "outermost" and au["frames"][-1]["symbol"] == "_start", au
    assert au["frames"][-1]["source"] != "scan", au
    in_exe = [f for prev, f in zip(au["frames"], au["frames"][1:])
              if prev.get("module") == str(stripped) and prev.get("symbol") not in (None, "_start")]
    assert in_exe and all(f["source"] in ("sframe", "signal") for f in in_exe), au
