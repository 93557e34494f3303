# SPDX-License-Identifier: Apache-2.0
"""Stale return addresses are not callers (issue #32, item 1): a static, stripped musl program
(cores/programs/musl_noreturn_print.c, built by cores/make_nocfi_cores.py) whose noreturn
helper prints with fwrite and fprintf, then calls abort(). musl has no CFI and the binary no
symbols: every frame past the program's own comes from the fallbacks, and the stack below
fx_fatal still holds the return addresses of the print calls (into fwrite, vfprintf,
__stdio_write...). None of them may be printed as a caller.

Expected frames: the program's structure (the functions of each frame, innermost first, in the
fixture's expected.json), named here from the unstripped copy's symbol table (nm), never from
ehbt's output."""
import bisect
import json
import os
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
