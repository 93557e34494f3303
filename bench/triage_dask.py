#!/usr/bin/python3
"""ehbt-triage on a dask cluster vs local workers, on the same machine and the same cores.

    /usr/bin/python3 bench/triage_dask.py [--build DIR] [--cores N] [--threads T] [--repeats R]

Makes N cores of /usr/bin/python3 (T threads blocked in a wait, main thread in os.abort()),
starts `dask scheduler` and one `dask worker` (one thread) on 127.0.0.1, and times, each with
a fresh SQLite store, interleaved R times: local -j1, local -j2, --scheduler with 1 worker;
then adds a second worker and times --scheduler with 2 workers. Prints median wall seconds,
cores/s, and the distributed path's per-core overhead: (dask with 1 worker - local -j1) / N,
both one analysis process at a time.
"""

import argparse
import os
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


def timed(cmd, env, work):
    db = os.path.join(work, "bench.sqlite")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.monotonic()
    proc = subprocess.run(cmd + ["--db", db], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))
    return wall


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
        runs = {"local -j1": triage + ["-j", "1", cores], "local -j2": triage + ["-j", "2", cores],
                "dask, 1 worker": triage + ["--scheduler", addr, cores]}
        times = {k: [] for k in runs}
        timed(runs["dask, 1 worker"], env, work)  # warm-up: the worker's helper starts
        for _ in range(a.repeats):
            for k, cmd in runs.items():
                times[k].append(timed(cmd, env, work))
        spawn(worker)
        wait_workers(2)
        timed(triage + ["--scheduler", addr, cores], env, work)  # the new helper starts
        times["dask, 2 workers"] = [timed(triage + ["--scheduler", addr, cores], env, work)
                                    for _ in range(a.repeats)]
        print("%d cores, %d repeats, median wall:" % (a.cores, a.repeats))
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in med.items():
            print("  %-16s %6.2f s  %6.1f cores/s" % (k, v, a.cores / v))
        print("distributed per-core overhead (dask 1 worker - local -j1) / N: %.1f ms"
              % ((med["dask, 1 worker"] - med["local -j1"]) / a.cores * 1000))
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
