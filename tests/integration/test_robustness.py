# SPDX-License-Identifier: Apache-2.0
"""Corrupted-input corpus: seeded, deterministic damage to the fixture cores (note headers,
PT_LOAD offsets and sizes, stack bytes, truncation, ...) and to a fixture executable's
.eh_frame/.eh_frame_hdr (used through --exe). `ehbt core --all-threads --json` on each must
exit 0/1 with an ehbt-backtrace/1 document, or 2 with exactly one line on stderr; never die
from a signal, never hang (10 s timeout each). The slowest input's time is printed."""

import concurrent.futures
import json
import pathlib
import random
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import corrupt_elf  # noqa: E402
import cores_expect  # noqa: E402

SEED = 20240601
CORE_COPIES = 10      # per (core, kind) below -> ~100 corrupted cores
EXE_COPIES = 16       # per (exe, which) -> ~50 corrupted executables
X86 = cores_expect.OUT / "x86_64"
CORE_NAMES = ["chain", "sighandler", "static", "drap", "plt", "smashed"]
EXE_NAMES = ["chain", "drap", "sighandler"]


def _check(ehbt_bin, core, sysroots, exe):
    cmd = [str(ehbt_bin), "core", str(core), "--all-threads", "--json"]
    for s in sysroots:
        cmd += ["--sysroot", str(s)]
    if exe:
        cmd += ["--exe", str(exe)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10, errors="replace")
    except subprocess.TimeoutExpired:
        return cmd, "hang (no exit within 10 s)", 10.0
    elapsed = time.monotonic() - start
    rc = proc.returncode
    if rc < 0:
        return cmd, "killed by signal %d: %s" % (-rc, proc.stderr[-2000:]), elapsed
    if rc in (0, 1):
        try:
            doc = json.loads(proc.stdout)
        except ValueError as e:
            return cmd, "exit %d with invalid JSON (%s): %r" % (rc, e, proc.stdout[:300]), elapsed
        if doc.get("format") != "ehbt-backtrace/1":
            return cmd, "exit %d, format %r" % (rc, doc.get("format")), elapsed
        return cmd, None, elapsed
    if rc == 2:
        lines = proc.stderr.splitlines()
        if len(lines) != 1:
            return cmd, "exit 2 with %d stderr lines: %r" % (len(lines), proc.stderr[:500]), \
                elapsed
        return cmd, None, elapsed
    return cmd, "exit %d: %s" % (rc, proc.stderr[-2000:]), elapsed


def _corpus(tmp):
    """(core path, sysroots, exe) for every corrupted input, written under tmp."""
    rng = random.Random(SEED)
    inputs = []
    for name in CORE_NAMES:
        core = X86 / (name + ".core")
        if not core.exists():
            continue
        sysroots, exe = cores_expect.default_args(cores_expect.load_expected("x86_64", name))
        data = core.read_bytes()
        for kind in corrupt_elf.CORE_KINDS:
            for i in range(max(1, CORE_COPIES * 2 // len(corrupt_elf.CORE_KINDS))):
                out = tmp / ("%s.%s.%d.core" % (name, kind, i))
                out.write_bytes(corrupt_elf.corrupt_core(data, rng, kind))
                inputs.append((out, sysroots, exe))
    for name in EXE_NAMES:
        core = X86 / (name + ".core")
        exp = cores_expect.load_expected("x86_64", name)
        exe_data = pathlib.Path(exp["exe_file"]).read_bytes()
        sysroots, _ = cores_expect.default_args(exp)
        for which in ("hdr", "eh", "both"):
            for i in range(EXE_COPIES // 3 + 1):
                out = tmp / ("%s.%s.%d.exe" % (name, which, i))
                out.write_bytes(corrupt_elf.corrupt_eh_frame(exe_data, rng, which))
                inputs.append((core, sysroots, out))
    return inputs


def test_corrupted_inputs_never_crash_or_hang(ehbt_bin, tmp_path):
    assert X86.is_dir(), "fixture cores missing: %s (run cores/make-cores.sh x86_64)" % X86
    inputs = _corpus(tmp_path)
    assert len(inputs) >= 100, len(inputs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda a: _check(ehbt_bin, *a), inputs))
    failures = ["%s\n  %s" % (" ".join(cmd), why) for cmd, why, _ in results if why]
    slowest = max(results, key=lambda r: r[2])
    print("\ncorrupted inputs: %d, failures: %d, slowest %.2f s: %s" % (
        len(results), len(failures), slowest[2], " ".join(slowest[0])))
    assert not failures, "\n".join(failures[:20])
