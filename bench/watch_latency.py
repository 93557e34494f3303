#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage watch, measured as users run it (issue #31): all numbers in one run.

    bench/watch_latency.py [--build DIR] [-j N] [--latency N] [--python N] [--threads T]
                           [--burst N] [--python-burst N] [--memory N] [--work DIR]

1. Latency: a real `ehbt-triage watch` on an empty spool (fresh SQLite store); cores are
   renamed into the spool one at a time (each written first under a temporary name in the
   spool, as systemd-coredump's fallback does), and the time from the rename to the core's row
   being committed is taken: the watch logs each core after its row is committed when nothing
   else is waiting (`t=`, seconds since the epoch, the same clock as the rename's), and the
   row is read back from the store by this script before the next core goes in. For the small
   fixture cores (cores/out/x86_64: --latency cores, distinct contents cycling over several
   programs) and for CPython cores with THREADS+1 threads made as bench/triage_vs_eustack.sh
   makes them (--python cores). Median, 90th percentile and the first (cold) core's.
2. Throughput: --burst distinct small cores renamed into the spool at once; cores/s from the
   first rename to the last row committed; then `eu-stack -n 0 --core CORE --executable EXE` on
   the same files one after the other (one process per core, as a user's loop runs it), and
   the ratio; also the CPU time per core of both (the watch process and its workers; the
   eu-stack processes), which depends less on what else the machine runs than wall time. The same for --python-burst CPython cores.
3. Memory: --memory synthetic cores (fixture cores made distinct by a tail of bytes the engine
   does not read, under new names), fed in batches of 200 and deleted once stored (so that
   the disk holds a batch only); the RSS of the watch process and the sum over its workers at
   every 1,000th core (and the last), and the ratio of the last core's to core 1,000's (flat
   means within 10%). Only this part: --latency 0 --python 0 --burst 0 --python-burst 0.

Distinct contents: each small core gets a tail (`EHBT-BENCH-N`) past its last segment, so that
its content key is its own (the analysis does not read it); the CPython cores are distinct
runs. Needs: elfutils (eu-stack), zstd is not needed. core_pattern must write `core` files into
the working directory for the CPython cores (else gdb's gcore makes them, slower).
"""

import argparse
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "cores", "out", "x86_64")
SMALL = ("chain", "drap", "noreturn", "sighandler", "terminate", "overflow", "plt",
         "pltcrash", "smashed", "coroutine")
PY = "/usr/bin/python3"


def small_kinds():
    kinds = [k for k in SMALL if os.path.exists(os.path.join(FIXTURES, k + ".core"))
             and os.path.exists(os.path.join(FIXTURES, "bin", k))]
    if not kinds:
        sys.exit("no fixture cores in %s (make them with cores/make-cores.sh)" % FIXTURES)
    return kinds


def small_core(dest, kind, n):
    with open(os.path.join(FIXTURES, kind + ".core"), "rb") as f:
        data = f.read()
    with open(dest, "wb") as f:
        f.write(data + b"EHBT-BENCH-%010d" % n)
    return dest, os.path.join(FIXTURES, "bin", kind)


def python_cores(work, n, threads):
    """n cores of /usr/bin/python3 with `threads` threads waiting and the main one in
    os.abort() (bench/triage_vs_eustack.sh's program)."""
    prog = ("import os, threading, time\nev = threading.Event()\n"
            "ts = [threading.Thread(target=ev.wait) for _ in range(%d)]\n"
            "for t in ts: t.start()\ntime.sleep(0.3)\nos.abort()\n" % threads)
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    exe = os.path.realpath(PY)
    out = []
    for i in range(n):
        d = os.path.join(work, "pyrun%d" % i)
        os.makedirs(d)
        dest = os.path.join(work, "py%d.core" % i)
        if pattern.startswith("core") and "/" not in pattern:
            def unlimited():
                resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
            subprocess.run([PY, "-c", prog], cwd=d, preexec_fn=unlimited,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            found = [f for f in os.listdir(d) if f.startswith("core")]
            if not found:
                sys.exit("no core written by python3 in %s" % d)
            os.rename(os.path.join(d, found[0]), dest)
        else:
            subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + dest,
                            "-ex", "kill", "--args", PY, "-c", prog],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(d)
        out.append((dest, exe))
    return out


class Watch:
    """ehbt-triage watch, its log read by a thread: path -> (t, ms) of each stored core."""

    def __init__(self, build, spool, db, jobs):
        env = dict(os.environ, PYTHONPATH=os.path.join(build, "engine", "python"),
                   EHBT_BIN=os.path.join(build, "engine", "tools", "ehbt"))
        for k in ("EHBT_TRIAGE_TEST_DELAY", "EHBT_TRIAGE_TEST_FAULT", "JOURNAL_STREAM"):
            env.pop(k, None)
        self.proc = subprocess.Popen(
            [PY, os.path.join(ROOT, "triage", "ehbt-triage"), "watch", "--db", db, "-j",
             str(jobs), spool], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.done = {}
        self.cond = threading.Condition()
        self.started = False
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()
        with self.cond:
            self.cond.wait_for(lambda: self.started or self.proc.poll() is not None, 120)
        if not self.started:
            sys.exit("watch did not start:\n" + "".join(self.lines[-20:]))

    def _read(self):
        core = re.compile(r"event=core status=(\w+) path=(\"(?:[^\"\\]|\\.)*\"|\S+)"
                          r"(?: ms=([0-9.]+))? t=([0-9.]+)")
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line)
                if len(self.lines) > 200:
                    del self.lines[:100]
                if "event=started" in line:
                    self.started = True
                m = core.search(line)
                if m:
                    path = m.group(2)
                    if path.startswith('"'):
                        path = re.sub(r"\\(.)", r"\1", path[1:-1])
                    self.done[path] = (m.group(1), float(m.group(4)),
                                       float(m.group(3)) if m.group(3) else None)
                self.cond.notify_all()

    def wait(self, paths, timeout=600):
        with self.cond:
            ok = self.cond.wait_for(lambda: all(p in self.done for p in paths), timeout)
        if not ok:
            missing = [p for p in paths if p not in self.done][:5]
            sys.exit("not stored within %ds: %s\n%s" % (timeout, missing,
                                                        "".join(self.lines[-20:])))
        return [self.done[p] for p in paths]

    def rss_kib(self):
        """(watch process RSS, sum of its workers' RSS) in KiB."""
        def rss(pid):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            return int(line.split()[1])
            except OSError:
                pass
            return 0
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            children = []
        return rss(self.proc.pid), sum(rss(c) for c in children)

    def cpu_seconds(self):
        """user+system CPU seconds of the watch process and its live workers."""
        tick = os.sysconf("SC_CLK_TCK")

        def cpu(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / tick
            except OSError:
                return 0.0
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            children = []
        return cpu(self.proc.pid) + sum(cpu(c) for c in children)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(120)


def stats(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return statistics.median(values), p90


def latency(watch, spool, db, cores, label):
    """Each core renamed in alone; ms from the rename to the row committed."""
    con = sqlite3.connect(db)
    out = []
    for n, (src, _exe) in enumerate(cores):
        name = "core.lat%s.0.3ec699180e1d4c22ade03ec681fa8798.%d.%d" % (
            label, n + 1, 1717652311000000 + n)
        tmp = os.path.join(spool, ".#" + name + "x1y2")
        os.link(src, tmp) if os.stat(src).st_dev == os.stat(spool).st_dev else \
            shutil.copyfile(src, tmp)
        dest = os.path.join(spool, name)
        t0 = time.time()
        os.rename(tmp, dest)
        ((status, t, _ms),) = watch.wait([dest])
        if status != "ok":
            sys.exit("%s: %s" % (dest, status))
        # Committed: another connection sees the row now.
        if not con.execute("SELECT 1 FROM cores WHERE path = ?", (dest,)).fetchone():
            sys.exit("%s logged but not visible in the store" % dest)
        out.append((t - t0) * 1000.0)
    con.close()
    return out


def burst(watch, spool, cores, label):
    """Every core renamed in at once: cores/s from the first rename to the last commit."""
    dests = []
    staged = []
    for n, (src, exe) in enumerate(cores):
        name = "burst-%s-%05d.core" % (label, n)
        tmp = os.path.join(spool, ".#" + name)
        os.link(src, tmp) if os.stat(src).st_dev == os.stat(spool).st_dev else \
            shutil.copyfile(src, tmp)
        staged.append((tmp, os.path.join(spool, name), exe))
    cpu0 = watch.cpu_seconds()
    t0 = time.time()
    for tmp, dest, _exe in staged:
        os.rename(tmp, dest)
        dests.append(dest)
    results = watch.wait(dests)
    bad = [r for r in results if r[0] != "ok"]
    if bad:
        sys.exit("%d cores not ok: %s" % (len(bad), bad[:3]))
    t_end = max(t for _s, t, _ms in results)
    cpu_ms = (watch.cpu_seconds() - cpu0) * 1000.0 / len(dests)
    return len(dests) / (t_end - t0), cpu_ms, [(d, exe) for (_t, d, exe) in staged]


def eustack_rate(cores):
    """(cores/s, CPU ms per core) of one eu-stack process per core, in turn."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    for core, exe in cores:
        # -n 0: every frame, as ehbt walks them (eu-stack stops at 256 by default, which on
        # the stack overflow core leaves out 680 frames and the libc ones below them).
        subprocess.run(["eu-stack", "-n", "0", "--core", core, "--executable", exe],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return len(cores) / wall, cpu * 1000.0 / len(cores)


def memory(watch, spool, work, total, kinds):
    """RSS at every 1,000th core and at `total` of a long run fed in batches of 200."""
    points = {}
    n = 0
    batch = 200
    marks = sorted(set(range(1000, total + 1, 1000)) | {min(1000, total), total})
    t0 = time.monotonic()
    while n < total:
        paths = []
        for i in range(n, min(total, n + batch)):
            src, _exe = small_core(os.path.join(work, "m.tmp"), kinds[i % len(kinds)], 10**6 + i)
            dest = os.path.join(spool, "mem-%06d.core" % i)
            os.rename(src, dest)
            paths.append(dest)
        watch.wait(paths, timeout=1800)
        n += len(paths)
        for p in paths:
            os.unlink(p)
        for m in marks:
            if n >= m and m not in points:
                points[m] = watch.rss_kib()
                print("  core %d: watch %d KiB, workers %d KiB (%.0f s)" % (
                    m, points[m][0], points[m][1], time.monotonic() - t0), flush=True)
    return points


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--latency", type=int, default=40, help="small cores, one at a time")
    ap.add_argument("--python", type=int, default=10, help="CPython cores, one at a time")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--burst", type=int, default=600, help="small cores at once")
    ap.add_argument("--python-burst", type=int, default=60, help="CPython cores at once")
    ap.add_argument("--memory", type=int, default=0,
                    help="cores of the long run (e.g. 10000; 0: skip)")
    ap.add_argument("--work", default=None, help="working directory (default: a new one in /tmp)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="ehbt-watch-bench-", dir=args.work)
    try:
        spool = os.path.join(work, "spool")
        os.makedirs(spool)
        src = os.path.join(work, "src")
        os.makedirs(src)
        kinds = small_kinds()
        print("machine: %d CPUs, load average %s" % (os.cpu_count(),
                                                     " ".join(map(str, os.getloadavg()))))
        # Distinct contents for every core of the run: none is "seen before".
        small = [small_core(os.path.join(src, "s%d.core" % i), kinds[i % len(kinds)], i)
                 for i in range(args.latency + args.burst)]
        pyc = []
        if args.python or args.python_burst:
            print("making %d CPython cores (%d+1 threads) ..." % (
                args.python + args.python_burst, args.threads), flush=True)
            pyc = python_cores(src, args.python + args.python_burst, args.threads)
        db = os.path.join(work, "store.sqlite")
        watch = Watch(build, spool, db, args.jobs)
        try:
            print("ehbt-triage watch -j %d, SQLite store, empty spool" % args.jobs)
            if args.latency:
                ms = latency(watch, spool, db, small[:args.latency], "small")
                med, p90 = stats(ms[1:] or ms)
                print("latency, small fixture cores (%d, %d programs): median %.1f ms, "
                      "p90 %.1f ms, first (cold) %.1f ms" % (len(ms), len(kinds), med, p90,
                                                              ms[0]))
            if args.python:
                ms = latency(watch, spool, db, pyc[:args.python], "py")
                med, p90 = stats(ms[1:] or ms)
                print("latency, CPython cores (%d, %d threads): median %.1f ms, p90 %.1f ms, "
                      "first (cold) %.1f ms" % (len(ms), args.threads + 1, med, p90, ms[0]))
            if args.burst:
                rate, cpu, placed = burst(watch, spool, small[args.latency:], "small")
                eu, eu_cpu = eustack_rate(placed)
                print("burst of %d small cores: watch %.1f cores/s (%.2f CPU ms/core), eu-stack "
                      "loop %.1f cores/s (%.2f CPU ms/core), ratio %.1fx wall, %.1fx CPU" % (
                          len(placed), rate, cpu, eu, eu_cpu, rate / eu, eu_cpu / cpu))
            if args.python_burst:
                rate, cpu, placed = burst(watch, spool, pyc[args.python:], "py")
                eu, eu_cpu = eustack_rate(placed)
                print("burst of %d CPython cores: watch %.1f cores/s (%.2f CPU ms/core), "
                      "eu-stack loop %.1f cores/s (%.2f CPU ms/core), ratio %.1fx wall, %.1fx "
                      "CPU" % (len(placed), rate, cpu, eu, eu_cpu, rate / eu, eu_cpu / cpu))
        finally:
            watch.stop()
        if args.memory:
            mspool = os.path.join(work, "mspool")
            os.makedirs(mspool)
            watch = Watch(build, mspool, os.path.join(work, "mem.sqlite"), args.jobs)
            try:
                points = memory(watch, mspool, work, args.memory, kinds)
            finally:
                watch.stop()
            first, last = min(points), max(points)
            for mark in sorted(points):
                parent, workers = points[mark]
                print("RSS at core %d: watch %.1f MiB, workers %.1f MiB" % (
                    mark, parent / 1024.0, workers / 1024.0), flush=True)
            if first != last:
                print("RSS ratio core %d / core %d: watch %.3f, workers %.3f" % (
                    last, first, points[last][0] / points[first][0],
                    points[last][1] / max(1, points[first][1])))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
