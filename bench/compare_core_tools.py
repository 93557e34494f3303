#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ehbt vs. eu-stack vs. GDB vs. the floor on the same cores: wall time, frames, peak RSS.

    bench/compare_core_tools.py [--ehbt PATH] [--engine-bench PATH] [--reps N] [--quick]
                                [--no-gdb] [--fixtures-only] [--cold-lines]

The floor is bench/core_floor.c: it maps the core and the modules and touches exactly the
pages the walk needs (the core's notes, the stack between each thread's frames, and per
frame the .eh_frame_hdr search path and FDE page), listed from ehbt's own output; nothing
ehbt does can cost less. Runs are interleaved (one round = every tool once), and the
verdicts compare ehbt with eu-stack (goal: >= 1.2x faster on every core, >= 10x on the
CPython core), with the floor (goal: within 2x) and with the symbol floor "floor+sym" (issue
#31, goal: within 1.5x): the same pages plus, per module with frames ehbt named, one pass over
its symbol table (.symtab, else .dynsym) finding each of those frames' function and reading
its name -- what naming frames cannot avoid without an index made beforehand.

In one run, on the same inputs:
  * a CPython core with 32 threads blocked in sleep / lock acquire / queue get / select on a
    pipe plus the main thread in os.abort() (made here, in a temp dir);
  * a ~140 MB CPython core (120 MiB of touched bytearrays) for peak RSS;
  * every fixture core under cores/out/x86_64/*.core (made with cores/make-cores.sh if none).
ehbt keeps what each debug file said for the pcs it looked up (its line answers, docs/cli.md),
so after the warm-up run it answers those pcs without opening the debug info; --cold-lines
also times "ehbt-cold", the same runs with no line answers kept (every run opens the debug
info), and gives its verdict against floor+sym.
Each tool runs once untimed (to warm the page cache), then --reps times; the table shows the
median and the minimum wall time, the ratio of the median to ehbt's, the median CPU time
(user+sys; steadier than wall time on a busy machine), how many threads and frames each tool
printed (and on how many threads its frame count equals ehbt's), and the peak RSS of the
warm-up run under `/usr/bin/time -f %M` (listed again for the 140 MB core).
Finally it runs bench/engine_bench (Google Benchmark) and prints its table.

Standard library only. Every subprocess has a timeout; a tool that times out or is missing
is reported as such and the script still exits 0.
"""

import argparse
import glob
import json
import os
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3.11"

# The many-thread core: every thread blocks in a different kind of call, so the unwinders
# cross different libc/libpython paths (clock_nanosleep, futex, select).
MANY_THREADS_SCRIPT = r"""
import os, queue, select, threading, time
lock = threading.Lock(); lock.acquire()
q = queue.Queue()
r, w = os.pipe()
def in_sleep(): time.sleep(1000)
def in_lock(): lock.acquire()
def in_queue(): q.get()
def in_select(): select.select([r], [], [])
kinds = [in_sleep, in_lock, in_queue, in_select]
ts = [threading.Thread(target=kinds[i % 4], daemon=True) for i in range(32)]
for t in ts: t.start()
time.sleep(0.5)
os.abort()
"""

# The big core: 120 MiB of bytearrays filled with a non-zero byte, so every page is resident
# and the kernel writes it into the core (untouched zero pages would be left as holes).
BIG_SCRIPT = r"""
import os
bufs = [bytearray(b'\xa5') * (1 << 20) for _ in range(120)]
os.abort()
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        with open("/proc/loadavg") as f:
            return "loadavg " + f.read().strip()


class Run:
    """One finished (or killed) tool run."""

    def __init__(self, secs, cpu, rc, out, timed_out):
        self.secs = secs
        self.cpu = cpu
        self.rc = rc
        self.out = out
        self.timed_out = timed_out


def run_measured(cmd, timeout, workdir, env=None):
    """Runs cmd, its stdout/stderr into files; returns wall seconds, user+system CPU seconds
    (wait4's rusage of this child alone) and the status. Not the child's ru_maxrss: the kernel
    carries the pre-exec high-water mark across exec, so it would include this Python's RSS;
    peak RSS is measured under /usr/bin/time instead (see peak_rss)."""
    out_path = os.path.join(workdir, "run.out")
    with open(out_path, "wb") as out, open(os.path.join(workdir, "run.err"), "wb") as err:
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True)
        except OSError as e:
            return Run(0.0, 0.0, None, "cannot run %s: %s" % (cmd[0], e), False)
        killed = []

        def kill():
            killed.append(True)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        _, status, usage = os.wait4(p.pid, 0)
        secs = time.perf_counter() - t0
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)  # keeps Popen from waiting again
    with open(out_path, "r", errors="replace") as f:
        text = f.read()
    return Run(secs, usage.ru_utime + usage.ru_stime, p.returncode, text, bool(killed))


# --- what each tool printed: {tid: frame count} ------------------------------------------


def frames_ehbt(text):
    try:
        doc = json.loads(text)
        return {int(t["tid"]): len(t["frames"]) for t in doc.get("threads", [])}
    except (ValueError, KeyError, TypeError):
        return {}


def frames_eustack(text):
    counts, tid = {}, None
    for line in text.splitlines():
        m = re.match(r"^TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            counts[tid] = 0
        elif tid is not None and re.match(r"^#\d+\s", line):
            counts[tid] += 1
    return counts


def frames_gdb(text):
    # GDB prints the selected frame once before the first "Thread N (...)" header: skip it.
    counts, tid = {}, None
    for line in text.splitlines():
        m = re.match(r"^Thread \d+ \(.*?(?:LWP|process) (\d+)\)", line)
        if m:
            tid = int(m.group(1))
            counts[tid] = 0
        elif tid is not None and re.match(r"^#\d+\s", line):
            counts[tid] += 1
    return counts



# --- the floor: the data access a walk cannot avoid ----------------------------------------

PAGE = 4096


def elf_headers(data):
    """(program headers [(type, offset, vaddr, filesz)], sections {name: (addr, offset, size)})
    of a little-endian ELF64 file; empty on anything else."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return [], {}
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
    phdrs = []
    for i in range(phnum):
        o = phoff + i * phentsize
        if o + 56 > len(data):
            break
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, o)
        phdrs.append((p_type, p_offset, p_vaddr, p_filesz))
    sections = {}
    if shoff and shnum and shstrndx < shnum and shoff + shnum * shentsize <= len(data):
        def sh(i):
            return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        strtab_off = sh(shstrndx)[4]
        for i in range(shnum):
            name_off, _, _, addr, off, size = sh(i)
            end = data.find(b"\0", strtab_off + name_off)
            sections[data[strtab_off + name_off:end].decode("latin-1")] = (addr, off, size)
    return phdrs, sections


class ModulePages:
    """Pages of one module file a lookup touches: the .eh_frame_hdr binary search path and
    the FDE it finds (datarel sdata4 tables, what every toolchain writes; others: the whole
    table, a generous floor)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.data = f.read()
        _, self.sections = elf_headers(self.data)

    def pages(self, link_pc):
        hdr = self.sections.get(".eh_frame_hdr")
        eh = self.sections.get(".eh_frame")
        if not hdr or not eh or hdr[2] < 12:
            return set()
        addr, off, size = hdr
        d = self.data
        version, ptr_enc, count_enc, table_enc = d[off:off + 4]
        out = {off // PAGE}
        if version != 1 or count_enc != 0x03 or table_enc != 0x3b or ptr_enc != 0x1b:
            return out | {p // PAGE for p in range(off, off + size, PAGE)}
        count = struct.unpack_from("<I", d, off + 8)[0]
        table = off + 12
        lo, hi = 0, count
        while hi - lo > 1:  # last entry with initial location <= link_pc
            mid = (lo + hi) // 2
            out.add((table + mid * 8) // PAGE)
            start = addr + struct.unpack_from("<i", d, table + mid * 8)[0]
            if start <= link_pc:
                lo = mid
            else:
                hi = mid
        if count:
            out.add((table + lo * 8) // PAGE)
            fde_addr = addr + struct.unpack_from("<i", d, table + lo * 8 + 4)[0]
            out.add((fde_addr - eh[0] + eh[1]) // PAGE)
        return out


def floor_page_list(core, ehbt_json):
    """"PATH OFFSET" lines: every page of the core and of the modules the walk needed."""
    try:
        doc = json.loads(ehbt_json)
    except ValueError:
        return []
    with open(core, "rb") as f:
        head = f.read(1 << 20)
    phdrs, _ = elf_headers(head)
    if not phdrs:
        return []
    core_pages = {0}
    for p_type, p_offset, _, p_filesz in phdrs:
        if p_type == 4:  # PT_NOTE: registers, file list, auxv
            core_pages |= {p // PAGE for p in range(p_offset, p_offset + max(p_filesz, 1), PAGE)}
    loads = [(v, o, fs) for t, o, v, fs in phdrs if t == 1]

    def load_of(vaddr):
        for i, (v, _, fs) in enumerate(loads):
            if v <= vaddr < v + fs:
                return i
        return None

    files = {m["path"]: m.get("file") for m in doc.get("modules", [])}
    mods, lines = {}, []
    for t in doc.get("threads", []):
        cfas = [int(f["cfa"], 16) for f in t["frames"] if f.get("cfa")]
        # The stack from below frame 0's CFA (its own frame) to the last CFA, per segment of
        # the core: a Go thread's frames lie on its system stack and on goroutine stacks far
        # apart (a page loop from the lowest CFA to the highest ran for minutes on cgo).
        stacks = {}
        for c in cfas:
            i = load_of(c)
            if i is not None:
                lo, hi = stacks.get(i, (c, c))
                stacks[i] = (min(lo, c), max(hi, c))
        for i, (lo, hi) in stacks.items():
            v, o, fs = loads[i]
            first = max(lo - PAGE, v)
            for page in range(first // PAGE, hi // PAGE + 1):
                if v <= page * PAGE < v + fs or page == first // PAGE:
                    core_pages.add((o + max(page * PAGE, v) - v) // PAGE)
        for f in t["frames"]:
            path = files.get(f.get("module"))
            if not path or f.get("module_offset") is None or not os.path.exists(path):
                continue
            if path not in mods:
                mods[path] = (ModulePages(path), set())
            lookup = int(f["module_offset"], 16) - (0 if f["index"] == 0 else 1)
            mods[path][1].update(mods[path][0].pages(lookup))
    lines = ["%s %d" % (core, p * PAGE) for p in sorted(core_pages)]
    for path, (_, pages) in mods.items():
        lines += ["%s %d" % (path, p * PAGE) for p in sorted(pages)]
    return lines


def floor_symbol_lines(ehbt_json):
    """"=sym PATH ADDR" lines for the symbol floor: each frame ehbt named from a module's
    symbols, looked up at the address ehbt looked it up at, in the file whose table names it
    (the module's file when it has a .symtab, else its separate debug file -- the one ehbt
    reports, or the host's /usr/lib/debug/.build-id/xx/rest.debug -- when that has one, else
    the file's .dynsym)."""
    try:
        doc = json.loads(ehbt_json)
    except ValueError:
        return []
    mods = {m["path"]: m for m in doc.get("modules", [])}
    tables = {}

    def table_file(m):
        f = m.get("file")
        if f not in tables:
            choice = f
            try:
                if ".symtab" not in ModulePages(f).sections:
                    bid = m.get("build_id") or ""
                    for dbg in (m.get("debug_file"), bid and "/usr/lib/debug/.build-id/%s/%s.debug"
                                % (bid[:2], bid[2:])):
                        if dbg and os.path.exists(dbg) and ".symtab" in ModulePages(dbg).sections:
                            choice = dbg
                            break
            except OSError:
                choice = None
            tables[f] = choice
        return tables[f]

    lines = []
    for t in doc.get("threads", []):
        for f in t["frames"]:
            m = mods.get(f.get("module"))
            if not f.get("symbol") or not m or not m.get("file") or f.get("module_offset") is None:
                continue
            path = table_file(m)
            if path:
                lines.append("=sym %s %d" % (path, int(f["module_offset"], 16)
                                             - (0 if f["index"] == 0 else 1)))
    return lines


def copy_for_timing(path, workdir, name):
    """A copy of the executable at `path`, written in one sequential pass, to be timed instead. A
    file just written by the linker ran 0.1 ms (about 10%) slower per run than the same bytes
    copied (plt.core, the same bytes, 100 interleaved runs each, on this machine's ext4), so
    timing the build tree's binary right after a build measured its page-cache state, not the
    program. Both ehbt and the floor run from copies made the same way."""
    dest = os.path.join(workdir, name)
    shutil.copy2(path, dest)
    return dest


def build_floor(workdir):
    exe = os.path.join(workdir, "core_floor.linked")
    try:
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(REPO, "bench", "core_floor.c")],
                       check=True, timeout=120)
        return copy_for_timing(exe, workdir, "core_floor")
    except (OSError, subprocess.SubprocessError) as e:
        log("  cannot build the floor program: %s" % e)
        return None


# --- making the cores ----------------------------------------------------------------------


def raise_core_limit():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def make_python_core(script, workdir, name, timeout):
    """Crashes PYTHON running script; returns the core's path or None. Uses the kernel's core
    when core_pattern writes a plain file into the working directory, else GDB's gcore."""
    d = os.path.join(workdir, name)
    os.makedirs(d)
    dest = os.path.join(workdir, name + ".core")
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if not pattern.startswith("|") and "/" not in pattern:
        try:
            subprocess.run([PYTHON, "-c", script], cwd=d, preexec_fn=raise_core_limit,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            log("  %s: python did not abort within %ss" % (name, timeout))
        found = sorted(glob.glob(os.path.join(d, "core*")), key=os.path.getmtime)
        if found:
            os.rename(found[-1], dest)
            return dest
        log("  %s: no core in %s (core_pattern %r); trying gdb gcore" % (name, d, pattern))
    try:
        subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + dest, "-ex", "kill",
                        "--args", PYTHON, "-c", script], cwd=d, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout * 4)
    except (OSError, subprocess.TimeoutExpired) as e:
        log("  %s: gdb gcore failed: %s" % (name, e))
    return dest if os.path.exists(dest) else None


def fixture_cores(timeout):
    pattern = os.path.join(REPO, "cores", "out", "x86_64", "*.core")
    if not glob.glob(pattern):
        log("no fixture cores; running cores/make-cores.sh x86_64 ...")
        try:
            subprocess.run(["bash", os.path.join(REPO, "cores", "make-cores.sh"), "x86_64"],
                           cwd=REPO, stdout=subprocess.DEVNULL, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            log("  make-cores.sh failed: %s" % e)
    result = []
    for core in sorted(glob.glob(pattern)):
        meta_path = core[: -len(".core")] + ".expected.json"
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            # "exe" is the path the core names; "exe_file" where the file is now (the buildid
            # fixture moved its executable after the crash).
            exe = next((e for e in (meta.get("exe_file"), meta.get("exe"))
                        if e and os.path.exists(e)), None)
            nthreads = len(meta.get("threads", [])) or None
        except (OSError, ValueError):
            exe, nthreads = None, None
        if exe and os.path.exists(exe):
            result.append((os.path.basename(core)[: -len(".core")], core, exe, nthreads))
        else:
            log("  skipping %s: no exe in %s" % (core, meta_path))
    return result


# --- measuring -----------------------------------------------------------------------------


def tool_commands(ehbt, core, exe, ehbt_exe_arg):
    ehbt_cmd = [ehbt, "core", core, "--all-threads", "--json"]
    if ehbt_exe_arg:
        ehbt_cmd += ["--exe", exe]
    return [
        ("ehbt", ehbt_cmd, frames_ehbt),
        # The same run without line answers kept by earlier runs (--cold-lines: its own cache
        # directory, where lines/ cannot be made): every run opens the debug info it needs.
        ("ehbt-cold", ehbt_cmd, frames_ehbt),
        # -n 0: every frame, as ehbt and GDB print them (eu-stack stops at 256 by default,
        # which on a deep stack would time a quarter of the work).
        ("eu-stack", ["eu-stack", "-n", "0", "--core", core, "--executable", exe],
         frames_eustack),
        ("gdb", ["gdb", "-batch", "-nx", "-ex", "thread apply all bt", exe, core], frames_gdb),
    ]


def cold_lines_env(env, workdir):
    """`env` with a cache directory of its own whose lines/ is a file: the debug cache's copies
    are made and used as usual, no line answer is ever kept."""
    root = os.path.join(workdir, "cold-cache")
    os.makedirs(root, mode=0o700, exist_ok=True)
    blocker = os.path.join(root, "lines")
    if not os.path.exists(blocker):
        with open(blocker, "w") as f:
            f.write("no line answers here\n")
    return dict(env, EHBT_CACHE_DIR=root)


def measure(label, core, exe, ehbt, reps, timeout, workdir, env, ehbt_exe_arg, want_threads,
            floor=None, skip=()):
    """Every tool once untimed (warm-up, peak RSS), then `reps` rounds, each running every
    tool once, so that load changes on the machine hit all tools alike. The floor runs on the
    page list made from ehbt's warm-up output."""
    tools = [t for t in tool_commands(ehbt, core, exe, ehbt_exe_arg) if t[0] not in skip]
    envs = {"ehbt-cold": cold_lines_env(env, workdir)}
    if floor:
        tools.append(("floor", None, lambda text: {}))
        tools.append(("floor+sym", None, lambda text: {}))
    live, rows = [], {}
    ehbt_out = None
    for tool, cmd, parse in tools:
        if tool.startswith("floor"):
            lines = floor_page_list(core, ehbt_out) if ehbt_out else []
            if lines and tool == "floor+sym":
                lines += floor_symbol_lines(ehbt_out)
            if not lines:
                rows[tool] = dict(input=label, tool=tool, missing=True)
                continue
            list_path = os.path.join(workdir, label + "." + tool)
            with open(list_path, "w") as f:
                f.write("\n".join(lines) + "\n")
            cmd = [floor, list_path]
        if shutil.which(cmd[0]) is None and not os.access(cmd[0], os.X_OK):
            rows[tool] = dict(input=label, tool=tool, missing=True)
            continue
        rss = peak_rss(cmd, timeout, workdir, envs.get(tool, env))
        if tool == "ehbt":
            ehbt_out = run_measured(cmd, timeout, workdir, env).out
        if rss == "timeout":
            rows[tool] = dict(input=label, tool=tool, missing=False, secs=[], cpu=[],
                              timed_out=True, rcs=[], counts={}, rss=None, want=want_threads)
            continue
        live.append((tool, cmd, parse))
        rows[tool] = dict(input=label, tool=tool, missing=False, runs=[],
                          rss=rss if isinstance(rss, int) else None,
                          want=None if tool.startswith("floor") else want_threads)
    for _ in range(reps):
        for tool, cmd, _ in live:
            rows[tool]["runs"].append(run_measured(cmd, timeout, workdir, envs.get(tool, env)))
    for tool, _, parse in live:
        r = rows[tool]
        runs = r.pop("runs")
        ok = [x for x in runs if not x.timed_out]
        r.update(secs=[x.secs for x in ok], cpu=[x.cpu for x in ok],
                 timed_out=len(ok) < len(runs), rcs=sorted({x.rc for x in runs}),
                 counts=parse(ok[-1].out) if ok else {})
    return [rows[t[0]] for t in tools if t[0] in rows]


def peak_rss(cmd, timeout, workdir, env):
    """Peak RSS in KiB as `/usr/bin/time -f %M` reports it (GNU time forks the tool from its
    own small process), "timeout", or None when it cannot be measured."""
    tf = os.path.join(workdir, "time.txt")
    if not os.access("/usr/bin/time", os.X_OK):
        run_measured(cmd, timeout, workdir, env)  # still warm up
        return None
    try:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
                       timeout=timeout)
        with open(tf) as f:
            return int(f.read().strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return "timeout"
    except (OSError, ValueError, IndexError):
        return None


# --- printing ------------------------------------------------------------------------------


def print_table(rows):
    head = ("input", "tool", "n", "median ms", "min ms", "x ehbt", "cpu ms", "rc", "threads",
            "frames", "fr/thr min-med-max", "=ehbt", "peak RSS MiB")
    fmt = "%-12s %-9s %2s %9s %8s %7s %7s %4s %7s %6s %18s %6s %12s"
    print(fmt % head)
    print("-" * 123)
    base = {}
    for r in rows:
        if r["tool"] == "ehbt" and not r["missing"] and r["secs"]:
            base[r["input"]] = (statistics.median(r["secs"]), r["counts"])
    for r in rows:
        if r["missing"]:
            print(fmt % (r["input"], r["tool"], "-", "missing", "", "", "", "", "", "", "", "",
                         ""))
            continue
        if not r["secs"]:
            print(fmt % (r["input"], r["tool"], 0, "TIMEOUT", "", "", "", "", "", "", "", "",
                         ""))
            continue
        med, mn = statistics.median(r["secs"]), min(r["secs"])
        b = base.get(r["input"])
        ratio = "%.2f" % (med / b[0]) if b and b[0] > 0 else "-"
        c = r["counts"]
        per = sorted(c.values())
        spread = "%d-%d-%d" % (per[0], statistics.median_low(per), per[-1]) if per else "-"
        same = "-"
        if b and b[1]:
            same = "%d/%d" % (sum(1 for t, n in b[1].items() if c.get(t) == n), len(b[1]))
        threads = "%d" % len(c)
        if r["want"] is not None and len(c) != r["want"]:
            threads += "!"  # a tool that did not print every thread
        print(fmt % (r["input"], r["tool"], len(r["secs"]), "%.1f" % (med * 1e3),
                     "%.1f" % (mn * 1e3), ratio, "%.1f" % (statistics.median(r["cpu"]) * 1e3),
                     ",".join(str(x) for x in r["rcs"]) + ("T" if r["timed_out"] else ""),
                     threads, sum(c.values()), spread, same,
                     "%.1f" % (r["rss"] / 1024) if r["rss"] is not None else "n/a"))


def verdicts(rows, py_label, fixture_labels):
    med, cpu, fastest = {}, {}, {}
    for r in rows:
        if not r["missing"] and r["secs"]:
            med[(r["input"], r["tool"])] = statistics.median(r["secs"])
            cpu[(r["input"], r["tool"])] = statistics.median(r["cpu"])
            fastest[(r["input"], r["tool"])] = min(r["secs"])
    out = []
    # Exit status 0 = complete, 1 = partial (a walk stopped early); anything else (a crash, 2 =
    # unusable input) makes the timing meaningless.
    broken = sorted({r["input"] for r in rows if r["tool"] == "ehbt" and not r["missing"]
                     and (r["timed_out"] or any(rc not in (0, 1) for rc in r["rcs"]))})
    if broken:
        out.append("ehbt FAILED (exit status not 0/1, or timed out) on: " + ", ".join(broken))
    e, u = med.get((py_label, "ehbt")), med.get((py_label, "eu-stack"))
    if e and u:
        out.append("CPython core: eu-stack/ehbt = %.2fx -> %s (goal >= 10x)"
                   % (u / e, "OK" if u >= 10 * e else "BELOW GOAL"))
    inputs = sorted({r["input"] for r in rows})
    for name, other, goal, sense in (("eu-stack", "eu-stack", 1.2, "faster"),
                                     ("floor", "floor", 2.0, "within"),
                                     ("floor that also names the frames", "floor+sym", 1.5,
                                      "within")):
        have = [i for i in inputs if (i, "ehbt") in med and (i, other) in med]
        if not have:
            continue
        if sense == "faster":
            bad = [i for i in have if med[(i, other)] < goal * med[(i, "ehbt")]]
            out.append("ehbt >= %.1fx faster than %s on %d/%d inputs%s" % (
                goal, name, len(have) - len(bad), len(have),
                (" (not on: %s)" % ", ".join(bad)) if bad else ""))
        else:
            bad = [i for i in have if med[(i, "ehbt")] > goal * med[(i, other)]]
            ratios = ", ".join("%s %.2f" % (i, med[(i, "ehbt")] / med[(i, other)]) for i in have)
            out.append("ehbt within %.1fx of the %s on %d/%d inputs (ehbt/%s: %s)" % (
                goal, name, len(have) - len(bad), len(have), other, ratios))
            # On a loaded machine the median wall time of a 2 ms run is mostly waiting for a
            # CPU: the fastest run and the CPU time (user+sys) say more about the work done.
            for what, table in (("fastest run", fastest), ("median CPU time", cpu)):
                bad = [i for i in have if table[(i, "ehbt")] > goal * table[(i, other)]]
                ratios = ", ".join("%s %.2f" % (i, table[(i, "ehbt")] / table[(i, other)])
                                   for i in have if table[(i, other)] > 0)
                out.append("  by %s: within %.1fx on %d/%d (%s)" % (
                    what, goal, len(have) - len(bad), len(have), ratios))
    have = [i for i in inputs if (i, "ehbt-cold") in med and (i, "floor+sym") in med]
    if have:
        parts = []
        for what, table in (("median", med), ("fastest run", fastest), ("median CPU", cpu)):
            ok = [i for i in have if table[(i, "ehbt-cold")] <= 1.5 * table[(i, "floor+sym")]]
            parts.append("%d/%d by %s" % (len(ok), len(have), what))
        ratios = ", ".join("%s %.2f" % (i, med[(i, "ehbt-cold")] / med[(i, "floor+sym")])
                           for i in have)
        out.append("ehbt-cold (no kept line answers) within 1.5x of floor+sym on %s "
                   "(median ratios: %s)" % ("; ".join(parts), ratios))
    slow = [f for f in fixture_labels
            if (f, "ehbt") in med and (f, "gdb") in med and med[(f, "ehbt")] >= med[(f, "gdb")]]
    have = [f for f in fixture_labels if (f, "ehbt") in med and (f, "gdb") in med]
    not_on = (" (not on: %s)" % ", ".join(slow)) if slow else ""
    out.append("fixtures: ehbt faster than gdb on %d/%d%s"
               % (len(have) - len(slow), len(have), not_on))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehbt", default="build/engine/tools/ehbt",
                    help="ehbt binary (relative paths: to the cwd, else to the repo root)")
    ap.add_argument("--engine-bench", default="build/bench/engine_bench",
                    help="Google Benchmark binary to run at the end ('' to skip)")
    ap.add_argument("--reps", type=int, default=5, help="timed runs per tool and core")
    ap.add_argument("--fixture-reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per tool run")
    ap.add_argument("--quick", action="store_true", help="3 reps, skip engine_bench")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir with the cores")
    ap.add_argument("--no-gdb", action="store_true", help="leave GDB out (it is slow)")
    ap.add_argument("--cold-lines", action="store_true",
                    help="also time ehbt without line answers kept by earlier runs (ehbt-cold)")
    ap.add_argument("--fixtures-only", action="store_true",
                    help="only the fixture cores (no CPython cores)")
    args = ap.parse_args()
    if args.quick:
        args.reps = args.fixture_reps = 3
        args.engine_bench = ""

    def resolve(p):
        if not p or os.path.isabs(p) or os.path.exists(p):
            return os.path.abspath(p) if p else p
        return os.path.join(REPO, p)

    ehbt = resolve(args.ehbt)
    if not os.access(ehbt, os.X_OK):
        sys.exit("ehbt binary not found: %s" % ehbt)
    env = dict(os.environ, DEBUGINFOD_URLS="", LC_ALL="C")  # no network lookups, stable text
    t_start = time.perf_counter()
    load_before = uptime()
    print("machine: %d CPUs; at start: %s" % (os.cpu_count() or 0, load_before))
    print("ehbt: %s" % ehbt)

    workdir = tempfile.mkdtemp(prefix="ehbt-compare.")
    try:
        log("making the CPython cores in %s ..." % workdir)
        py_core = big_core = None
        if not args.fixtures_only:
            py_core = make_python_core(MANY_THREADS_SCRIPT, workdir, "py32threads", 30)
            big_core = make_python_core(BIG_SCRIPT, workdir, "py140mb", 60)
        floor = build_floor(workdir)
        ehbt = copy_for_timing(ehbt, workdir, "ehbt")
        skip = (("gdb",) if args.no_gdb else ()) + (() if args.cold_lines else ("ehbt-cold",))
        fixtures = fixture_cores(600)
        for label, path in (("py32threads", py_core), ("py140mb", big_core)):
            if path:
                st = os.stat(path)
                print("%s core: %s, %.1f MB apparent, %.1f MB on disk"
                      % (label, path, st.st_size / 1e6, st.st_blocks * 512 / 1e6))
        print("fixture cores: %d (%s)" % (len(fixtures), " ".join(f[0] for f in fixtures)))
        print()

        rows = []
        if py_core:
            log("timing on the 32-thread CPython core ...")
            rows += measure("py32threads", py_core, PYTHON, ehbt, args.reps, args.timeout,
                            workdir, env, False, 33, floor, skip)
        if big_core:
            log("timing on the 140 MB CPython core ...")
            rows += measure("py140mb", big_core, PYTHON, ehbt, max(2, args.reps // 2),
                            args.timeout, workdir, env, False, 1, floor, skip)
        for label, core, exe, nthreads in fixtures:
            log("timing on fixture %s ..." % label)
            rows += measure(label, core, exe, ehbt, args.fixture_reps, args.timeout, workdir,
                            env, True, nthreads, floor, skip)

        print("Wall time per run (after one untimed warm-up run); 'x ehbt' = median / ehbt's"
              " median; 'cpu ms' = median user+sys;\n'threads' printed ('!' = not the expected"
              " count), 'frames' total, '=ehbt' = threads whose frame count equals ehbt's;\n"
              "peak RSS = /usr/bin/time -f %M of the warm-up run. ehbt on fixtures gets --exe"
              " like the others.")
        print_table(rows)
        print()

        big = [r for r in rows if r["input"] == "py140mb" and not r["missing"]]
        if big:
            print("Peak RSS on the %.0f MB core, /usr/bin/time -f %%M:"
                  % (os.path.getsize(big_core) / 1e6))
            for r in big:
                print("  %-8s %s" % (r["tool"], "%d KiB (%.1f MiB)" % (r["rss"], r["rss"] / 1024)
                                     if r["rss"] is not None else "n/a"))
            print()

        for line in verdicts(rows, "py32threads", [f[0] for f in fixtures]):
            print(line)
        print()

        bench = resolve(args.engine_bench)
        if bench and os.access(bench, os.X_OK):
            log("running %s ..." % bench)
            try:
                p = subprocess.run([bench, "--benchmark_min_time=0.2"], capture_output=True,
                                   text=True, timeout=120)
                print("engine_bench (--benchmark_min_time=0.2):")
                print(p.stdout.rstrip())
                err = [line for line in p.stderr.splitlines() if "Load Average" in line or
                       "WARNING" in line or "Run on" in line]
                if err:
                    print("\n".join(err))
            except subprocess.TimeoutExpired:
                print("engine_bench: timed out")
            print()
        elif args.engine_bench:
            print("engine_bench not found: %s" % bench)

        print("at end: %s; total %.0f s" % (uptime(), time.perf_counter() - t_start))
    finally:
        if args.keep:
            print("kept %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
