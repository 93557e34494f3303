#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One-shot ehbt-triage runs: the per-core marginal cost at a small and a large batch, against
eu-stack's cost per core (issue #31). All numbers in one run.

    bench/triage_marginal.py [--build DIR] [-j N] [--small N] [--large N] [--python N]
                             [--python-large N] [--threads T] [--rounds R] [--work DIR]

A one-shot run pays a fixed start-up cost (Python start-up, imports, the store's schema, the
report) whatever its batch; what a core adds on top is its marginal cost:

    marginal(N) = (wall(N cores) - wall(0 cores)) / N

with wall(0 cores) the same command on an empty directory (the run's fixed start-up cost).
The image store starts cold in every run, so the first cores of a batch also pay for parsing
the libraries: that belongs to the batch, and shows as a higher marginal cost at N = --small
than at N = --large. Issue #31 counts "a forked worker and a cold image store" among a run's
fixed costs, which an empty run does not pay; so the small cores' cost past the first,
(wall(N) - wall(1)) / (N - 1) with wall(1) a run on one of them, is printed as well. The
slope (wall(large) - wall(small)) / (large - small) is printed too, as a second estimate that
needs no empty run. eu-stack has no start-up to subtract: one process
per core, as a user's loop runs it, so its cost per core is wall(N) / N, its start-up included
(that is what a user pays per core with it).

Cores: the small fixture cores (cores/out/x86_64), made distinct by a tail of bytes past their
last segment (bench/watch_latency.py's small_core), --small and --large of them cycling over
the kinds; and --python CPython cores with THREADS+1 threads (bench/watch_latency.py's
python_cores, the program of bench/triage_vs_eustack.sh), at --python and, when given, at
--python-large. Each size runs --rounds rounds, ehbt-triage and eu-stack interleaved so
that a change of the machine's load hits both; medians are shown, with the CPU time (user+sys
of the children) beside the wall time. Needs elfutils (eu-stack).
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import watch_latency as wl  # noqa: E402 (the same cores as the watch benchmark)

ROOT = wl.ROOT
PY = wl.PY


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env):
    """(wall s, CPU s) of one command."""
    cpu0, t0 = children_cpu(), time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                             p.stderr[-2000:]))
    return wall, cpu, p.stdout


def triage_run(build, jobs, directory, db, env, expect):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    wall, cpu, out = timed([PY, os.path.join(ROOT, "triage", "ehbt-triage"), "-j", str(jobs),
                            "--db", db, directory], env)
    if "%d analysed, 0 seen before, 0 failed" % expect not in out:
        sys.exit("ehbt-triage did not analyse all %d cores of %s:\n%s" % (expect, directory,
                                                                          out[-2000:]))
    return wall, cpu


def eustack_loop(cores):
    cpu0, t0 = children_cpu(), time.monotonic()
    for core, exe in cores:
        # -n 0: every frame, as ehbt walks them (eu-stack stops at 256 by default, which on
        # the stack overflow core leaves out 680 frames and the libc ones below them).
        subprocess.run(["eu-stack", "-n", "0", "--core", core, "--executable", exe],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0, children_cpu() - cpu0


def batch_dir(work, label, cores):
    d = os.path.join(work, label)
    os.makedirs(d)
    for i, (core, _exe) in enumerate(cores):
        os.link(core, os.path.join(d, "%05d.core" % i))
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--small", type=int, default=12)
    ap.add_argument("--large", type=int, default=600)
    ap.add_argument("--python", type=int, default=12, help="CPython cores (0: none)")
    ap.add_argument("--python-large", type=int, default=0,
                    help="a second, larger batch of CPython cores (0: none)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "engine", "python"),
               EHBT_BIN=os.path.join(build, "engine", "tools", "ehbt"), DEBUGINFOD_URLS="")
    for k in ("EHBT_TRIAGE_TEST_DELAY", "EHBT_TRIAGE_TEST_FAULT", "EHBT_TRIAGE_ENGINE"):
        env.pop(k, None)
    # Byte-compiled once, as an installed package is.
    subprocess.run([PY, "-m", "compileall", "-q", os.path.join(ROOT, "triage", "ehbt_triage"),
                    os.path.join(build, "engine", "python", "ehbt")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = args.work or tempfile.mkdtemp(prefix="ehbt-marginal.")
    os.makedirs(work, exist_ok=True)
    print("machine: %d CPUs, load average at start %s" % (
        os.cpu_count() or 0, " ".join(open("/proc/loadavg").read().split()[:3])))
    try:
        kinds = wl.small_kinds()
        made = [wl.small_core(os.path.join(work, "s%05d.core" % i), kinds[i % len(kinds)], i)
                for i in range(max(args.small, args.large))]
        sets = [("small fixture cores", args.small, made[:args.small]),
                ("small fixture cores", args.large, made[:args.large])]
        if args.python:
            total = max(args.python, args.python_large)
            print("making %d CPython cores (%d+1 threads) ..." % (total, args.threads),
                  flush=True)
            py = wl.python_cores(work, total, args.threads)
            label = "CPython cores, %d threads" % (args.threads + 1)
            sets.append((label, args.python, py[:args.python]))
            if args.python_large > args.python:
                sets.append((label, args.python_large, py))
        empty = os.path.join(work, "empty")
        os.makedirs(empty)
        one = batch_dir(work, "one", made[:1])
        db = os.path.join(work, "db")
        dirs = [(label, n, batch_dir(work, "b%d-%d" % (k, n), cores), cores)
                for k, (label, n, cores) in enumerate(sets)]
        # Warm the page cache and the byte code: one untimed run each.
        triage_run(build, args.jobs, empty, db, env, 0)
        triage_run(build, args.jobs, one, db, env, 1)
        for label, n, d, cores in dirs:
            triage_run(build, args.jobs, d, db, env, n)
            eustack_loop(cores[:12])
        fixed, first, res = [], [], {}
        for _ in range(args.rounds):
            fixed.append(triage_run(build, args.jobs, empty, db, env, 0))
            first.append(triage_run(build, args.jobs, one, db, env, 1))
            for i, (label, n, d, cores) in enumerate(dirs):
                res.setdefault(i, {"triage": [], "eu": []})
                res[i]["triage"].append(triage_run(build, args.jobs, d, db, env, n))
                res[i]["eu"].append(eustack_loop(cores))
        f_wall = statistics.median(w for w, _c in fixed)
        f_cpu = statistics.median(c for _w, c in fixed)
        print("fixed start-up cost (ehbt-triage -j%d on an empty directory): %.1f ms wall, "
              "%.1f ms CPU (median of %d)" % (args.jobs, f_wall * 1e3, f_cpu * 1e3, args.rounds))
        print()
        head = ("cores", "N", "triage wall s", "marginal ms/core", "CPU marginal",
                "eu-stack ms/core", "CPU", "eu/marginal", "CPU ratio")
        fmt = "%-28s %5s %13s %16s %12s %16s %8s %11s %9s"
        print(fmt % head)
        slopes = {}
        for i, (label, n, d, cores) in enumerate(dirs):
            tw = statistics.median(w for w, _c in res[i]["triage"])
            tc = statistics.median(c for _w, c in res[i]["triage"])
            ew = statistics.median(w for w, _c in res[i]["eu"])
            ec = statistics.median(c for _w, c in res[i]["eu"])
            mw, mc = (tw - f_wall) / n * 1e3, (tc - f_cpu) / n * 1e3
            ew_c, ec_c = ew / n * 1e3, ec / n * 1e3
            print(fmt % (label, n, "%.3f" % tw, "%.2f" % mw, "%.2f" % mc, "%.2f" % ew_c,
                         "%.2f" % ec_c, "%.1fx" % (ew_c / mw) if mw > 0 else "-",
                         "%.1fx" % (ec_c / mc) if mc > 0 else "-"))
            slopes.setdefault(label, []).append((n, tw, tc))
        # What a core adds past the first: the first core of a run also starts the worker and
        # fills its image store from cold, which the issue counts as the run's fixed cost.
        o_wall = statistics.median(w for w, _c in first)
        o_cpu = statistics.median(c for _w, c in first)
        print("one-core run: %.1f ms wall, %.1f ms CPU (the empty run + %.1f ms wall, %.1f ms "
              "CPU)" % (o_wall * 1e3, o_cpu * 1e3, (o_wall - f_wall) * 1e3,
                        (o_cpu - f_cpu) * 1e3))
        for i, (label, n, d, cores) in enumerate(dirs):
            if not label.startswith("small") or n < 2:
                continue
            tw = statistics.median(w for w, _c in res[i]["triage"])
            tc = statistics.median(c for _w, c in res[i]["triage"])
            ew = statistics.median(w for w, _c in res[i]["eu"]) / n * 1e3
            mw, mc = (tw - o_wall) / (n - 1) * 1e3, (tc - o_cpu) / (n - 1) * 1e3
            print("%s, N = %d: past the first core (wall(N) - wall(1)) / (N - 1) = %.2f ms/core "
                  "wall, %.2f CPU; eu-stack %.2f ms/core: %s" % (
                      label, n, mw, mc, ew, "%.1fx" % (ew / mw) if mw > 0 else "-"))
        for label, pts in slopes.items():
            if len(pts) == 2 and pts[1][0] != pts[0][0]:
                (n0, w0, c0), (n1, w1, c1) = pts
                print("%s: slope (wall(%d) - wall(%d)) / %d = %.2f ms/core wall, %.2f ms/core "
                      "CPU" % (label, n1, n0, n1 - n0, (w1 - w0) / (n1 - n0) * 1e3,
                               (c1 - c0) / (n1 - n0) * 1e3))
        print("(medians of %d rounds; marginal = (wall(N) - wall(0)) / N; eu-stack: one process "
              "per core, wall(N) / N)" % args.rounds)
        print("load average at end %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
