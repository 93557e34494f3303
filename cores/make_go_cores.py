#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Go fixture cores (x86-64): cores/programs/go/gocrash.go, built by Debian's golang-go
unstripped (`go`) and with -ldflags='-s -w' (`gostripped`: no .symtab, no DWARF, no
.debug_frame; only .gopclntab is left), crashed with GOTRACEBACK=crash.

    make_go_cores.py [--only go,gostripped,gopie]

Outputs in cores/out/x86_64/: bin/<name>, <name>.core, <name>.expected.json
(format ehbt-go-expected/1), <name>.traceback.txt (Go's own traceback), <name>.gdb.json.

How Go dies: the nil dereference faults (SIGSEGV); Go's handler makes the faulting function
look like it called runtime.sigpanic, which panics; with GOTRACEBACK=crash the runtime prints
every goroutine, then runtime.crash -> dieFromSignal raises SIGABRT. Go's handler is still
installed, so that SIGABRT enters runtime.sigtramp on the signal stack, which forwards it
(sigfwdgo -> dieFromSignal, now with the default action) and raises it again: the core is
written inside a signal handler, on the signal stack, above the kernel's rt_sigframe.

Expected frames, never from ehbt:
- GDB runs the program (the unstripped binary's symbols and .debug_frame also for the stripped
  one: both have the same code layout, checked instruction by instruction with objdump) and
  records the crashing thread at both SIGABRT stops. Second stop (the core's state): the
  frames up to the signal trampoline (runtime.sigreturn, Go's rt_sigreturn restorer); GDB
  does not step through Go's trampoline, its frames after it are dropped. First stop: the
  frames the signal interrupted, from runtime.raise down to runtime.goexit. Expected = second
  stop's up to the trampoline + first stop's.
- Go's own traceback of the crashing goroutine (physical frames: the lines with pc=; inlined
  frames have none) must equal the expected frames from runtime.gopanic (Go prints `panic`)
  down, pc by pc and name by name, in each run; its fp= is the frame's CFA.
- Names: GDB's, the ELF symbol covering the lookup pc, and Go's own `go tool addr2line`
  (which reads .gopclntab; it cannot read position-independent stripped builds); for the
  stripped builds also the reference build's ELF symbol without the `.abi0` suffix Go's
  linker gives assembly functions only in .symtab (for the trampoline, which GDB cannot name).
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "programs", "go", "gocrash.go")
OUT = os.path.join(HERE, "out", "x86_64")
BIN = os.path.join(OUT, "bin")
GO = "/usr/bin/go"
CHAIN = ["main.fxGoLeaf", "main.fxGoMiddle", "main.fxGoOuter", "main.main"]
# name: (go build flags, the unstripped build GDB reads symbols and CFI from).
VARIANTS = {
    "go": ([], "go"),
    "gostripped": (["-ldflags=-s -w"], "go"),
    # Position-independent (as distributions build Go): the table is .data.rel.ro.gopclntab.
    "gopie": (["-buildmode=pie", "-ldflags=-s -w"], "gopie.unstripped"),
}
REFERENCES = {"go": [], "gopie.unstripped": ["-buildmode=pie"]}
TRAMPOLINE = "runtime.sigreturn.abi0"

GDB_SCRIPT = r"""
import gdb, json
stops = []
def record():
    frames, f = [], gdb.newest_frame()
    while f is not None and len(frames) < 256:
        if f.type() != gdb.INLINE_FRAME:  # ehbt sees physical frames
            frames.append({"pc": f.pc(), "function": f.name()})
        try:
            f = f.older()
        except gdb.error:
            break
    tramp = int(gdb.parse_and_eval("(long)&'%(tramp)s'"))
    stops.append({"tid": gdb.selected_thread().ptid[1], "frames": frames, "tramp": tramp})
gdb.execute("run 2>%(trace)s")
while gdb.selected_inferior().pid != 0 and len(stops) < 4:
    record()
    try:
        gdb.execute("continue")
    except gdb.error:  # the process died of the signal: nothing left to ask
        break
json.dump(stops, open(%(out)r, "w"))
"""


class Fail(Exception):
    pass


def run(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if proc.returncode != 0:
        raise Fail("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode, proc.stdout))
    return proc.stdout


def build(name, flags):
    env = dict(os.environ, GO111MODULE="off", GOCACHE=os.path.join(OUT, "go-cache"),
               GOPATH=os.path.join(OUT, "gopath"), CGO_ENABLED="0")
    exe = os.path.join(BIN, name)
    run([GO, "build"] + flags + ["-o", exe, SOURCE], env=env, cwd=os.path.dirname(SOURCE))
    return exe


def instruction_layout(exe):
    """[(address, mnemonic)] of .text: the code layout, operands aside."""
    out = run(["objdump", "-d", "--no-show-raw-insn", "-j", ".text", exe])
    return re.findall(r"^\s*([0-9a-f]+):\s+(\S+)", out, re.M)


def elf_symbols(exe):
    """[(start, end, name)] of the function symbols of .symtab (nm)."""
    out = subprocess.run(["nm", "-S", "--defined-only", exe], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            start, size = int(parts[0], 16), int(parts[1], 16)
            syms.append((start, start + max(size, 1), parts[3]))
    return syms


def go_names(exe, pcs):
    """Go's own name (go tool addr2line, from .gopclntab) for each pc."""
    out = run([GO, "tool", "addr2line", exe], input="".join("0x%x\n" % pc for pc in pcs))
    lines = out.splitlines()
    if len(lines) != 2 * len(pcs):
        raise Fail("go tool addr2line: %d lines for %d pcs" % (len(lines), len(pcs)))
    return [None if lines[2 * i] == "?" else lines[2 * i] for i in range(len(pcs))]


def go_traceback(path):
    """Physical frames of the crashing goroutine (the first block): name, pc, fp."""
    text = open(path, errors="replace").read()
    block = re.search(r"^goroutine \d+ \[running\]:\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    if not block:
        raise Fail("%s: no running goroutine in Go's traceback" % path)
    frames, name = [], None
    for line in block.group(1).splitlines():
        if not line.startswith("\t"):
            name = re.sub(r"\(.*$", "", line)
            continue
        m = re.search(r"fp=(0x[0-9a-f]+) sp=0x[0-9a-f]+ pc=(0x[0-9a-f]+)", line)
        if m:  # inlined frames have no pc of their own
            frames.append({"function": "runtime.gopanic" if name == "panic" else name,
                           "pc": int(m.group(2), 16), "fp": int(m.group(1), 16)})
    return frames


def crash(name, exe, symbols_from):
    rundir = os.path.join(OUT, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    trace = os.path.join(OUT, name + ".traceback.txt")
    raw = os.path.join(OUT, name + ".gdb.json")
    script = os.path.join(rundir, "record.py")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT % {"trace": trace, "out": raw, "tramp": TRAMPOLINE})

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    cmd = ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off",
           "-ex", "set language c",
           "-ex", "set backtrace past-main on", "-ex", "set cwd " + rundir,
           "-ex", "set environment GOTRACEBACK=crash",
           "-ex", "handle SIGSEGV nostop noprint pass", "-ex", "handle SIGURG nostop noprint pass",
           "-ex", "handle SIGABRT stop print pass", "-ex", "file " + exe,
           "-ex", "symbol-file " + symbols_from, "-x", script]
    subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                   preexec_fn=limits, timeout=300)
    cores = [c for c in os.listdir(rundir) if c == "core" or c.startswith("core.")]
    if not cores or not os.path.exists(raw):
        raise Fail("%s: no core (core_pattern must be `core`) or no GDB record" % name)
    core = os.path.join(OUT, name + ".core")
    shutil.move(os.path.join(rundir, cores[0]), core)
    return core, trace, json.load(open(raw))


def expected_frames(name, exe, unstripped, stops, trace):
    if len(stops) != 2 or stops[0]["tid"] != stops[1]["tid"]:
        raise Fail("%s: expected two SIGABRT stops of one thread, GDB saw %d" % (name, len(stops)))
    tramp = [s for s in elf_symbols(unstripped) if s[2] == TRAMPOLINE]
    if len(tramp) != 1:
        raise Fail("no %s in %s" % (TRAMPOLINE, unstripped))
    # Load bias (position-independent builds): where GDB found the trampoline at run time.
    bias = stops[1]["tramp"] - tramp[0][0]
    upper = stops[1]["frames"]
    cut = next((i for i, f in enumerate(upper) if f["pc"] == stops[1]["tramp"]), None)
    if cut is None:
        raise Fail("%s: GDB's frames at the core do not reach Go's signal trampoline" % name)
    lower = stops[0]["frames"]
    goexit = next((i for i, f in enumerate(lower) if f["function"] == "runtime.goexit"), None)
    if goexit is None:
        raise Fail("%s: GDB's frames of the interrupted stack do not reach runtime.goexit" % name)
    frames = []
    for i, f in enumerate(upper[:cut + 1]):
        frames.append(dict(f, type="sigtramp" if i == cut else "normal", exact=i in (0, cut)))
    for i, f in enumerate(lower[:goexit + 1]):
        frames.append(dict(f, type="normal", exact=i == 0))
    # Go's traceback from runtime.gopanic down: the same physical frames, pc by pc.
    go = go_traceback(trace)
    start = next((i for i, f in enumerate(frames) if f["function"] == "runtime.gopanic"), None)
    tail = frames[start:] if start is not None else []
    if [(f["function"], f["pc"]) for f in tail] != [(g["function"], g["pc"]) for g in go]:
        raise Fail("%s: GDB's frames %s differ from Go's traceback %s" % (
            name, [(f["function"], hex(f["pc"])) for f in tail],
            [(g["function"], hex(g["pc"])) for g in go]))
    for f, g in zip(tail, go):
        f["cfa"] = g["fp"]
    chain = [f["function"] for f in frames if f["function"] in CHAIN]
    if chain != CHAIN:
        raise Fail("%s: call chain %s, want %s" % (name, chain, CHAIN))
    # Names: GDB's, the ELF symbol and Go's own, at the lookup address.
    lookups = [(f["pc"] if f["exact"] else f["pc"] - 1) - bias for f in frames]
    go_own = go_names(exe, lookups)
    syms = elf_symbols(exe)
    ref_syms = elf_symbols(unstripped)
    for f, at, gname in zip(frames, lookups, go_own):
        names = {gname} if gname else set()
        names |= {s[2] for s in syms if s[0] <= at < s[1]}
        if f["function"]:
            names.add(f["function"])
        if exe != unstripped:
            # The reference build's ELF symbol, as Go's table names it: assembly functions
            # carry an ABI suffix only in the ELF symbol table (runtime.raise.abi0).
            names |= {re.sub(r"\.abi0$", "", s[2]) for s in ref_syms if s[0] <= at < s[1]}
        f["symbols"] = sorted(names)
        f["pc"] = "0x%x" % f["pc"]
        if "cfa" in f:
            f["cfa"] = "0x%x" % f["cfa"]
    return stops[0]["tid"], frames


def make(name, flags, reference):
    os.makedirs(BIN, exist_ok=True)
    exe = build(name, flags)
    unstripped = os.path.join(BIN, reference)
    if reference != name:
        build(reference, REFERENCES[reference])
        if instruction_layout(exe) != instruction_layout(unstripped):
            raise Fail("%s: code layout differs from the unstripped build" % name)
        if any(s for s in elf_symbols(exe)):
            raise Fail("%s: still has a symbol table" % name)
    core, trace, stops = crash(name, exe, unstripped)
    tid, frames = expected_frames(name, exe, unstripped, stops, trace)
    doc = {"format": "ehbt-go-expected/1", "arch": "x86_64", "program": name, "core": core,
           "exe": exe, "stripped": reference != name, "signal": 6, "tid": tid,
           "source": "gdb-live+go-traceback", "traceback": trace, "frames": frames}
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("%s: %d frames expected" % (name, len(frames)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(VARIANTS))
    args = ap.parse_args()
    if not os.path.exists(GO):
        print("make_go_cores: %s missing (Debian golang-go)" % GO, file=sys.stderr)
        return 1
    status = 0
    for name in args.only.split(","):
        if name not in VARIANTS:
            continue
        try:
            make(name, *VARIANTS[name])
        except (Fail, subprocess.TimeoutExpired) as e:
            print("%s: %s" % (name, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
