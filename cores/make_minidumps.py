#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Minidumps of the x86-64 fixture programs, written by a real writer: LLDB's minidump plugin.

    make_minidumps.py [--only NAME,...] [--bins DIR]

For each case below, LLDB runs the fixture program (cores/out/x86_64/bin/<program>, built by
make_cores.py; --bins names another directory) and, when it stops, writes
`process save-core --plugin-name=minidump --style=stack` (the only style LLDB 16 writes for
minidumps: thread stacks, no module memory). Outputs in <OUT>/x86_64/ (OUT: EHBT_CORES_OUT,
else cores/out):
    <name>.dmp          the minidump
    <name>.dmp.json     what it is (format ehbt-minidump-fixture/1): the program, how it was
                        stopped, the writer, and the ELF core of the same program whose
                        expected frames (GDB's, see make_cores.py) it must show
    <name>.lldb.txt     LLDB's own `thread backtrace all` at the stop, for people

Modes: "crash" runs the program until the signal that makes its core stops it (LLDB stops on
SIGSEGV/SIGABRT; SIGUSR1, which sighandler sends itself, is passed without stopping), so the
crashing thread's frames are the core's; "live" stops at a breakpoint on a fixture function
before the crash, so its frames are the core's from that function outwards. Nothing here runs
ehbt. The program is checked to have stopped where the case says (LLDB's stop reason).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("EHBT_CORES_OUT") or os.path.join(HERE, "out")
LLDB = "lldb-16"


class MinidumpCase:
    def __init__(self, name, program, mode, stop_reason, breakpoint=None, note=""):
        self.name = name
        self.program = program  # the fixture program (and its core: <program>.core)
        self.mode = mode        # "crash" or "live"
        self.stop_reason = stop_reason  # what LLDB must say stopped it
        self.breakpoint = breakpoint    # live: the function it stops in
        self.note = note


MINIDUMP_CASES = [
    MinidumpCase("chain", "chain", "crash", "signal SIGSEGV",
                 note="null write three calls deep"),
    MinidumpCase("noreturn", "noreturn", "crash", "signal SIGABRT",
                 note="abort() as fx_noreturn_last's last instruction"),
    MinidumpCase("sighandler", "sighandler", "crash", "signal SIGSEGV",
                 note="SIGSEGV in a SIGUSR1 handler: frames through the signal trampoline"),
    MinidumpCase("threads", "threads", "crash", "signal SIGABRT",
                 note="main aborts while 4 threads block in system calls"),
    MinidumpCase("terminate", "terminate", "crash", "signal SIGABRT",
                 note="uncaught C++ exception -> std::terminate -> abort"),
    MinidumpCase("chain-live", "chain", "live", "breakpoint", breakpoint="fx_level3",
                 note="stopped at a breakpoint in fx_level3 before its null write"),
]
CASES = {c.name: c for c in MINIDUMP_CASES}


class MinidumpError(Exception):
    pass


def lldb_version():
    proc = subprocess.run([LLDB, "--version"], capture_output=True, text=True, timeout=60)
    return proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else LLDB


def make_one(case, bins):
    outdir = os.path.join(OUT, "x86_64")
    os.makedirs(outdir, exist_ok=True)
    dmp = os.path.join(outdir, case.name + ".dmp")
    meta = os.path.join(outdir, case.name + ".dmp.json")
    text = os.path.join(outdir, case.name + ".lldb.txt")
    for p in (dmp, meta, text):
        if os.path.exists(p):
            os.unlink(p)
    exe = os.path.join(bins, case.program)
    if not os.path.exists(exe):
        raise MinidumpError("no fixture program %s (run make-cores.sh first)" % exe)
    save = "process save-core --plugin-name=minidump --style=stack " + dmp
    cmd = [LLDB, "-b", "--no-lldbinit",
           "-o", "settings set auto-confirm true",
           "-o", "process handle SIGUSR1 -s false -p true -n false"]
    if case.mode == "live":
        cmd += ["-o", "breakpoint set -n " + case.breakpoint, "-o", "process launch",
                "-o", "thread backtrace all", "-o", save, "-o", "process kill"]
    else:
        # Batch mode stops running -o commands when the process crashes; -k ones run then.
        cmd += ["-o", "process launch", "-k", "thread backtrace all", "-k", save,
                "-k", "process kill"]
    proc = subprocess.run(cmd + [exe], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    with open(text, "w") as f:
        f.write(proc.stdout)
    if ("stop reason = " + case.stop_reason) not in proc.stdout:
        raise MinidumpError("%s: LLDB did not stop with %r:\n%s" % (case.name, case.stop_reason,
                                                                    proc.stdout[-2000:]))
    if not os.path.exists(dmp):
        raise MinidumpError("%s: LLDB wrote no minidump:\n%s" % (case.name, proc.stdout[-2000:]))
    with open(dmp, "rb") as f:
        if f.read(4) != b"MDMP":
            raise MinidumpError("%s: %s is not a minidump" % (case.name, dmp))
    core_dir = os.path.dirname(os.path.abspath(bins))
    doc = {
        "format": "ehbt-minidump-fixture/1",
        "name": case.name,
        "program": case.program,
        "exe": exe,
        "mode": case.mode,
        "breakpoint": case.breakpoint,
        "writer": lldb_version(),
        "writer_command": save,
        "core_expected": os.path.join(core_dir, case.program + ".expected.json"),
        "note": case.note,
    }
    with open(meta, "w") as f:
        json.dump(doc, f, indent=1)
    return "x86_64/%s.dmp: ok (%s, %s, %d bytes)" % (case.name, case.mode, doc["writer"],
                                                   os.path.getsize(dmp))


def make_all(only=(), bins=None):
    """Makes every case (or those named); returns the number that failed."""
    if not shutil.which(LLDB):
        print("make-minidumps: %s not found, no minidumps made" % LLDB)
        return 0
    bins = bins or os.path.join(OUT, "x86_64", "bin")
    failed = 0
    for case in MINIDUMP_CASES:
        if only and case.name not in only:
            continue
        try:
            print(make_one(case, bins), flush=True)
        except (MinidumpError, subprocess.TimeoutExpired, OSError) as e:
            failed += 1
            print("x86_64/%s.dmp: FAILED: %s" % (case.name, e), flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--bins", default=None,
                    help="where the fixture programs are (default: <OUT>/x86_64/bin)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    return 1 if make_all(only, args.bins) else 0


if __name__ == "__main__":
    sys.exit(main())
