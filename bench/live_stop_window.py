#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How long `ehbt pid` stops a live process, whole-process and one thread at a time.

    bench/live_stop_window.py [--ehbt PATH] [--baseline PATH] [--reps N]

Builds bench/live_park.c (64 threads parked 30 calls deep plus a heartbeat thread that
records the largest gap between its 100 us wake-ups), then, interleaved, --reps times each:
  * ehbt pid --all-threads --json                          (whole process stopped at once)
  * ehbt pid --all-threads --json --one-thread-at-a-time   (one thread at a time)
  * --baseline PATH pid --all-threads --json [--one-thread-at-a-time]
                                                           (another ehbt build, if given)
  * eu-stack -p PID                                        (if installed)
  * nothing, for as long as the last run took               (the machine's own noise)
For each it shows the median and maximum of the heartbeat's largest gap (the pause the
heartbeat thread saw; in one-thread-at-a-time mode that is one thread's pause), ehbt's own
"stopped_us", the wall time of the run, and the frames printed. Standard library only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def build_target(tmp):
    exe = os.path.join(tmp, "live_park")
    subprocess.run(["cc", "-O2", "-fno-optimize-sibling-calls", "-fasynchronous-unwind-tables",
                    "-pthread", "-o", exe, os.path.join(HERE, "live_park.c")], check=True)
    return exe


class Park:
    def __init__(self, exe):
        self.proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError("live_park did not start")
        self.pid = int(line[1])

    def ask(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def frames_of(kind, out):
    if kind == "eu-stack":
        return sum(1 for l in out.splitlines() if l.startswith("#"))
    try:
        doc = json.loads(out)
    except ValueError:
        return 0, None
    return sum(len(t["frames"]) for t in doc["threads"]), doc.get("stopped_us")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ehbt", default=os.path.join(REPO, "build", "engine", "tools", "ehbt"))
    ap.add_argument("--baseline", help="another ehbt binary to compare with")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()

    tools = [("ehbt", [args.ehbt, "pid", "{pid}", "--all-threads", "--json"]),
             ("ehbt one-at-a-time",
              [args.ehbt, "pid", "{pid}", "--all-threads", "--json", "--one-thread-at-a-time"])]
    if args.baseline:
        tools.append(("baseline", [args.baseline, "pid", "{pid}", "--all-threads", "--json"]))
        tools.append(("baseline one-at-a-time", [args.baseline, "pid", "{pid}", "--all-threads",
                                                 "--json", "--one-thread-at-a-time"]))
    if shutil.which("eu-stack"):
        tools.append(("eu-stack", ["eu-stack", "-p", "{pid}"]))
    tools.append(("(idle)", None))

    with tempfile.TemporaryDirectory() as tmp:
        park = Park(build_target(tmp))
        results = {name: {"gap": [], "stopped": [], "wall": [], "frames": []} for name, _ in tools}
        last_wall = 0.01
        try:
            for _ in range(args.reps):
                for name, cmd in tools:
                    park.ask("reset")
                    start = time.monotonic()
                    if cmd is None:
                        time.sleep(last_wall)
                        out = ""
                    else:
                        argv = [a.replace("{pid}", str(park.pid)) for a in cmd]
                        out = subprocess.run(argv, capture_output=True, text=True,
                                             timeout=120).stdout
                    wall = time.monotonic() - start
                    if cmd is not None:
                        last_wall = wall
                    r = results[name]
                    r["gap"].append(int(park.ask("gap")))
                    r["wall"].append(wall * 1000)
                    if name == "eu-stack":
                        r["frames"].append(frames_of("eu-stack", out))
                    elif cmd is not None:
                        frames, stopped = frames_of("ehbt", out)
                        r["frames"].append(frames)
                        if stopped is not None:
                            r["stopped"].append(stopped)
        finally:
            park.close()

    with open("/proc/loadavg") as f:
        print("load average:", " ".join(f.read().split()[:3]))
    print(f"{'tool':<22} {'gap med us':>11} {'gap max us':>11} {'stopped_us med':>15} "
          f"{'wall med ms':>12} {'frames':>7}")
    for name, _ in tools:
        r = results[name]
        stopped = f"{statistics.median(r['stopped']):.0f}" if r["stopped"] else "-"
        frames = str(statistics.median(r["frames"])) if r["frames"] else "-"
        print(f"{name:<22} {statistics.median(r['gap']):>11.0f} {max(r['gap']):>11} "
              f"{stopped:>15} {statistics.median(r['wall']):>12.1f} {frames:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
