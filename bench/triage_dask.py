#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage on a dask cluster vs local workers, on the same machine and the same cores.

    /usr/bin/python3 bench/triage_dask.py [--build DIR] [--cores N] [--threads T] [--repeats R]

Makes N cores of /usr/bin/python3 (T threads blocked in a wait, main thread in os.abort()),
starts `dask scheduler` and one `dask worker` (one thread) on 127.0.0.1, and times, each with
a fresh SQLite store, interleaved R times: local -j1, local -j2, --scheduler with 1 worker;
then adds a second worker and times --scheduler with 2 workers. Every mode also runs on the
first half of the cores, which splits its wall time into a fixed part (start-up: the dask
client's imports and connection cost seconds) and a per-core part (the slope between the
two batch sizes). Prints median wall seconds, cores/s, fixed and per-core cost per mode, and
the distributed path's per-core overhead: dask with 1 worker minus local -j1 (both one
analysis process at a time).
"""

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = """import os, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(%d)]
for t in ts: t.start()
time.sleep(0.3)
os.abort()"""


def make_cores(n, threads, out):
    os.makedirs(out)
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    for i in range(n):
        d = tempfile.mkdtemp(dir=out)
        core = os.path.join(out, "py%d.core" % i)
        if pattern.startswith("core") and "/" not in pattern:
            subprocess.run(["bash", "-c", "ulimit -c unlimited; exec /usr/bin/python3 -c \"$0\"",
                            PROG % threads], cwd=d, stderr=subprocess.DEVNULL)
            got = [f for f in os.listdir(d) if f.startswith("core")]
            shutil.move(os.path.join(d, got[0]), core)
        else:
            subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + core, "-ex",
                            "kill", "--args", "/usr/bin/python3", "-c", PROG % threads],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(d)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_cpu(procs):
    """user+sys seconds of the dask processes and their children (nannies' workers, helpers)
    so far."""
    import psutil

    total = 0.0
    for p in procs:
        try:
            ps = psutil.Process(p.pid)
            for q in [ps] + ps.children(recursive=True):
                t = q.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def timed(cmd, env, work, procs=()):
    """(wall seconds, CPU seconds of ehbt-triage, its children and the cluster)."""
    db = os.path.join(work, "bench.sqlite")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    c0, r0 = cluster_cpu(procs), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd + ["--db", db], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    c1, r1 = cluster_cpu(procs), resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime) + (c1 - c0)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "build"))
    ap.add_argument("--cores", type=int, default=60)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ehbt-dask-bench-")
    procs = []
    try:
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(a.build), "engine",
                                                       "python"))
        wenv = dict(env, PYTHONPATH=os.path.join(HERE, "triage") + os.pathsep + env["PYTHONPATH"])
        cores = os.path.join(work, "cores")
        print("making %d cores with %d+1 threads ..." % (a.cores, a.threads), flush=True)
        make_cores(a.cores, a.threads, cores)
        half = os.path.join(work, "half")
        os.makedirs(half)
        for name in sorted(os.listdir(cores))[: a.cores // 2]:
            os.link(os.path.join(cores, name), os.path.join(half, name))
        port = free_port()
        addr = "tcp://127.0.0.1:%d" % port
        log = open(os.path.join(work, "dask.log"), "w")

        def spawn(cmd):
            procs.append(subprocess.Popen(cmd, env=wenv, stdout=log, stderr=subprocess.STDOUT,
                                          cwd=work))

        spawn(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
               "--no-dashboard", "--dashboard-address", "127.0.0.1:0"])
        worker = ["dask", "worker", addr, "--nthreads", "1", "--no-dashboard",
                  "--local-directory", work]
        spawn(worker)
        from distributed import Client

        def wait_workers(n):
            with Client(addr, timeout=60, set_as_default=False) as c:
                c.wait_for_workers(n, timeout=120)

        wait_workers(1)
        triage = ["/usr/bin/python3", os.path.join(HERE, "triage", "ehbt-triage")]
        modes = {"local -j1": ["-j", "1"], "local -j2": ["-j", "2"],
                 "dask, 1 worker": ["--scheduler", addr]}
        times = {}

        def measure(names):
            for _ in range(a.repeats):
                for k in names:
                    for batch, n in ((cores, a.cores), (half, a.cores // 2)):
                        times.setdefault((k, n), []).append(
                            timed(triage + modes[k] + [batch], env, work, procs))

        load = open("/proc/loadavg").read().split()[0]
        timed(triage + modes["dask, 1 worker"] + [half], env, work)  # warm-up: helper starts
        measure(list(modes))
        spawn(worker)
        wait_workers(2)
        modes["dask, 2 workers"] = ["--scheduler", addr]
        timed(triage + modes["dask, 2 workers"] + [cores], env, work)  # second helper starts
        measure(["dask, 2 workers"])
        n1, n2 = a.cores // 2, a.cores
        print("%d cores (and the first %d), %d repeats, medians; load average before: %s"
              % (n2, n1, a.repeats, load))
        slope, cpu_slope = {}, {}
        for k in modes:
            t2 = statistics.median(w for w, _ in times[(k, n2)])
            t1 = statistics.median(w for w, _ in times[(k, n1)])
            u2 = statistics.median(c for _, c in times[(k, n2)])
            u1 = statistics.median(c for _, c in times[(k, n1)])
            slope[k] = (t2 - t1) / (n2 - n1)
            cpu_slope[k] = (u2 - u1) / (n2 - n1)
            print("  %-16s wall %6.2f s %6.1f cores/s | wall fixed %5.2f s, per core %6.1f ms "
                  "| CPU %6.2f s, per core %6.1f ms" % (
                      k, t2, n2 / t2, t2 - slope[k] * n2, slope[k] * 1000, u2,
                      cpu_slope[k] * 1000))
        print("distributed per-core overhead (dask 1 worker - local -j1, per-core parts): "
              "wall %.1f ms, CPU %.1f ms" % (
                  (slope["dask, 1 worker"] - slope["local -j1"]) * 1000,
                  (cpu_slope["dask, 1 worker"] - cpu_slope["local -j1"]) * 1000))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
