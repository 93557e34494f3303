#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Source lines and inlined frames (#28): ehbt against eu-stack on the same CPython core, and
ehbt's lines against GDB's, frame by frame.

    bench/lines_vs_eustack.py [--ehbt PATH] [--reps N] [--threads N] [--keep DIR]

The core is compare_core_tools.py's many-thread CPython core (/usr/bin/python3.11, 32
threads blocked in sleep / lock / queue / select plus the main thread in os.abort()); with
python3.11-dbg and libc6-dbg installed, libpython's and libc's frames have DWARF lines and
inlined calls. Interleaved rounds (one round = every tool once, after one untimed warm-up
each) of:

  ehbt core CORE --all-threads --json              lines and inlined calls (the default)
  ehbt core CORE --all-threads --json --no-lines   no debug info opened
  eu-stack -i -s -n 0 --core=CORE -e PYTHON        eu-stack with inlined frames and lines

and, where a user namespace can be made (`unshare --user --map-root-user --mount`), ehbt
with and without debug info present on the same core: both under the same wrapper, which
bind-mounts over /usr/lib/debug either that directory itself (debug info present) or an empty
one (absent: no separate debug file is found, as on a machine without -dbg packages):

  ehbt, debug present / absent                     with lines
  ehbt --no-lines, debug present / absent

Printed: median and minimum wall seconds, median user+sys CPU seconds (of the whole wrapper
for the wrapped runs: unshare, sh and mount add the same ~1 ms to both), the ratio of each
median to ehbt's (goal: eu-stack/ehbt > 1, ehbt stays faster), ehbt's cost of lines
(lines/no-lines), of debug info (present/absent), and how many frames and source lines each
printed. Then the same core three times in one Python process sharing one ImageStore (an
ehbt-triage worker): libdw inflates a debug file's compressed sections whole when it opens
it (most of the cost of lines with libc6-dbg), and only the first core pays for that.
`perf stat -e instructions` is used for instruction counts where the machine has
counters (virtual machines often have none: then CPU seconds only). Then GDB
(cores/gdb_expect.py) records every thread of the same core with its lines and inline frames,
and each ehbt frame is compared with it by the rules of tests/integration/lines_expect.py:
the number of GDB frames (inlined ones included) ehbt matches exactly, and the first
differences. The machine may be shared: the load average is printed before and after.
Standard library only; a missing tool is reported and skipped.
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TOOLS = _load("compare_core_tools", os.path.join(REPO, "bench", "compare_core_tools.py"))


def _lines_rules():
    """tests/integration/lines_expect.py's comparison, without pytest (its cores_expect
    import needs pytest only for its fixtures' failures)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
    # cores_expect (which lines_expect uses) calls pytest only in test helpers.
    sys.modules.setdefault("pytest", types.ModuleType("pytest"))
    try:
        import lines_expect  # noqa: E402
        return lines_expect
    except ImportError as e:
        TOOLS.log("no line comparison (%s)" % e)
        return None


def gdb_record(core, exe, out, timeout=600):
    """GDB's frames of every thread, with lines and inline frames (cores/gdb_expect.py)."""
    cmd = ["gdb", "-batch", "-nx", "-ex", "set pagination off", "-x",
           os.path.join(REPO, "cores", "gdb_expect.py"), "-ex", "ehbt-expect %s" % out,
           exe, core]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    with open(out) as f:
        return json.load(f)


def as_expected(raw):
    return {"threads": [{"tid": t["tid"], "frames": [
        {"function": f["name"], "location": f["location"], "inlined": f["inlined"]}
        for f in t["frames"] if "error" not in f]} for t in raw["threads"]]}


def frame_agreement(rules, exp, doc):
    """(frames equal to GDB's, {kind of difference: count}) over the flattened threads, by
    lines_expect's rules (physical names not compared: the raw record has no ELF symbols)."""
    got = {t["tid"]: rules.ehbt_flat(t) for t in doc["threads"]}
    same, kinds = 0, {}
    for t in exp["threads"]:
        want, have = rules.gdb_flat(t), got.get(t["tid"], [])
        if len(want) != len(have):
            kinds["thread with another frame count"] = kinds.get(
                "thread with another frame count", 0) + 1
        for w, g in zip(want, have):
            if w[0] != g[0]:
                why = "inlined vs physical"
            elif w[0] == "inline" and not rules.function_matches(g[1], w[1]):
                why = "inlined function name"
            elif not rules.position_matches(g[2], w[2]):
                why = "position: ehbt %s, GDB %s" % (
                    "-" if not g[2] else "%s:%s" % (g[2]["file"], g[2]["line"]),
                    "-" if not w[2] else "%s:%s" % (w[2]["file"], w[2]["line"]))
                why = "position" if len(kinds) > 40 else why
            else:
                same += 1
                continue
            kinds[why] = kinds.get(why, 0) + 1
    return same, kinds


def count_lines(doc):
    frames = [f for t in doc["threads"] for f in t["frames"]]
    inlined = sum(len(f.get("inlined") or []) for f in frames)
    located = sum(1 for f in frames if f.get("location"))
    return len(frames), inlined, located


def eu_counts(text):
    """(frame lines, of them with a source position) eu-stack printed: `#N  0x... fn` lines,
    a position line (`    /path/file.c:42:3`) after those it has one for."""
    frames = located = 0
    for line in text.splitlines():
        if line.startswith("#"):
            frames += 1
        elif line.startswith("    ") and ":" in line:
            located += 1
    return frames, located


HIDE_DEBUG = 'mount --bind "$0" /usr/lib/debug && exec "$@"'


def debug_wrapper(hide, empty):
    """The prefix that runs a command in a private mount namespace whose /usr/lib/debug is
    `empty` (hide) or itself; None when no user namespace can be made here."""
    if not shutil.which("unshare") or not os.path.isdir("/usr/lib/debug"):
        return None
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", HIDE_DEBUG,
              empty if hide else "/usr/lib/debug"]
    probe = subprocess.run(prefix + ["ls", "/usr/lib/debug"], capture_output=True, text=True)
    if probe.returncode != 0 or (hide and probe.stdout.strip()):
        return None
    return prefix


def perf_instructions(cmd, workdir):
    """Instructions the command retired (user and kernel), or None without counters."""
    if not shutil.which("perf"):
        return None
    out = os.path.join(workdir, "perf.csv")
    subprocess.run(["perf", "stat", "-x,", "-o", out, "-e", "instructions"] + cmd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(out) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2].startswith("instructions"):
                    return int(fields[0]) if fields[0].isdigit() else None
    except OSError:
        pass
    return None


STORE_SCRIPT = '''
import resource, sys, ehbt
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
store = ehbt.ImageStore()
for i in range(3):
    t0 = cpu()
    target = ehbt.open_core(sys.argv[1], store=store)
    ehbt.target_report(target, threads="all").to_dict()
    print("%.4f" % (cpu() - t0))
    del target
'''


def shared_store_runs(ehbt_path, core, workdir):
    """The same core three times in one process with one ImageStore (what an ehbt-triage
    worker does): the debug files' DWARF -- libdw inflates its compressed sections whole when
    it opens them -- is opened by the first core only, and kept with the image."""
    pydir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(ehbt_path)))), "engine", "python")
    env = dict(os.environ, PYTHONPATH=pydir)
    proc = subprocess.run([sys.executable, "-c", STORE_SCRIPT, core], capture_output=True,
                          text=True, env=env, cwd=workdir, timeout=600)
    if proc.returncode != 0:
        print("no in-process run (ehbt Python module from %s): %s" % (
            pydir, proc.stderr.strip().splitlines()[-1:] or proc.returncode))
        return
    secs = [float(x) for x in proc.stdout.split()]
    print("in-process, one ImageStore, lines: cores #1..#%d cost %s s cpu" % (
        len(secs), " / ".join("%.4f" % x for x in secs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehbt", default=os.path.join(REPO, "build", "engine", "tools", "ehbt"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--keep", help="make the core in DIR and keep it")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="ehbt-lines-bench.")
    os.makedirs(work, exist_ok=True)
    print("load before: %s" % TOOLS.uptime())
    core = TOOLS.make_python_core(TOOLS.MANY_THREADS_SCRIPT, work, "py32threads", 30)
    if not core:
        print("no CPython core could be made")
        return 1
    exe = os.path.realpath(TOOLS.PYTHON)
    runs = {
        "ehbt (lines)": [args.ehbt, "core", core, "--all-threads", "--json"],
        "ehbt --no-lines": [args.ehbt, "core", core, "--all-threads", "--json", "--no-lines"],
        "eu-stack -i -s": ["eu-stack", "-i", "-s", "-n", "0", "--core=" + core, "-e", exe],
    }
    runs = {k: v for k, v in runs.items() if shutil.which(v[0]) or os.path.exists(v[0])}
    empty = os.path.join(work, "no-debug")
    os.makedirs(empty, exist_ok=True)
    present, absent = debug_wrapper(False, empty), debug_wrapper(True, empty)
    if present and absent:
        ehbt_cmd = runs["ehbt (lines)"]
        runs["debug present"] = present + ehbt_cmd
        runs["debug absent"] = absent + ehbt_cmd
        runs["present --no-lines"] = present + ehbt_cmd + ["--no-lines"]
        runs["absent --no-lines"] = absent + ehbt_cmd + ["--no-lines"]
    else:
        print("no user namespace here: ehbt without debug info is not measured")
    times = {k: [] for k in runs}
    cpus = {k: [] for k in runs}
    base_name = "ehbt (lines)"
    outputs = {}
    for name, cmd in list(runs.items()):  # warm-up, and the output to count
        outputs[name] = TOOLS.run_measured(cmd, 300, work)
        if outputs[name].rc not in (0, 1):  # ehbt: 1 = a walk stopped early; eu-stack: 1 too
            print("%s: exit %s, not timed: %s" % (name, outputs[name].rc,
                                                  outputs[name].out[-300:].strip()))
            del runs[name]
    for _ in range(args.reps):
        for name, cmd in runs.items():
            r = TOOLS.run_measured(cmd, 300, work)
            times[name].append(r.secs)
            cpus[name].append(r.cpu)
    base = statistics.median(times[base_name]) if times.get(base_name) else None
    print("\nCPython core %s (%d MB), %d rounds" % (core, os.path.getsize(core) >> 20, args.reps))
    print("%-18s %9s %9s %9s %9s  %s" % ("tool", "median s", "min s", "cpu s", "x ehbt",
                                          "printed"))
    for name in runs:
        if not times[name]:
            continue
        med = statistics.median(times[name])
        out = outputs[name]
        if name.startswith("ehbt") or name.startswith(("debug", "present", "absent")):
            try:
                n, inl, loc = count_lines(json.loads(out.out))
                printed = "%d frames, %d inlined calls, %d with a location" % (n, inl, loc)
            except ValueError:
                printed = "exit %s: %s" % (out.rc, out.out[:200])
        else:
            n, loc = eu_counts(out.out)
            printed = "%d frame lines (inlined included), %d with a position" % (n, loc)
        print("%-18s %9.4f %9.4f %9.4f %9.2f  %s" % (
            name, med, min(times[name]), statistics.median(cpus[name]),
            med / base if base else float("nan"), printed))
    if base and times.get("eu-stack -i -s"):
        ratio = statistics.median(times["eu-stack -i -s"]) / base
        print("eu-stack -i -s / ehbt = %.2fx (%s)" % (ratio, "ehbt faster" if ratio > 1
                                                      else "ehbt SLOWER"))
    if base and times.get("ehbt --no-lines"):
        print("ehbt lines / no-lines = %.2fx" % (base / statistics.median(times["ehbt --no-lines"])))
    for with_, without in (("debug present", "debug absent"),
                           ("present --no-lines", "absent --no-lines")):
        if times.get(with_) and times.get(without):
            print("ehbt%s: debug info present / absent = %.2fx wall, %.2fx cpu (%.4f / %.4f s "
                  "cpu)" % (" --no-lines" if "no-lines" in with_ else "",
                            statistics.median(times[with_]) / statistics.median(times[without]),
                            statistics.median(cpus[with_]) / statistics.median(cpus[without]),
                            statistics.median(cpus[with_]), statistics.median(cpus[without])))
    counts = {name: perf_instructions(cmd, work) for name, cmd in runs.items()}
    if any(counts.values()):
        print("instructions: " + ", ".join("%s %s" % (k, v) for k, v in counts.items()))
    else:
        print("instructions: no hardware counters here (perf stat -e instructions)")

    shared_store_runs(args.ehbt, core, work)

    rules = _lines_rules()
    if rules and shutil.which("gdb") and "ehbt (lines)" in outputs:
        try:
            doc = json.loads(outputs["ehbt (lines)"].out)
            raw = gdb_record(core, exe, os.path.join(work, "gdb.json"))
        except (ValueError, OSError, subprocess.TimeoutExpired) as e:
            print("\nno GDB comparison: %s" % e)
        else:
            exp = as_expected(raw)
            total = sum(len(rules.gdb_flat(t)) for t in exp["threads"])
            errors = rules.compare_lines(exp, doc, "cpython", physical_names=False)
            same, kinds = frame_agreement(rules, exp, doc)
            print("\nGDB: %d threads, %d frames with inlined ones; ehbt gives %d of them GDB's "
                  "kind, function and position (%d differ), %d threads differ somewhere"
                  % (len(exp["threads"]), total, same, total - same, len(errors)))
            for why, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:8]:
                print("  %5d  %s" % (n, why))
    print("\nload after: %s" % TOOLS.uptime())
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
