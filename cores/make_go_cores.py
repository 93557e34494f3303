#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Go fixture cores: cores/programs/go/gocrash.go, built by Debian's golang-go
unstripped (`go`) and with -ldflags='-s -w' (`gostripped`: no .symtab, no DWARF, no
.debug_frame; only .gopclntab is left), crashed with GOTRACEBACK=crash. x86-64 natively;
aarch64 and s390x cross-built (GOARCH=arm64, s390x) and run under qemu, which writes the
guest's core. s390x's gocrash has no GDB record (see ARCHES): its expectation is Go's traceback
alone; its cgo crash has one.

    make_go_cores.py [--arch x86_64|aarch64|s390x] [--only go,gostripped,gopie]

EHBT_CORES_OUT=DIR writes under DIR/<arch> instead of cores/out/<arch> (as make_cores.py).

Outputs in cores/out/<arch>/: bin/<name>, <name>.core, <name>.expected.json
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
- aarch64 (GDB live through qemu's gdbstub): GDB stops at Go's signal handler entry
  (runtime.sigtramp is TOPFRAME: its .debug_frame leaves the return address undefined), and on
  the interrupted stack it cannot step past runtime.sigpanic (Go's handler pushed the faulting
  function's x30 on a 16-byte slot that the DWARF does not describe). So: the second stop's
  frames up to runtime.sigtramp; then the sigreturn trampoline, the word at sigtramp's sp (Go's
  arm64 frames keep the return address at 0(sp)), checked by GDB's disassembly to be
  `mov x8, #0x8b; svc #0` (rt_sigreturn); then the first stop's frames above runtime.gopanic,
  joined at gopanic's pc to Go's own traceback, which gives every frame from gopanic down (pc,
  name, fp = CFA).
- Names: GDB's, the ELF symbol covering the lookup pc, and Go's own `go tool addr2line`
  (which reads .gopclntab; it cannot read position-independent stripped builds); for the
  stripped builds also the reference build's ELF symbol without the `.abi0` suffix Go's
  linker gives assembly functions only in .symtab (for the trampoline, which GDB cannot name).

Source lines (goinline, goinlinestripped; x86-64 and aarch64): cores/programs/go/goinline.go,
whose fault is in a function inlined twice and whose main calls through an inlined one, built
unstripped and with -ldflags='-s -w', crashed the same way without a debugger. Their
expectation is Go's own traceback (<name>.traceback.txt), which lists every frame, inlined ones
included, with its file:line; <name>.expected.json (format ehbt-go-lines-expected/1) names the
core, the binary, the traceback and the crashing thread.
"""

import argparse
import bisect
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "programs", "go", "gocrash.go")
# The cgo case: a directory (Go and C files), built with CGO_ENABLED=1.
CGO_SOURCE = os.path.join(HERE, "programs", "go", "cgocrash")
LINES_SOURCE = os.path.join(HERE, "programs", "go", "goinline.go")
# The systemstack case: a fatal error whose crash runs on the thread's g0 stack.
SYS_SOURCE = os.path.join(HERE, "programs", "go", "gosystemstack.go")
# The mcall case (no GDB: Go's traceback of the parked goroutine is the expectation).
DEADLOCK_SOURCE = os.path.join(HERE, "programs", "go", "godeadlock.go")
DEADLOCK_VARIANTS = {"godeadlock": [], "godeadlockstripped": ["-ldflags=-s -w"]}
GO = "/usr/bin/go"
# Per architecture: GOARCH, the emulator (None: native), the debugger, the variants built.
ARCHES = {
    "x86_64": dict(goarch="amd64", qemu=None, gdb="gdb",
                   variants=("go", "gostripped", "gopie", "goinline", "goinlinestripped",
                             "cgo", "cgostripped", "gosys", "gosysstripped", "godeadlock",
                             "godeadlockstripped"),
                   cc="gcc"),
    "aarch64": dict(goarch="arm64", qemu="qemu-aarch64", gdb="gdb-multiarch",
                    variants=("go", "gostripped", "goinline", "goinlinestripped", "cgo",
                              "cgostripped", "gosys", "gosysstripped", "godeadlock",
                              "godeadlockstripped"),
                    byteorder="little", cc="aarch64-linux-gnu-gcc",
                    # The C library and loader a dynamically linked (cgo) program needs.
                    sysroot="/usr/aarch64-linux-gnu",
                    # mov x8, #0x8b; svc #0
                    sigreturn="681180d2010000d4"),
    # No GDB for gocrash: Go under qemu-s390x's gdbstub never reached the crash (10 minutes,
    # spinning). The expectation is Go's own traceback alone: the frames from runtime.gopanic
    # down. The cgo crash is recorded by GDB (cgo_gdb): run without asynchronous preemption,
    # as every GDB-recorded run under qemu is, it reaches the fault and both SIGABRTs.
    "s390x": dict(goarch="s390x", qemu="qemu-s390x", gdb=None, cgo_gdb="gdb-multiarch",
                  variants=("go", "gostripped", "cgo", "cgostripped"),
                  byteorder="big", cc="s390x-linux-gnu-gcc", sysroot="/usr/s390x-linux-gnu",
                  # svc 173 (rt_sigreturn)
                  sigreturn="0aad"),
}
OUT = BIN = None  # set by set_arch()


def debugger(name):
    """The GDB that records `name`'s run, or None (the expectation is Go's traceback alone)."""
    if name in CGO_VARIANTS and ARCHES[ARCH].get("cgo_gdb"):
        return ARCHES[ARCH]["cgo_gdb"]
    return ARCHES[ARCH]["gdb"]
ARCH = None


def set_arch(arch):
    global OUT, BIN, ARCH
    ARCH = arch
    # EHBT_CORES_OUT writes elsewhere, as for make_cores.py (a worktree's cores/out is shared).
    OUT = os.path.join(os.environ.get("EHBT_CORES_OUT") or os.path.join(HERE, "out"), arch)
    BIN = os.path.join(OUT, "bin")

CHAIN = ["main.fxGoLeaf", "main.fxGoMiddle", "main.fxGoOuter", "main.main"]
# cgocrash's call chain, C frames (on the thread's g0 stack) then Go frames (the goroutine's).
CGO_CHAIN = ["cfun3", "cfun2", "cfun1", "runtime.asmcgocall", "runtime.cgocall",
             "main._Cfunc_cfun1", "main.level2", "main.level1", "main.main", "runtime.main",
             "runtime.goexit"]
# name: (go build flags, the unstripped build GDB reads symbols and CFI from).
VARIANTS = {
    "go": ([], "go"),
    "gostripped": (["-ldflags=-s -w"], "go"),
    # Position-independent (as distributions build Go): the table is .data.rel.ro.gopclntab.
    "gopie": (["-buildmode=pie", "-ldflags=-s -w"], "gopie.unstripped"),
}
# cgo (cores/programs/go/cgocrash/): Go calls C, the C code faults three calls deep; built
# unstripped and with -ldflags='-s -w' (the C objects keep their .eh_frame).
CGO_VARIANTS = {"cgo": ([], "cgo"), "cgostripped": (["-ldflags=-s -w"], "cgo")}
VARIANTS.update(CGO_VARIANTS)
# gosystemstack.go: the crash on g0 inside runtime.systemstack, unstripped and stripped.
SYS_VARIANTS = {"gosys": ([], "gosys"), "gosysstripped": (["-ldflags=-s -w"], "gosys")}
VARIANTS.update(SYS_VARIANTS)
# The systemstack chain: g0's frames (crash on the system stack), then the goroutine's.
SYS_CHAIN = ["runtime.fatalthrow.func1", "runtime.systemstack",
             "runtime.fatalthrow", "runtime.fatal", "sync.fatal", "sync.(*Mutex).unlockSlow",
             "main.unlockTwice", "main.unlockTwice", "main.main", "runtime.main",
             "runtime.goexit"]
SYSTEMSTACK = "runtime.systemstack.abi0"  # the assembly function's .symtab name
REFERENCES = {"go": [], "gopie.unstripped": ["-buildmode=pie"], "cgo": [], "gosys": []}
# Source-line cases (no GDB; Go's traceback is the expectation): name -> go build flags.
LINE_VARIANTS = {"goinline": [], "goinlinestripped": ["-ldflags=-s -w"]}
TRAMPOLINE = "runtime.sigreturn.abi0"  # amd64: Go's own sa_restorer
# The assembly function's .symtab name: with the suffix where Go has a register ABI (amd64,
# arm64), without it on s390x (ABI0 only).
ASMCGOCALL = r"runtime\.asmcgocall(\.abi0)?"
SIGTRAMP = "runtime.sigtramp"


GDB_SCRIPT = r"""
import gdb, json
stops = []
def record():
    frames, f = [], gdb.newest_frame()
    while f is not None and len(frames) < 256:
        if f.type() != gdb.INLINE_FRAME:  # ehbt sees physical frames
            frames.append({"pc": f.pc(), "function": f.name()})
            if not %(native)s and f.name() in ("%(sigtramp)s", "%(sigtramp)s.abi0"):
                # The word at the handler's sp: Go's saved return address on arm64.
                sp = int(f.read_register("sp"))
                word = gdb.selected_inferior().read_memory(sp, 8).tobytes()
                frames[-1]["sp_word"] = int.from_bytes(word, "%(byteorder)s")
        try:
            f = f.older()
        except gdb.error:
            break
    stop = {"tid": gdb.selected_thread().ptid[1], "frames": frames}
    if %(native)s:
        stop["tramp"] = int(gdb.parse_and_eval("(long)&'%(tramp)s'"))
    for fr in frames:
        if "sp_word" in fr:
            code = gdb.selected_inferior().read_memory(fr["sp_word"], 8).tobytes()
            fr["sp_word_code"] = code.hex()
    stops.append(stop)
%(start)s
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


def build(name, flags, source=SOURCE):
    env = dict(os.environ, GO111MODULE="off", GOCACHE=os.path.join(OUT, "go-cache"),
               GOPATH=os.path.join(OUT, "gopath"), CGO_ENABLED="0",
               GOARCH=ARCHES[ARCH]["goarch"])
    exe = os.path.join(BIN, name)
    if os.path.isdir(source):  # cgo: the package in that directory, its C files by the C compiler
        env.update(CGO_ENABLED="1", CC=ARCHES[ARCH]["cc"])
        run([GO, "build"] + flags + ["-o", exe, "."], env=env, cwd=source)
    else:
        run([GO, "build"] + flags + ["-o", exe, source], env=env, cwd=os.path.dirname(source))
    return exe


def instruction_layout(exe):
    """[(address, mnemonic)] of .text: the code layout, operands aside."""
    objdump = "objdump" if ARCH == "x86_64" else "%s-linux-gnu-objdump" % ARCH
    out = run([objdump, "-d", "--no-show-raw-insn", "-j", ".text", exe])
    return re.findall(r"^\s*([0-9a-f]+):\s+(\S+)", out, re.M)


def same_code(exe, unstripped):
    """Whether two builds have the same code layout. objdump's linear disassembly of s390x Go's
    stripped .text loses the instruction boundaries (with no symbols it decodes data between
    functions as code), so there the .text bytes are compared instead: same address and size,
    and every byte that differs lies in an instruction of the unstripped build that loads the
    address of data (larl: read-only data moved when the symbols went)."""
    if instruction_layout(exe) == instruction_layout(unstripped):
        return True
    if ARCH != "s390x":
        return False
    texts = []
    for path in (exe, unstripped):
        sections = run(["readelf", "-SW", path])
        m = re.search(r"\]\s+\.text\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", sections)
        if not m:
            return False
        dump = os.path.join(OUT, "run", os.path.basename(path) + ".text")
        run(["%s-linux-gnu-objcopy" % ARCH, "-O", "binary", "-j", ".text", path, dump])
        texts.append((int(m.group(1), 16), int(m.group(2), 16), open(dump, "rb").read()))
    (start, size, a), (start_ref, size_ref, b) = texts
    if (start, size) != (start_ref, size_ref) or len(a) != len(b):
        return False
    out = run(["%s-linux-gnu-objdump" % ARCH, "-d", "--no-show-raw-insn", "-j", ".text",
               unstripped])
    insns = [(int(at, 16), op) for at, op in
             re.findall(r"^\s*([0-9a-f]+):\s+(\S+)", out, re.M)]
    starts = [at for at, _ in insns]
    for i in (i for i in range(len(a)) if a[i] != b[i]):
        k = bisect.bisect_right(starts, start + i) - 1
        if k < 0 or insns[k][1] != "larl":
            return False
    return True


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


def go_traceback(path, state="running"):
    """Physical frames of the crashing goroutine (the first block in `state`: `syscall` for
    one in a cgo call): name, pc, fp, sp."""
    text = open(path, errors="replace").read()
    block = re.search(r"^goroutine \d+ \[%s\]:\n(.*?)(?:\n\n|\Z)" % state, text,
                      re.S | re.M)
    if not block:
        raise Fail("%s: no running goroutine in Go's traceback" % path)
    frames, name = [], None
    for line in block.group(1).splitlines():
        if not line.startswith("\t"):
            # The argument list only: a method's name has parentheses of its own
            # (sync.(*Mutex).unlockSlow(0x505480, 0xffffffff)).
            name = re.sub(r"\([^()]*\)$", "", line)
            continue
        m = re.search(r"fp=(0x[0-9a-f]+) sp=(0x[0-9a-f]+) pc=(0x[0-9a-f]+)", line)
        if m:  # inlined frames have no pc of their own
            frames.append({"function": "runtime.gopanic" if name == "panic" else name,
                           "pc": int(m.group(3), 16), "fp": int(m.group(1), 16),
                           "sp": int(m.group(2), 16)})
    return frames


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crash(name, exe, symbols_from, stop_at_fault=False):
    rundir = os.path.join(OUT, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    trace = os.path.join(OUT, name + ".traceback.txt")
    raw = os.path.join(OUT, name + ".gdb.json")
    script = os.path.join(rundir, "record.py")
    qemu = ARCHES[ARCH]["qemu"]
    gdb = debugger(name)
    port = free_port()
    if qemu:
        start = ('gdb.execute("target remote 127.0.0.1:%d")\n'
                 'gdb.execute("continue")' % port)
    else:
        start = 'gdb.execute("run 2>%s")' % trace
    with open(script, "w") as f:
        f.write(GDB_SCRIPT % {"out": raw, "tramp": TRAMPOLINE, "sigtramp": SIGTRAMP,
                              "native": not qemu, "start": start,
                              "byteorder": ARCHES[ARCH].get("byteorder", "little")})

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    cmd = [gdb, "-nx", "-batch", "-ex", "set pagination off",
           "-ex", "set confirm off", "-ex", "set language c",
           "-ex", "set backtrace past-main on", "-ex", "set cwd " + rundir,
           "-ex", "set environment GOTRACEBACK=crash", "-ex", "set tcp connect-timeout 30",
           # cgo: GDB also stops at the fault itself, where it walks the C frames by their CFI.
           "-ex", "handle SIGSEGV %s pass" % ("stop print" if stop_at_fault else "nostop noprint"),
           "-ex", "handle SIGURG nostop noprint pass",
           "-ex", "handle SIGABRT stop print pass"] + (
               # cgo under qemu: GDB reads the guest's C library from the same sysroot.
               ["-ex", "set sysroot " + ARCHES[ARCH]["sysroot"]]
               if stop_at_fault and qemu else []) + ["-ex", "file " + exe,
           "-ex", "symbol-file " + symbols_from, "-x", script]
    guest = None
    if not gdb:
        def guest_limits_plain():
            limits()
            with open("/proc/self/coredump_filter", "w") as f:
                f.write("0")
        with open(trace, "w") as err:
            subprocess.run([qemu, exe], cwd=rundir, env=dict(os.environ, GOTRACEBACK="crash"),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                           preexec_fn=guest_limits_plain, timeout=300)
        with open(raw, "w") as f:
            json.dump([], f)
    elif qemu:
        # qemu writes the guest's core (qemu_<prog>_<time>_<pid>.core) in its cwd, then dies of
        # the signal itself: coredump_filter 0 keeps that host core of qemu tiny.
        def guest_limits():
            limits()
            with open("/proc/self/coredump_filter", "w") as f:
                f.write("0")
        with open(trace, "w") as err:
            # No asynchronous preemption: each of its SIGURGs (every 10 ms per running
            # goroutine) stops the guest at the gdbstub for a round trip to GDB, and under load
            # that traffic hung 3 runs in 40 (GDB waiting until its 600 s timeout). The crash
            # itself is a panic, not a preemption; its frames do not change.
            sysroot = ["-L", ARCHES[ARCH]["sysroot"]] if stop_at_fault else []
            guest = subprocess.Popen([qemu, "-g", str(port)] + sysroot + [exe], cwd=rundir,
                                     env=dict(os.environ, GOTRACEBACK="crash",
                                              GODEBUG="asyncpreemptoff=1"),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=err, preexec_fn=guest_limits)
    try:
        if gdb:
            subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=limits, timeout=600)
        if guest:
            guest.wait(timeout=120)
    finally:
        if guest and guest.poll() is None:
            guest.kill()
            guest.wait()
    if qemu:
        for host_core in [c for c in os.listdir(rundir) if c == "core" or c.startswith("core.")]:
            os.unlink(os.path.join(rundir, host_core))  # qemu's own, not the guest's
        cores = [c for c in os.listdir(rundir) if c.startswith("qemu_") and c.endswith(".core")]
    else:
        cores = [c for c in os.listdir(rundir) if c == "core" or c.startswith("core.")]
    if len(cores) != 1 or not os.path.exists(raw):
        raise Fail("%s: %d cores (core_pattern must be `core`) or no GDB record" % (
            name, len(cores)))
    core = os.path.join(OUT, name + ".core")
    shutil.move(os.path.join(rundir, cores[0]), core)
    return core, trace, json.load(open(raw))


def amd64_frames(name, unstripped, stops, trace):
    """GDB's frames (second stop up to Go's trampoline, then the first stop's) with Go's
    traceback checked against them from runtime.gopanic down. Returns (frames, load bias)."""
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
    return frames, bias


def lr_arch_frames(name, stops, trace):
    """GDB's second stop up to runtime.sigtramp, the rt_sigreturn trampoline it returns to,
    GDB's first stop above runtime.gopanic, then Go's traceback from gopanic down (see the
    module's doc)."""
    upper = stops[1]["frames"]
    cut = next((i for i, f in enumerate(upper) if "sp_word" in f), None)
    if cut is None:
        raise Fail("%s: GDB's frames at the core do not reach %s" % (name, SIGTRAMP))
    if not upper[cut]["sp_word_code"].startswith(ARCHES[ARCH]["sigreturn"]):
        raise Fail("%s: %s returns to 0x%x, which is no rt_sigreturn" % (
            name, SIGTRAMP, upper[cut]["sp_word"]))
    frames = [dict(f, type="normal", exact=i == 0) for i, f in enumerate(upper[:cut + 1])]
    frames.append({"pc": upper[cut]["sp_word"], "function": None, "type": "sigtramp",
                   "exact": True})
    lower = stops[0]["frames"]
    gopanic = next((i for i, f in enumerate(lower) if f["function"] == "runtime.gopanic"), None)
    go = go_traceback(trace)
    if gopanic is None or not go or go[0]["function"] != "runtime.gopanic" or \
            lower[gopanic]["pc"] != go[0]["pc"]:
        raise Fail("%s: GDB's first stop %s does not join Go's traceback %s at gopanic" % (
            name, [(f["function"], hex(f["pc"])) for f in lower],
            [(g["function"], hex(g["pc"])) for g in go]))
    frames += [dict(f, type="normal", exact=i == 0) for i, f in enumerate(lower[:gopanic])]
    frames += [{"pc": g["pc"], "function": g["function"], "type": "normal", "exact": False,
                "cfa": g["fp"]} for g in go]
    if frames[-1]["function"] != "runtime.goexit":
        raise Fail("%s: Go's traceback does not end at runtime.goexit" % name)
    return frames, 0


def core_crashing_tid(core):
    """pr_pid of the core's first NT_PRSTATUS note: the thread that took the signal (the kernel
    and qemu both write it first)."""
    import struct
    data = open(core, "rb").read()
    end = ">" if data[5] == 2 else "<"
    phoff, = struct.unpack_from(end + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            end + "IIQQQQ", data, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        at = p_offset
        while at + 12 <= p_offset + p_filesz:
            namesz, descsz, ntype = struct.unpack_from(end + "III", data, at)
            desc = at + 12 + (namesz + 3) // 4 * 4
            if ntype == 1:  # NT_PRSTATUS: pr_pid after the siginfo head, cursig, sigpend, sighold
                return struct.unpack_from(end + "I", data, desc + 32)[0]
            at = desc + (descsz + 3) // 4 * 4
    raise Fail("%s: no NT_PRSTATUS note" % core)


def traceback_frames(name, trace):
    """Go's own traceback of the crashing goroutine alone, runtime.gopanic to runtime.goexit:
    the tail of the thread's frames (the signal and re-raise frames above are not in it)."""
    go = go_traceback(trace)
    if not go or go[0]["function"] != "runtime.gopanic" or go[-1]["function"] != "runtime.goexit":
        raise Fail("%s: Go's traceback is not gopanic .. goexit: %s" % (name, go))
    return [{"pc": g["pc"], "function": g["function"], "type": "normal", "exact": False,
             "cfa": g["fp"]} for g in go], 0


def cgo_frames(name, unstripped, stops, trace):
    """A cgo crash (see cgocrash.go): GDB stops at the SIGSEGV and at both SIGABRTs. Expected =
    the core's frames (third stop) up to Go's signal trampoline; the frames the SIGABRT
    interrupted (second stop) up to runtime.sigpanic, which Go's handler made look called from
    the faulting pc; the frames at the fault (first stop: GDB walks the C frames by their CFI)
    from the faulting function up to runtime.asmcgocall, the last frame on the g0 stack; then
    Go's own traceback of the goroutine in the cgo call, runtime.cgocall to runtime.goexit, on
    the goroutine's stack (GDB's frames past asmcgocall's stack switch are garbage)."""
    upper = stops[2]["frames"]
    if ARCH == "x86_64":
        # With cgo, Go installs its handler through the C library's sigaction, whose restorer
        # (glibc's __restore_rt) is the trampoline: the frame after runtime.sigtramp.
        cut = next((i + 1 for i, f in enumerate(upper[:-1]) if f["function"] == SIGTRAMP), None)
    else:
        # As for gocrash (lr_arch_frames): GDB ends at runtime.sigtramp; the trampoline is the
        # word at its sp, checked by its bytes to be rt_sigreturn.
        cut = next((i for i, f in enumerate(upper) if "sp_word" in f), None)
        if cut is not None:
            if not upper[cut]["sp_word_code"].startswith(ARCHES[ARCH]["sigreturn"]):
                raise Fail("%s: %s returns to 0x%x, which is no rt_sigreturn" % (
                    name, SIGTRAMP, upper[cut]["sp_word"]))
            upper = upper[:cut + 1] + [{"pc": upper[cut]["sp_word"], "function": None}]
            cut += 1
    middle = stops[1]["frames"]
    sigpanic = next((i for i, f in enumerate(middle) if f["function"] == "runtime.sigpanic"),
                    None)
    fault = stops[0]["frames"]
    asm = next((i for i, f in enumerate(fault) if f["function"] == "runtime.asmcgocall"), None)
    if cut is None or sigpanic is None or asm is None:
        raise Fail("%s: GDB's stops do not reach the trampoline, sigpanic and asmcgocall: %s" % (
            name, [[f["function"] for f in s["frames"]] for s in stops]))
    text = open(trace, errors="replace").read()
    at = re.search(r"\[signal SIGSEGV: .* pc=(0x[0-9a-f]+)\]", text)
    if not at or int(at.group(1), 16) != fault[0]["pc"] or \
            middle[sigpanic + 1]["pc"] != fault[0]["pc"]:
        raise Fail("%s: the faulting pc differs between Go's report, GDB's fault stop and the "
                   "frame under sigpanic" % name)
    go = go_traceback(trace, "syscall")
    if not go or go[0]["function"] != "runtime.cgocall" or go[-1]["function"] != "runtime.goexit":
        raise Fail("%s: Go's traceback is not cgocall .. goexit: %s" % (name, go))
    frames = [dict(f, type="sigtramp" if i == cut else "normal", exact=i in (0, cut))
              for i, f in enumerate(upper[:cut + 1])]
    for f in frames:
        f.pop("sp_word", None)
        f.pop("sp_word_code", None)
    frames += [dict(f, type="normal", exact=i == 0) for i, f in enumerate(middle[:sigpanic + 1])]
    # The faulting pc, planted as sigpanic's return address: exact (no call precedes it).
    frames += [dict(f, type="normal", exact=i == 0) for i, f in enumerate(fault[:asm + 1])]
    # asmcgocall's CFA is its caller's sp on the goroutine stack, as Go prints it.
    frames[-1]["cfa"] = go[0]["sp"]
    asm_at = len(frames) - 1
    frames += [{"pc": g["pc"], "function": g["function"], "type": "normal", "exact": False,
                "cfa": g["fp"]} for g in go]
    # Go prints a goroutine in a cgo call from the state entersyscall saved (g.syscallpc: the
    # return address of cgocall's call of entersyscall); the frame's real pc is the return
    # address of its one call of asmcgocall (objdump), in the same frame (same sp and fp).
    frames[asm_at + 1]["pc"] = call_return(unstripped, "runtime.cgocall", ASMCGOCALL)
    return frames, 0  # not position-independent


def systemstack_frames(name, unstripped, stops, trace):
    """The crash on g0 (see gosystemstack.go): GDB stops at both SIGABRTs. Expected = the core's
    frames (second stop) up to the signal trampoline (as for gocrash: amd64 Go's own restorer,
    arm64 the word at runtime.sigtramp's sp, checked to be rt_sigreturn); the frames the first
    SIGABRT interrupted (first stop), runtime.raise up to runtime.systemstack, the last frame on
    g0's stack (GDB, trusting Go's .debug_frame for systemstack, goes on as if sp had not moved:
    garbage); then runtime.fatalthrow, systemstack's caller on the goroutine's stack, at the
    return address of its one call of systemstack (objdump), with the CFA Go's traceback
    prints as the sp of fatalthrow's caller; then Go's own traceback of the goroutine,
    runtime.fatal to runtime.goexit (fp = CFA). Go starts that traceback at fatalthrow's caller
    (dopanic_m is given fatalthrow's getcallerpc/getcallersp)."""
    upper = stops[1]["frames"]
    if ARCH == "x86_64":
        tramp = [s for s in elf_symbols(unstripped) if s[2] == TRAMPOLINE]
        cut = next((i for i, f in enumerate(upper) if tramp and f["pc"] == tramp[0][0]), None)
    else:
        cut = next((i for i, f in enumerate(upper) if "sp_word" in f), None)
        if cut is not None:
            if not upper[cut]["sp_word_code"].startswith(ARCHES[ARCH]["sigreturn"]):
                raise Fail("%s: %s returns to 0x%x, which is no rt_sigreturn" % (
                    name, SIGTRAMP, upper[cut]["sp_word"]))
            upper = upper[:cut + 1] + [{"pc": upper[cut]["sp_word"], "function": None}]
            cut += 1
    lower = stops[0]["frames"]
    sysat = next((i for i, f in enumerate(lower)
                  if f["function"] in ("runtime.systemstack", SYSTEMSTACK)), None)
    if cut is None or sysat is None or \
            lower[0]["function"] not in ("runtime.raise", "runtime.raise.abi0"):
        raise Fail("%s: GDB's stops do not reach the trampoline and systemstack: %s" % (
            name, [[f["function"] for f in s["frames"]] for s in stops]))
    go = go_traceback(trace)
    if not go or go[0]["function"] != "runtime.fatal" or go[-1]["function"] != "runtime.goexit":
        raise Fail("%s: Go's traceback is not fatal .. goexit: %s" % (name, go))
    frames = [dict(f, type="sigtramp" if i == cut else "normal", exact=i in (0, cut))
              for i, f in enumerate(upper[:cut + 1])]
    if ARCH == "x86_64":  # GDB does not name Go's restorer: its ELF symbol (nm) does
        frames[cut]["function"] = re.sub(r"\.abi0$", "", TRAMPOLINE)
    frames += [dict(f, type="normal", exact=i == 0) for i, f in enumerate(lower[:sysat + 1])]
    for f in frames:
        f.pop("sp_word", None)
        f.pop("sp_word_code", None)
    # systemstack's CFA is its caller's sp on the goroutine's stack (as for asmcgocall): below
    # fatal's sp by fatalthrow's frame, which Go's traceback does not print; left unchecked.
    frames.append({"pc": call_return(unstripped, "runtime.fatalthrow", SYSTEMSTACK),
                   "function": "runtime.fatalthrow", "type": "normal", "exact": False,
                   "cfa": go[0]["sp"]})
    frames += [{"pc": g["pc"], "function": g["function"], "type": "normal", "exact": False,
                "cfa": g["fp"]} for g in go]
    return frames


def call_return(exe, caller, callee):
    """The address after the one call of `callee` (a regular expression) in `caller` (objdump
    of the .symtab build)."""
    out = run(["objdump" if ARCH == "x86_64" else "%s-linux-gnu-objdump" % ARCH, "-d",
               "--no-show-raw-insn", exe])
    body = re.search(r"^[0-9a-f]+ <%s>:\n(.*?)\n\n" % re.escape(caller), out, re.S | re.M)
    lines = body.group(1).splitlines() if body else []
    at = [i for i, line in enumerate(lines)
          if re.search(r"\s(call|bl|brasl)\s.*<%s>" % callee, line)]
    if len(at) != 1 or at[0] + 1 >= len(lines):
        raise Fail("%s: %d calls of %s in %s" % (exe, len(at), callee, caller))
    return int(lines[at[0] + 1].split(":")[0], 16)


def expected_frames(name, exe, unstripped, stops, trace):
    if name in CGO_VARIANTS:
        if len(stops) != 3 or len({s["tid"] for s in stops}) != 1:
            raise Fail("%s: expected a SIGSEGV and two SIGABRT stops of one thread, GDB saw %d" %
                       (name, len(stops)))
        frames, bias = cgo_frames(name, unstripped, stops, trace)
        return stops[0]["tid"], name_frames(frames, bias, exe, unstripped, CGO_CHAIN)
    if name in SYS_VARIANTS:
        if len(stops) != 2 or stops[0]["tid"] != stops[1]["tid"]:
            raise Fail("%s: expected two SIGABRT stops of one thread, GDB saw %d" % (
                name, len(stops)))
        frames = systemstack_frames(name, unstripped, stops, trace)
        return stops[0]["tid"], name_frames(frames, 0, exe, unstripped, SYS_CHAIN)
    if not debugger(name):
        frames, bias = traceback_frames(name, trace)
        return None, name_frames(frames, bias, exe, unstripped, recorded=False)
    if len(stops) != 2 or stops[0]["tid"] != stops[1]["tid"]:
        raise Fail("%s: expected two SIGABRT stops of one thread, GDB saw %d" % (name, len(stops)))
    if ARCH == "x86_64":
        frames, bias = amd64_frames(name, unstripped, stops, trace)
    else:
        frames, bias = lr_arch_frames(name, stops, trace)
    return stops[0]["tid"], name_frames(frames, bias, exe, unstripped)


def name_frames(frames, bias, exe, unstripped, want=CHAIN, recorded=True):
    chain = [f["function"] for f in frames if f["function"] in want]
    if chain != want:
        raise Fail("%s: call chain %s, want %s" % (exe, chain, want))
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
        if exe != unstripped and recorded:
            # The reference build's ELF symbol, as Go's table names it: assembly functions
            # carry an ABI suffix only in the ELF symbol table (runtime.raise.abi0).
            names |= {re.sub(r"\.abi0$", "", s[2]) for s in ref_syms if s[0] <= at < s[1]}
        # The trampoline outside every file (qemu's page, the vDSO) has no name.
        f["symbols"] = sorted(names) if names or f["type"] != "sigtramp" else [None]
        f["pc"] = "0x%x" % f["pc"]
        f.pop("sp_word", None)
        f.pop("sp_word_code", None)
        if "cfa" in f:
            f["cfa"] = "0x%x" % f["cfa"]
    return frames


def make(name, flags, reference):
    os.makedirs(BIN, exist_ok=True)
    source = CGO_SOURCE if name in CGO_VARIANTS else SYS_SOURCE if name in SYS_VARIANTS \
        else SOURCE
    exe = build(name, flags, source)
    unstripped = os.path.join(BIN, reference)
    if reference != name:
        build(reference, REFERENCES[reference], source)
        # Without GDB the reference is not read for this build's frames (s390x's differs).
        if debugger(name) and not same_code(exe, unstripped):
            raise Fail("%s: code layout differs from the unstripped build" % name)
        if any(s for s in elf_symbols(exe)):
            raise Fail("%s: still has a symbol table" % name)
    core, trace, stops = crash(name, exe, unstripped, stop_at_fault=name in CGO_VARIANTS)
    tid, frames = expected_frames(name, exe, unstripped, stops, trace)
    if tid is None:  # no GDB: the core's only thread that ran the crashing goroutine
        tid = core_crashing_tid(core)
    doc = {"format": "ehbt-go-expected/1", "arch": ARCH, "program": name, "core": core,
           "exe": exe, "stripped": reference != name, "signal": 6, "tid": tid,
           "source": ("gdb-live+go-traceback" if debugger(name) else "go-traceback") +
           ("" if ARCH == "x86_64" else " (qemu)"),
           # Without GDB the frames are the tail of the thread's (gopanic down).
           "tail": not debugger(name),
           "traceback": trace, "frames": frames}
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("%s: %d frames expected" % (name, len(frames)))


def make_lines(name, flags):
    """A source-line case: the program crashed without a debugger, natively or under qemu
    (which writes the guest's core); Go's traceback is kept as the expectation."""
    os.makedirs(BIN, exist_ok=True)
    exe = build(name, flags, LINES_SOURCE)
    if "-s" in " ".join(flags) and any(s for s in elf_symbols(exe)):
        raise Fail("%s: still has a symbol table" % name)
    rundir = os.path.join(OUT, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    trace = os.path.join(OUT, name + ".traceback.txt")
    qemu = ARCHES[ARCH]["qemu"]

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if qemu:  # qemu's own host core stays tiny; it writes the guest's itself
            with open("/proc/self/coredump_filter", "w") as f:
                f.write("0")
    with open(trace, "w") as err:
        subprocess.run(([qemu] if qemu else []) + [exe], cwd=rundir,
                       env=dict(os.environ, GOTRACEBACK="crash"), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limits, timeout=300)
    files = os.listdir(rundir)
    if qemu:
        for host_core in [c for c in files if c == "core" or c.startswith("core.")]:
            os.unlink(os.path.join(rundir, host_core))  # qemu's own, not the guest's
        cores = [c for c in files if c.startswith("qemu_") and c.endswith(".core")]
    else:
        cores = [c for c in files if c == "core" or c.startswith("core.")]
    if len(cores) != 1:
        raise Fail("%s: %d cores (core_pattern must be `core`)" % (name, len(cores)))
    core = os.path.join(OUT, name + ".core")
    shutil.move(os.path.join(rundir, cores[0]), core)
    go = go_traceback(trace)
    if not go or go[0]["function"] != "runtime.gopanic" or go[-1]["function"] != "runtime.goexit":
        raise Fail("%s: Go's traceback is not gopanic .. goexit: %s" % (name, go))
    doc = {"format": "ehbt-go-lines-expected/1", "arch": ARCH, "program": name, "core": core,
           "exe": exe, "stripped": name.endswith("stripped"), "signal": 6,
           "tid": core_crashing_tid(core), "traceback": trace,
           "source": "go-traceback" + ("" if ARCH == "x86_64" else " (qemu)")}
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("%s: core and Go's traceback written" % name)


def make_deadlock(name, flags):
    """The mcall case (godeadlock.go): crashed without a debugger (natively or under qemu). Its
    expectation (format ehbt-go-deadlock-expected/1) is Go's own traceback of goroutine 1,
    parked in a channel receive: runtime.gopark .. runtime.goexit with pc and fp (= CFA), as Go
    printed them from the goroutine's g.sched, which runtime.mcall wrote."""
    os.makedirs(BIN, exist_ok=True)
    exe = build(name, flags, DEADLOCK_SOURCE)
    rundir = os.path.join(OUT, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    trace = os.path.join(OUT, name + ".traceback.txt")
    qemu = ARCHES[ARCH]["qemu"]

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if qemu:
            with open("/proc/self/coredump_filter", "w") as f:
                f.write("0")
    with open(trace, "w") as err:
        subprocess.run(([qemu] if qemu else []) + [exe], cwd=rundir,
                       env=dict(os.environ, GOTRACEBACK="crash"), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limits, timeout=300)
    files = os.listdir(rundir)
    if qemu:
        for host_core in [c for c in files if c == "core" or c.startswith("core.")]:
            os.unlink(os.path.join(rundir, host_core))
        cores = [c for c in files if c.startswith("qemu_") and c.endswith(".core")]
    else:
        cores = [c for c in files if c == "core" or c.startswith("core.")]
    if len(cores) != 1:
        raise Fail("%s: %d cores (core_pattern must be `core`)" % (name, len(cores)))
    core = os.path.join(OUT, name + ".core")
    shutil.move(os.path.join(rundir, cores[0]), core)
    if "all goroutines are asleep - deadlock!" not in open(trace, errors="replace").read():
        raise Fail("%s: no deadlock report in Go's traceback" % name)
    go = go_traceback(trace, r"chan receive")
    if [g["function"] for g in go] != ["runtime.gopark", "runtime.chanrecv",
                                       "runtime.chanrecv1", "main.main", "runtime.main",
                                       "runtime.goexit"]:
        raise Fail("%s: goroutine 1 is not parked in its channel receive: %s" % (name, go))
    doc = {"format": "ehbt-go-deadlock-expected/1", "arch": ARCH, "program": name,
           "core": core, "exe": exe, "stripped": "-s" in " ".join(flags), "signal": 6,
           "tid": core_crashing_tid(core), "traceback": trace,
           "source": "go-traceback" + ("" if ARCH == "x86_64" else " (qemu)"),
           "goroutine": [{"pc": "0x%x" % g["pc"], "function": g["function"],
                          "cfa": "0x%x" % g["fp"]} for g in go]}
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("%s: core and Go's traceback written" % name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="x86_64", choices=sorted(ARCHES))
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    set_arch(args.arch)
    if not os.path.exists(GO):
        print("make_go_cores: %s missing (Debian golang-go)" % GO, file=sys.stderr)
        return 1
    status = 0
    wanted = ARCHES[args.arch]["variants"]
    for name in (args.only.split(",") if args.only else wanted):
        if name not in wanted:
            continue
        try:
            if name in LINE_VARIANTS:
                make_lines(name, LINE_VARIANTS[name])
                continue
            if name in DEADLOCK_VARIANTS:
                make_deadlock(name, DEADLOCK_VARIANTS[name])
                continue
            make(name, *VARIANTS[name])
        except (Fail, subprocess.TimeoutExpired) as e:
            print("%s: %s" % (name, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
