#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What writing line answers costs a run when the cache directory already holds many files.

    bench/cache_write_cost.py [--ehbt PATH] [--baseline PATH] [--files N] [--reps R]

A run whose pcs are new to the cache (every new crash of a resident processor) writes the
answers of each DWARF file it looked up (docs/cli.md, "Line answers"). Writing a cache file
used to stat every file of the directory to keep it under its cap; the directory's usage
ledger (engine/src/lines/cache_dir.cpp) spares that. This times `ehbt core --all-threads
--json` on the chain fixture core in three states of a private cache directory:

  * cold, nearly empty: the run's answers removed before each run, nothing else there;
  * cold, N files: the same with N other answer files (600 bytes each) in lines/;
  * warm, N files: the answers kept (no write).

With --baseline, a second ehbt build runs the same, interleaved run by run, and the ratios
are printed. Medians of --reps runs. Needs the fixture cores (cores/make-cores.sh).
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("EHBT_CORES_OUT") or os.path.join(ROOT, "cores", "out")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehbt", default=os.path.join(ROOT, "build", "engine", "tools", "ehbt"))
    ap.add_argument("--baseline", help="another ehbt build to time the same way")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    core = os.path.join(OUT, "x86_64", "chain.core")
    exe = os.path.join(OUT, "x86_64", "bin", "chain")
    if not os.path.exists(core):
        sys.exit("no fixture core %s (run cores/make-cores.sh)" % core)
    builds = [("ehbt", os.path.abspath(args.ehbt))]
    if args.baseline:
        builds.append(("baseline", os.path.abspath(args.baseline)))
    work = tempfile.mkdtemp(prefix="ehbt-cache-cost.")
    try:
        small, big = os.path.join(work, "small"), os.path.join(work, "big")
        for d in (small, big):
            os.makedirs(os.path.join(d, "lines"), mode=0o700)
            os.chmod(d, 0o700)
        for i in range(args.files):
            with open(os.path.join(big, "lines", "%040x.%016x.lines" % (i, i)), "wb") as f:
                f.write(b"x" * 600)

        def run(build, cache):
            env = dict(os.environ, EHBT_CACHE_DIR=cache, DEBUGINFOD_URLS="")
            t0 = time.perf_counter()
            # No timeout: waiting with one polls, which adds milliseconds to a 1 ms run.
            subprocess.run([build, "core", core, "--exe", exe, "--all-threads", "--json"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            return time.perf_counter() - t0

        planted = set(os.listdir(os.path.join(big, "lines")))
        run(builds[0][1], small)
        own = glob.glob(os.path.join(small, "lines", "*.lines"))
        if not own:
            sys.exit("the run wrote no line answers (no debug info for chain's modules?)")

        def forget(cache):
            """Removes the answers runs wrote (each build names its own files), not the
            planted files and not the directory's usage ledger."""
            for name in os.listdir(os.path.join(cache, "lines")):
                if name.endswith(".lines") and name not in planted:
                    os.unlink(os.path.join(cache, "lines", name))

        states = [("cold, nearly empty", small, True), ("cold, %d files" % args.files, big, True),
                  ("warm, %d files" % args.files, big, False)]
        times = {}
        for rep in range(args.reps):
            for label, cache, cold in states:
                if cold:
                    forget(cache)  # once for all builds: each writes files of its own name
                # Which build runs first alternates: the first run after a change of state
                # pays for it (the dentries a scan read, say).
                for name, build in builds if rep % 2 == 0 else builds[::-1]:
                    times.setdefault((label, name), []).append(run(build, cache))
        print("ehbt core on chain.core, %d answer files written per cold run; median of %d runs"
              % (len(own), args.reps))
        for label, _cache, _cold in states:
            row = ["%-24s" % label]
            for name, _build in builds:
                row.append("%s %.2f ms" % (name, statistics.median(times[(label, name)]) * 1e3))
            if args.baseline:
                a = statistics.median(times[(label, "ehbt")])
                b = statistics.median(times[(label, "baseline")])
                row.append("ehbt/baseline %.3f" % (a / b))
            print("  ".join(row))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
