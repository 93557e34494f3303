#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Interleaved A/B timing of two ehbt-triage trees on one directory of cores.

    bench/triage_ab.py [--rounds N] [-j J] BUILD_DIR CORE_DIR TRIAGE_A TRIAGE_B

TRIAGE_A/B: ehbt-triage scripts (e.g. a `git archive` of the base commit's triage/ and this
tree's). Each round runs A then B (then B then A the next round, so neither always goes
first), each with a fresh database; CPU is user+sys from wait4 (as /usr/bin/time, finer).
The machine's load changes over a run: interleaving makes the change hit both alike. Prints
the medians of wall and CPU seconds, and the median of the rounds' paired differences A-B
(per run and per core).
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time


def one(triage, build, cores, jobs, work):
    db = os.path.join(work, "ab.db")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(db + suffix)
        except FileNotFoundError:
            pass
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "engine", "python"),
               EHBT_BIN=os.path.join(build, "engine", "tools", "ehbt"))
    t0 = time.monotonic()
    proc = subprocess.Popen([triage, "-j%d" % jobs, "--db", db, cores], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    # wait4's rusage: what /usr/bin/time reports (the run and the workers it reaped), at
    # microseconds rather than time's 10 ms steps.
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit("%s failed (%d): %s" % (triage, proc.returncode, err))
    user, sys_ = usage.ru_utime, usage.ru_stime
    return wall, user + sys_


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("build")
    ap.add_argument("cores")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    n = len([f for f in os.listdir(args.cores) if not f.startswith(".")])
    res = {"a": [], "b": []}
    with tempfile.TemporaryDirectory(prefix="triage-ab.") as work:
        for r in range(args.rounds):
            order = ("a", "b") if r % 2 == 0 else ("b", "a")
            for which in order:
                res[which].append(one(getattr(args, which), args.build, args.cores, args.j,
                                      work))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in res.items()}
    for k in ("a", "b"):
        print("%s: wall %.3f s  cpu %.3f s  (median of %d, %d cores, -j%d)"
              % (k, med[k][0], med[k][1], args.rounds, n, args.j))
    dw = statistics.median(a[0] - b[0] for a, b in zip(res["a"], res["b"]))
    dc = statistics.median(a[1] - b[1] for a, b in zip(res["a"], res["b"]))
    if not n:  # an empty directory: the runs' fixed cost, nothing per core
        print("a-b (median of paired rounds): wall %+.1f ms  cpu %+.1f ms"
              % (dw * 1e3, dc * 1e3))
        return
    print("a-b (median of paired rounds): wall %+.1f ms (%+.2f ms/core)  "
          "cpu %+.1f ms (%+.2f ms/core)" % (dw * 1e3, dw * 1e3 / n, dc * 1e3, dc * 1e3 / n))


if __name__ == "__main__":
    main()
