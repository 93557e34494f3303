# SPDX-License-Identifier: Apache-2.0
"""Corrupted-input corpus: seeded, deterministic damage to the fixture cores (note headers,
PT_LOAD offsets and sizes, stack bytes, truncation, module headers claiming 4 GiB of program
headers, ...) and to a fixture executable's .eh_frame/.eh_frame_hdr (used through --exe).
`ehbt core --all-threads --json` on each runs under a 256 MiB address-space ceiling
(`prlimit --as`) and must exit 0/1 with an ehbt-backtrace/1 document, or 2 with exactly one
line on stderr (never `out of memory`); never die from a signal, never hang (10 s timeout
each). The peak RSS and the slowest input are printed."""

import concurrent.futures
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import tempfile
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
# The address-space ceiling every corrupted input runs under (README, "Testing").
MEMORY_CEILING = 256 << 20
TIMEOUT = 10.0


def run_limited(cmd, timeout=TIMEOUT, ceiling=MEMORY_CEILING):
    """Runs cmd under `prlimit --as=ceiling`, itself under GNU time, which reports the peak
    RSS of the process it forked. Measuring here with wait4 would not do: the child pytest
    forks starts as a copy of pytest (tens of MiB by the end of a session), and the kernel
    keeps that high-water mark across exec. Returns (exit code or -signal, stdout, stderr,
    peak RSS in bytes, seconds), or None on timeout (the command is killed)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as usage:
        start = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "rss %M", "-o", usage.name,
                                 "prlimit", "--as=%d" % ceiling, "--"] + [str(c) for c in cmd],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
        elapsed = time.monotonic() - start
        report = usage.read()
        rss = int(re.search(r"^rss (\d+)$", report, re.M).group(1)) * 1024
        # time exits 128 + N for a command killed by signal N, and says so.
        killed = re.search(r"terminated by signal (\d+)", report)
        rc = -int(killed.group(1)) if killed else proc.returncode
        out.seek(0)
        err.seek(0)
        return (rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                rss, elapsed)


def _check(ehbt_bin, core, sysroots, exe):
    cmd = [str(ehbt_bin), "core", str(core), "--all-threads", "--json"]
    for s in sysroots:
        cmd += ["--sysroot", str(s)]
    if exe:
        cmd += ["--exe", str(exe)]
    got = run_limited(cmd)
    if got is None:
        return cmd, "hang (no exit within %d s)" % TIMEOUT, TIMEOUT, 0
    rc, stdout, stderr, rss, elapsed = got
    if rc < 0:
        return cmd, "killed by signal %d: %s" % (-rc, stderr[-2000:]), elapsed, rss
    if "out of memory" in stderr or "bad_alloc" in stderr:
        return cmd, "out of memory under the %d MiB ceiling: %s" % (
            MEMORY_CEILING >> 20, stderr[-500:]), elapsed, rss
    if rc in (0, 1):
        try:
            doc = json.loads(stdout)
        except ValueError as e:
            return cmd, "exit %d with invalid JSON (%s): %r" % (rc, e, stdout[:300]), elapsed, rss
        if doc.get("format") != "ehbt-backtrace/1":
            return cmd, "exit %d, format %r" % (rc, doc.get("format")), elapsed, rss
        return cmd, None, elapsed, rss
    if rc == 2:
        lines = stderr.splitlines()
        if len(lines) != 1:
            return cmd, "exit 2 with %d stderr lines: %r" % (len(lines), stderr[:500]), \
                elapsed, rss
        return cmd, None, elapsed, rss
    return cmd, "exit %d: %s" % (rc, stderr[-2000:]), elapsed, rss


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
    failures = ["%s\n  %s" % (" ".join(cmd), why) for cmd, why, _, _ in results if why]
    slowest = max(results, key=lambda r: r[2])
    biggest = max(results, key=lambda r: r[3])
    print("\ncorrupted inputs: %d under a %d MiB ceiling, failures: %d\n"
          "  slowest %.3f s: %s\n  peak RSS %.1f MiB: %s" % (
              len(results), MEMORY_CEILING >> 20, len(failures), slowest[2],
              " ".join(slowest[0]), biggest[3] / 2**20, " ".join(biggest[0])))
    assert not failures, "\n".join(failures[:20])


def test_module_headers_claiming_4_gib_of_program_headers(ehbt_bin, tmp_path):
    """The fuzzer's find, made from a real core: every module header the core dumped claims
    65534 program headers of 65535 bytes. The files on disk are intact, so the trace must be
    exactly what GDB saw, at the cost of any small core (the RSS bound is generous: a healthy
    run of this core takes about 10 MiB)."""
    exp = cores_expect.load_expected("x86_64", "chain")
    data = pathlib.Path(exp["core"]).read_bytes()
    headers = corrupt_elf.dumped_module_headers(corrupt_elf.Elf(data))
    assert len(headers) >= 3, "the core dumped too few module headers to test: %d" % len(headers)
    bad = tmp_path / "chain-phdr-bomb.core"
    bad.write_bytes(corrupt_elf.inflate_module_phdrs(data))
    sysroots, exe = cores_expect.default_args(exp)
    cmd = [ehbt_bin, "core", bad, "--all-threads", "--json"]
    for s in sysroots:
        cmd += ["--sysroot", s]
    if exe:
        cmd += ["--exe", exe]
    got = run_limited(cmd)
    assert got is not None, "no exit within %d s" % TIMEOUT
    rc, stdout, stderr, rss, _ = got
    assert rc in (0, 1), "exit %d: %s" % (rc, stderr)
    assert rss < 64 << 20, "peak RSS %.1f MiB" % (rss / 2**20)
    errors = cores_expect.compare(exp, json.loads(stdout), rc)
    assert not errors, "\n".join(errors)
