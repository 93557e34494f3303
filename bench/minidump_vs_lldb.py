#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Minidumps: ehbt's frames and time against LLDB's own unwinder on the same files.

    minidump_vs_lldb.py EHBT DUMP... [--runs N]

For each minidump: `ehbt core DUMP --all-threads --json` and `lldb-16 -b -c DUMP -o 'bt all'`,
each run N times (median wall time, whole process: loading the files and symbols included);
the crashing thread's frames compared function by function. LLDB lists frames inlined at a pc
as frames of their own (debug info): those ("[inlined]") are left out, so both lists are of
physical frames. Names are compared without the versioned glibc suffix LLDB shows for some
(`__libc_start_main_impl` is ELF's `__libc_start_main`).
"""

import argparse
import json
import re
import statistics
import subprocess
import time

LLDB = "lldb-16"
ALIASES = {"__libc_start_main_impl": "__libc_start_main", "__GI_raise": "raise",
           "__GI_abort": "abort", "__pthread_kill_internal": "__pthread_kill_implementation"}


def timed(cmd, runs):
    times, out = [], None
    for _ in range(runs):
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        times.append(time.monotonic() - t0)
    return statistics.median(times), out


def lldb_frames(text):
    """The selected thread's physical frames: function names (None when LLDB has none)."""
    frames, in_selected = [], False
    for line in text.splitlines():
        if re.match(r"^\* thread #", line):
            in_selected = True
            continue
        if re.match(r"^  thread #", line):
            in_selected = False
        m = re.match(r"^\s+\*?\s*frame #\d+: 0x[0-9a-f]+ (.*)$", line)
        if not (in_selected and m) or "[inlined]" in m.group(1):
            continue
        rest = m.group(1)
        fn = re.match(r"^[^`]+`([^( ]+)", rest)
        name = fn.group(1) if fn else None
        if name and name.startswith("___lldb_unnamed_symbol"):
            name = None  # LLDB's name for an address no symbol covers
        frames.append(ALIASES.get(name, name))
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ehbt")
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print("%-22s %8s %8s  %s" % ("minidump", "ehbt ms", "lldb ms", "crashing thread frames"))
    for dump in args.dumps:
        t_e, e = timed([args.ehbt, "core", dump, "--all-threads", "--json"], args.runs)
        t_l, lo = timed([LLDB, "-b", "-c", dump, "-o", "bt all"], args.runs)
        doc = json.loads(e.stdout)
        crashing = [t for t in doc["threads"] if t["crashing"]] or doc["threads"][:1]
        ours = [re.sub(r"\(.*\)$", "", f["symbol"]) if f["symbol"] else None
                for f in crashing[0]["frames"]]
        theirs = lldb_frames(lo.stdout)
        same = "same" if ours == theirs else "DIFFER: ehbt %s / lldb %s" % (ours, theirs)
        print("%-22s %8.1f %8.1f  %d ehbt, %d lldb: %s" % (dump.split("/")[-1], t_e * 1e3,
                                                        t_l * 1e3, len(ours), len(theirs), same))


if __name__ == "__main__":
    main()
