# SPDX-License-Identifier: Apache-2.0
"""Stale return addresses are not callers (issue #32, item 1): a static, stripped musl program
(cores/programs/musl_noreturn_print.c, built by cores/make_nocfi_cores.py) whose noreturn
helper prints with fwrite and fprintf, then calls abort(). musl has no CFI and the binary no
symbols: every frame past the program's own comes from the fallbacks, and the stack below
fx_fatal still holds the return addresses of the print calls (into fwrite, vfprintf,
__stdio_write...). None of them may be printed as a caller.

Expected frames: the program's structure (the functions of each frame, innermost first, in the
fixture's expected.json), named here from the unstripped copy's symbol table (nm), never from
ehbt's output.

The glibc counterparts (glibc_noreturn_print static, glibc_noreturn_print_dyn dynamic; both
stripped) are checked against GDB's frames of the unstripped copy through the CLI (text and
JSON), ehbt-triage and the GDB plugin, with the executable's tables and without them."""
import bisect
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import cores_expect as ce

SCRIPT = os.path.join(str(ce.ROOT), "cores", "make_nocfi_cores.py")
NAME = "musl_noreturn_print"


@pytest.fixture(scope="module")
def expected():
    path = ce.OUT / "x86_64" / (NAME + ".expected.json")
    if not path.exists():
        if not shutil.which("musl-gcc"):
            pytest.fail("musl_noreturn_print needs musl-gcc (scripts/install-deps.sh)")
        subprocess.run([sys.executable, SCRIPT, "--only", NAME], check=True)
    with open(path) as f:
        return json.load(f)


def symbols(exe):
    """Sorted (address, name) of the functions in exe's symbol table."""
    out = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            syms.append((int(parts[0], 16), parts[2]))
    return sorted(syms)


def function_of(syms, pc):
    """The function holding pc (by the nearest symbol at or below it)."""
    i = bisect.bisect_right([a for a, _ in syms], pc) - 1
    return syms[i][1] if i >= 0 else None


def test_stale_print_return_addresses_are_not_callers(ehbt_bin, expected):
    p = subprocess.run([str(ehbt_bin), "core", expected["core"], "--json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    (t,) = [t for t in doc["threads"] if t["crashing"]]
    syms = symbols(expected["exe_unstripped"])
    # The frame pc of a caller is a return address: its function is that of pc - 1.
    got = [function_of(syms, int(f["pc"], 16) - (0 if i == 0 else 1))
           for i, f in enumerate(t["frames"])]
    stale = [g for g in got if g in expected["stale"]]
    assert not stale, (got, t["stop_reason"], t["stop_detail"])
    assert got == expected["functions"], (got, t["stop_reason"], t["stop_detail"])
    assert t["stop_reason"] == "outermost" and p.returncode == 0, (t["stop_reason"],
                                                                    t["stop_detail"])


# The glibc counterpart (issue #32, item 1): the same program built by gcc against glibc,
# static and stripped. glibc keeps .eh_frame for its own functions, so the full walk is by
# table; the fixture's <exe>.notables copy (same build-id, .eh_frame removed) leaves the
# fallbacks to walk the code past the print calls' stale return addresses (into fwrite,
# _IO_new_file_xsputn...). Truth: GDB on the unstripped copy (pcs, past main), which
# make_nocfi_cores.py checks against the program's structure.
# glibc_noreturn_print_dyn is the same program linked dynamically: the print functions are in
# libc.so.6 (walked by its table), the program's own frames by fallback in the .notables copy.
GLIBC = "glibc_noreturn_print"
GLIBC_DYN = "glibc_noreturn_print_dyn"


@pytest.fixture(scope="module", params=[GLIBC, GLIBC_DYN])
def glibc_expected(request):
    path = ce.OUT / "x86_64" / (request.param + ".expected.json")
    if not path.exists():
        subprocess.run([sys.executable, SCRIPT, "--only", request.param], check=True)
    with open(path) as f:
        return json.load(f)


def crashing_walk(ehbt_bin, core, *extra):
    """(exit status, crashing thread) of `ehbt core CORE --json`, and the text output's pcs
    and stop line of the same command without --json."""
    p = subprocess.run([str(ehbt_bin), "core", core, "--json", *extra], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    (t,) = [t for t in json.loads(p.stdout)["threads"] if t["crashing"]]
    text = subprocess.run([str(ehbt_bin), "core", core, *extra], capture_output=True,
                          text=True, timeout=300)
    assert text.returncode == p.returncode, text.stderr
    pcs = [int(m, 16) for m in re.findall(r"^#\d+\s+(0x[0-9a-f]+) ", text.stdout, re.M)]
    stopped = re.findall(r"^Backtrace stopped: (\w+)", text.stdout, re.M)
    return p.returncode, t, pcs, stopped


def test_glibc_stripped_walks_exactly_gdbs_frames(ehbt_bin, glibc_expected):
    exp = glibc_expected
    want = [int(f["pc"], 16) for f in exp["frames"]]
    rc, t, text_pcs, stopped = crashing_walk(ehbt_bin, exp["core"])
    got = [int(f["pc"], 16) for f in t["frames"]]
    assert got == want, ce.describe(t["frames"])
    assert text_pcs == want and stopped == [], (text_pcs, stopped)
    # Every caller from glibc's and the program's own .eh_frame: nothing guessed.
    assert [f["source"] for f in t["frames"][1:]] == ["eh_frame"] * (len(want) - 1), t["frames"]
    assert t["stop_reason"] == "outermost" and rc == 0, (t["stop_reason"], t["stop_detail"])


# Static glibc without .eh_frame (issue #32 item 1): in a stripped binary without tables no
# function start is known. Above raise's frame lies fwrite's stale return address, after its call
# through a register into _IO_new_file_xsputn: nothing ties such a call to the callee and no
# table proves it by the frame above, so the scan stops there (validate.cpp, scan_step.cpp)
# rather than take it or pass over it; the walk is GDB's frames cut short, not all of them.
# Before that stop it also passes over raise. Nothing says where frame 0's function
# (__pthread_kill_implementation, 0x4178c0) starts, so a direct call proves a caller when its
# target lies below the pc, less than max_function_bytes below it (validate.cpp,
# disprove_unnamed_callee). raise's call goes to __pthread_kill (0x417a20), above the pc, which
# reaches the function only by a tail jump: its return address is disproven. abort's goes to
# raise (0x4086c0), 62 KB below the pc: taken as the start of frame 0's function, so abort is
# the caller found. A frame of the truth, a skipped frame, the walk stopped: recorded here
# exactly, as GDB's frames 0 and 2 (a known limit of the proof without symbols or tables).
STATIC_WITHOUT_TABLES = [0, 2]
def test_glibc_without_tables_takes_no_stale_return_address(ehbt_bin, glibc_expected):
    """The same core with the executable's tables gone (its .notables copy as --exe): the
    fallbacks walk; every frame they give is one of GDB's in order, none in a print function,
    and a walk that skipped one stops with a reason (exit 1), never outermost."""
    exp = glibc_expected
    want = [int(f["pc"], 16) for f in exp["frames"]]
    rc, t, text_pcs, stopped = crashing_walk(ehbt_bin, exp["core"], "--exe",
                                             exp["exe_notables"])
    got = [int(f["pc"], 16) for f in t["frames"]]
    syms = symbols(exp["exe_unstripped"])
    names = [function_of(syms, pc - (0 if i == 0 else 1)) for i, pc in enumerate(got)]
    assert not [n for n in names if n in exp["stale"]], (names, t["stop_detail"])
    it = iter(want)
    assert all(pc in it for pc in got), (names, t["stop_detail"])
    assert text_pcs == got
    if got != want:
        assert t["stop_reason"] != "outermost" and rc == 1 and len(stopped) == 1, (
            t["stop_reason"], t["stop_detail"])
    if exp["program"] == GLIBC:
        assert got == [want[i] for i in STATIC_WITHOUT_TABLES], (names, t["stop_detail"])
    if exp["program"] == GLIBC_DYN:  # libc's tables step over the stale words: every frame
        assert got == want, (names, t["stop_detail"])
        assert t["stop_reason"] == "outermost" and rc == 0 and stopped == []


def test_glibc_with_another_executable_stops_in_it(ehbt_bin, glibc_expected):
    """The executable's file hidden (another program given as --exe): its code is not in the
    core, so nothing past its first frame can be proven: exactly GDB's frames up to the first
    one in the executable (static: the faulting pc; dynamic: libc's three frames, by libc's
    table, and fx_fatal's return address), then `no_module` naming the other build, exit 1."""
    exp = glibc_expected
    first_in_exe = 0 if exp["program"] == GLIBC else exp["functions"].index("fx_fatal")
    want = [int(f["pc"], 16) for f in exp["frames"][:first_in_exe + 1]]
    rc, t, text_pcs, stopped = crashing_walk(ehbt_bin, exp["core"], "--exe", "/usr/bin/true")
    assert [int(f["pc"], 16) for f in t["frames"]] == want, ce.describe(t["frames"])
    assert text_pcs == want and stopped == ["no_module"], stopped
    assert t["stop_reason"] == "no_module" and "is another build" in t["stop_detail"], (
        t["stop_detail"])
    assert rc == 1


def test_glibc_triage_signature_has_no_stale_frame(build_dir, glibc_expected, tmp_path):
    """ehbt-triage on the stripped core: the signature (module+offset, no names in the file)
    is made of the true frames, consecutive, named here from the unstripped copy's symbols:
    static, the first five (abort's own frames are unnamed, so not recognised as abort's);
    dynamic, from fx_fatal on (libc's raise and abort are named and left out). Exit 0, the
    walk complete (not partial), unreliable (no function names)."""
    from ehbt_py import triage_env
    from test_triage import read_jsonl, triage
    exp = glibc_expected
    proc = triage(triage_env(build_dir), "--db", tmp_path / "db", "--jsonl",
                  tmp_path / "o.jsonl", exp["core"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [rec] = read_jsonl(tmp_path / "o.jsonl")
    module = os.path.basename(exp["exe"])
    sig = rec["signature"].split(": ", 1)[1].split(" | ")
    offsets = [int(re.fullmatch(re.escape(module) + r"\+0x([0-9a-f]+)", s).group(1), 16)
               for s in sig]
    syms = symbols(exp["exe_unstripped"])
    static = exp["program"] == GLIBC
    # Frame 0 of the static walk is the faulting pc itself; every other one a return address.
    names = [function_of(syms, off - (0 if static and i == 0 else 1)).split(".")[0]
             for i, off in enumerate(offsets)]
    want = exp["functions"][:5] if static else exp["functions"][3:7]
    assert names == want, (rec["signature"], names)
    assert rec["stop_reason"] == "outermost" and not rec["partial"] and rec["unreliable"], rec


@pytest.mark.parametrize("tables", ["eh_frame", "notables"])
def test_glibc_gdb_plugin_walks_exactly_gdbs_frames(build_dir, ehbt_bin, glibc_expected, tables,
                                                    tmp_path):
    """The GDB plugin (`ehbt -json` in `gdb EXE CORE`), with the stripped executable and with
    its .notables copy: GDB's frames of the unstripped copy, exactly, ending outermost. Static
    glibc without tables is the exception the CLI has too (see the comment above
    test_glibc_without_tables_takes_no_stale_return_address): GDB's frames 0 and 2 exactly,
    cut short before fwrite's stale return address, the walk stopped with a reason;
    the plugin gives the CLI's frames and stop exactly (the engine decides, not the host)."""
    import ehbt_py as h
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    h.need_gdb()
    exp = glibc_expected
    cut_short = exp["program"] == GLIBC and tables == "notables"
    exe = exp["exe"] if tables == "eh_frame" else exp["exe_notables"]
    out = tmp_path / "ehbt.json"
    text = h.run_gdb(build_dir, [exe, exp["core"]], [
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(out)])
    assert out.exists(), text[-3000:]
    captured = out.read_text()
    [thread] = json.loads(captured[captured.find("{"):])["threads"]
    got = [int(f["pc"], 16) for f in thread["frames"]]
    want = [int(f["pc"], 16) for f in exp["frames"]]
    if cut_short:
        _, cli, _, _ = crashing_walk(ehbt_bin, exp["core"], "--exe", exe)
        assert got == [want[i] for i in STATIC_WITHOUT_TABLES], ce.describe(thread["frames"])
        assert (thread["stop_reason"], thread["stop_detail"]) == (
            cli["stop_reason"], cli["stop_detail"]) and thread["stop_reason"] != "outermost"
        assert got == [int(f["pc"], 16) for f in cli["frames"]]
        return
    assert got == want, ce.describe(thread["frames"])
    assert thread["stop_reason"] == "outermost", (thread["stop_reason"], thread["stop_detail"])
