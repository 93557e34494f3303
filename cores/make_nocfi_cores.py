#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fixture cores for code the unwind tables do not cover (x86-64, native):

  musl_sigabort  musl-gcc -static: musl has no CFI; abort() in a SIGUSR1 handler entered
                 inside musl's raise(). GDB and eu-stack stop after 2 and 1 frames, so the
                 expected frames come from the program's structure: the function of each
                 frame, and for each caller pc the call instruction before it (objdump).
  musl_noreturn_print
                 musl-gcc -static, stripped: a noreturn helper prints (fwrite, fprintf) and
                 calls abort(); the print calls leave stale return addresses into musl's stdio
                 on the stack. Expected: the program's structure (below), named by the
                 unstripped copy's symbols; GDB and eu-stack stop early on musl.
  glibc_noreturn_print
                 the same program (musl_noreturn_print.c) built by gcc against glibc, -static,
                 stripped: glibc's own functions keep their .eh_frame, so the full walk is
                 by table; a copy without .eh_frame (same build-id, <exe>.notables) makes the
                 fallbacks walk past the stale return addresses of the print calls (into
                 fwrite, _IO_new_file_xsputn...). Expected: GDB on the unstripped copy
                 (physical frames, past main), checked against the program's structure.
  glibc_noreturn_print_dyn
                 the same, linked dynamically (stripped): the print functions are in
                 libc.so.6, the program's own frames walk by fallback in the .notables copy.
  rust_abort     Debian rustc, -C panic=abort, stripped: panic_abort's CFI was only in
                 .debug_frame. Expected: GDB on the unstripped copy (physical frames).
  node_abort     node --perf-basic-prof --interpreted-frames-native-stack: process.abort()
                 from nested JS functions; JIT frames (anonymous executable memory) named by the
                 perf map copied beside the core. Expected: eu-stack's pcs (it follows V8's
                 frame-pointer chain; an independent unwinder) and the JS functions in the perf
                 map names, innermost first.
  node_deopt     node --allow-natives-syntax: process.abort() right after a deoptimisation
                 (the function compiled by the program itself, not by V8's tiering), so that
                 return addresses in the frame-pointer chain are the first instruction of
                 Builtins_InterpreterEnterAtNextBytecode (planted by V8's deoptimiser; no
                 call precedes them). Expected: eu-stack's pcs; the planted address from nm.

  java_jit, java_jit_fp
                 OpenJDK 17 (HotSpot), `java JavaJit.java` (source launch: jdk.compiler is in
                 openjdk-17-jre-headless): SIGSEGV in C2-compiled code three compiled calls
                 deep (an Unsafe store to address 0), HotSpot's handler reports it and aborts.
                 java_jit_fp runs with -XX:+PreserveFramePointer (compiled code keeps rbp as a
                 frame pointer), java_jit without (the default: C2 code uses rbp as a general
                 register, so the rbp chain skips compiled frames). Expected: HotSpot's own
                 walk in hs_err_pid*.log ("Native frames": it knows every compiled frame's
                 size), each line's pc (J: printed; V/C: library base from its "Dynamic
                 libraries" + offset; j/v: none printed), and eu-stack's pcs; the perf map
                 is written by the JVM itself (Compiler.perfmap) before the crash.
  java_jit_c1    as java_jit (no frame pointer), compiled by C1 only (-XX:TieredStopAtLevel=1):
                 C1's frames (bigger, its own prologue and epilogues), and main usually
                 compiled too by an OSR compile (a `%` line in hs_err), whose frame the
                 interpreter's migration built and whose caller is the call stub.
                 Expected: hs_err and eu-stack, as for java_jit.
  java_jit_megamorphic
                 as java_jit (no frame pointer), but the faulting method is reached through a
                 megamorphic virtual call: the caller's call instruction calls HotSpot's vtable
                 stub, which jumps through a register to the method (no direct call names the
                 callee). Expected: hs_err and eu-stack, as for java_jit.

  scan_aarch64, scan_s390x
                 the stack scan on real cores of the other architectures, under qemu:
                 nounwind.c + nounwind_fp.c built with -fno-asynchronous-unwind-tables
                 -fno-unwind-tables -fomit-frame-pointer (and no s390x back chain), then
                 .debug_frame (which -g still emits) removed: the program's own functions
                 have no CFI and no frame chain; libc keeps its tables. Expected: GDB live
                 through qemu's gdbstub on the copy that keeps .debug_frame (same code), by
                 make_cores.py's machinery (format ehbt-expected/1, cores/out/<arch>/scan.*).

Writes cores/out/x86_64/<name>.core, <name>.expected.json (format ehbt-expected-nocfi/1),
the binaries under bin/, and for node the perf map <name>.perf.map. Usage:
  make_nocfi_cores.py [--only NAME,...]
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
# EHBT_CORES_OUT writes elsewhere (as make_cores.py does: a worktree's cores/out is shared).
OUT = os.path.join(os.environ.get("EHBT_CORES_OUT") or os.path.join(HERE, "out"), "x86_64")
BIN = os.path.join(OUT, "bin")
RUSTC = "/usr/bin/rustc"  # Debian's, not a rustup one earlier on PATH


def run(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def crash(argv, name, env=None):
    """Runs argv in a fresh directory with cores enabled; returns (core path, pid)."""
    rundir = os.path.join(OUT, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    import resource

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    p = subprocess.Popen(argv, cwd=rundir, preexec_fn=limits, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.wait()
    if p.returncode != -6:
        raise SystemExit("%s: expected SIGABRT, got status %s" % (name, p.returncode))
    cores = glob.glob(os.path.join(rundir, "core*"))
    if not cores:
        raise SystemExit("%s: no core written (core_pattern must be 'core')" % name)
    core = os.path.join(OUT, name + ".core")
    shutil.move(cores[0], core)
    return core, p.pid


def gdb_physical_frames(exe, core):
    """GDB's crashing-thread frames that exist on the machine stack: (pc, function)."""
    script = (
        "import gdb\n"
        "f = gdb.newest_frame()\n"
        "while f is not None:\n"
        "    if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):\n"
        "        print('FRAME 0x%x %s' % (f.pc(), f.name()))\n"
        "    f = f.older()\n")
    path = os.path.join(OUT, "run", "physical_frames.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(script)
    # GDB's exit status is 1 when its unwinder gives up (musl): the frames so far count.
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", "set backtrace past-main on",
                          "-ex", "set backtrace limit 200", "-ex", "source " + path, exe, core],
                         capture_output=True, text=True).stdout
    frames = []
    for line in out.splitlines():
        m = re.match(r"FRAME (0x[0-9a-f]+) (.*)$", line)
        if m:
            frames.append({"pc": m.group(1), "function": m.group(2)})
    return frames


def eu_stack_frames(exe, core):
    """eu-stack's crashing (first) thread: (pc, name)."""
    out = subprocess.run(["eu-stack", "--core", core, "-e", exe], capture_output=True,
                         text=True).stdout
    frames, started = [], False
    for line in out.splitlines():
        if line.startswith("TID "):
            if started:
                break
            started = True
            continue
        m = re.match(r"#\d+\s+(0x[0-9a-f]+)\s*(.*)$", line)
        if started and m:
            frames.append({"pc": "0x%x" % int(m.group(1), 16), "function": m.group(2) or None})
    return frames


def write(name, doc):
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(doc, f, indent=1)


def make_musl():
    exe = os.path.join(BIN, "musl_sigabort")
    run(["musl-gcc", "-static", "-O2", "-g", "-fomit-frame-pointer", "-I", PROGRAMS,
         os.path.join(PROGRAMS, "musl_sigabort.c"), "-o", exe])
    # The property the case exists for: no FDE covers musl's abort and raise.
    fdes = run(["readelf", "--debug-dump=frames", exe]).stdout
    for sym in ("abort", "raise"):
        addr = int(run(["nm", exe]).stdout.split(" T " + sym + "\n")[0].split()[-1], 16)
        for m in re.finditer(r"pc=([0-9a-f]+)\.\.([0-9a-f]+)", fdes):
            if int(m.group(1), 16) <= addr < int(m.group(2), 16):
                raise SystemExit("musl_sigabort: %s has an FDE" % sym)
    core, _ = crash([exe], "musl_sigabort")
    # Program structure (musl 1.2.3, checked with objdump by the test): the signal arrives
    # as raise() restores the signal mask; _start_c and __libc_start_main end in jumps
    # (sibling calls), so libc_start_main_stage2 returns straight into _start.
    functions = ["__restore_sigs", "raise", "abort", "fx_musl_die", "fx_musl_handler",
                 "__restore_rt", "__restore_sigs", "raise", "fx_musl_sender", "main",
                 "libc_start_main_stage2", "_start"]
    write("musl_sigabort", {
        "format": "ehbt-expected-nocfi/1", "program": "musl_sigabort", "core": core,
        "exe": exe, "source": "construction", "functions": functions,
        "sigtramp_index": 5, "gdb_frames": len(gdb_physical_frames(exe, core)),
        "eu_stack_frames": len(eu_stack_frames(exe, core))})


def make_musl_noreturn_print():
    name = "musl_noreturn_print"
    unstripped = os.path.join(BIN, name + ".unstripped")
    exe = os.path.join(BIN, name)
    run(["musl-gcc", "-static", "-O2", "-g", "-fomit-frame-pointer", "-I", PROGRAMS,
         os.path.join(PROGRAMS, name + ".c"), "-o", unstripped])
    run(["strip", "-s", unstripped, "-o", exe])
    # The property the case exists for: no symbols, and no FDE covers musl's stdio or abort
    # (the program's own functions have gcc's CFI).
    if run(["nm", exe], check=False).stdout.strip():
        raise SystemExit(name + ": the executable keeps symbols")
    fdes = run(["readelf", "--debug-dump=frames", unstripped]).stdout
    syms = run(["nm", unstripped]).stdout
    for sym in ("abort", "raise", "fwrite", "__stdio_write", "fx_fatal"):
        m = re.search(r"^([0-9a-f]+) [Tt] %s$" % re.escape(sym), syms, re.M)
        if not m:
            raise SystemExit("%s: no symbol %s" % (name, sym))
        addr = int(m.group(1), 16)
        for f in re.finditer(r"pc=([0-9a-f]+)\.\.([0-9a-f]+)", fdes):
            if int(f.group(1), 16) <= addr < int(f.group(2), 16) and not sym.startswith("fx_"):
                raise SystemExit("%s: %s has an FDE" % (name, sym))
    core, _ = crash([exe], name)
    # Program structure (musl 1.2.3): abort() raises SIGABRT, which is delivered as raise()
    # restores the signal mask (__restore_sigs); fx_fatal called abort after its prints;
    # _start_c and __libc_start_main end in jumps, so libc_start_main_stage2 returns into
    # _start. No frame of fwrite, fprintf or __stdio_write: they had returned.
    functions = ["__restore_sigs", "raise", "abort", "fx_fatal", "fx_check", "fx_outer", "main",
                 "libc_start_main_stage2", "_start"]
    write(name, {
        "format": "ehbt-expected-nocfi/1", "program": name, "core": core, "exe": exe,
        "exe_unstripped": unstripped, "source": "construction", "functions": functions,
        "stale": ["fwrite", "fprintf", "vfprintf", "fputs", "__stdio_write", "__fwritex",
                  "printf_core", "out"],
        "gdb_frames": len(gdb_physical_frames(unstripped, core)),
        "eu_stack_frames": len(eu_stack_frames(unstripped, core))})


GLIBC_NORETURN_FUNCTIONS = ["__pthread_kill_implementation", "raise", "abort", "fx_fatal",
                            "fx_check", "fx_outer", "main", "__libc_start_call_main",
                            "__libc_start_main_impl", "_start"]


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]).stdout)
    return m.group(1) if m else None


def make_glibc_noreturn_print(name="glibc_noreturn_print", static=True):
    unstripped = os.path.join(BIN, name + ".unstripped")
    exe = os.path.join(BIN, name)
    notables = exe + ".notables"
    run(["gcc", *(["-static"] if static else []), "-O2", "-g", "-fomit-frame-pointer", "-I",
         PROGRAMS, os.path.join(PROGRAMS, "musl_noreturn_print.c"), "-o", unstripped])
    run(["strip", "-s", unstripped, "-o", exe])
    # The same file without its unwind tables: what the fallbacks see when the tables are gone
    # but the code is there (the build-id stays, so ehbt uses it for the core).
    run(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr", exe,
         notables])
    if run(["nm", exe], check=False).stdout.strip():
        raise SystemExit(name + ": the executable keeps symbols")
    if ".eh_frame" in run(["readelf", "-S", notables]).stdout:
        raise SystemExit(name + ": the .notables copy keeps .eh_frame")
    if not build_id(exe) or build_id(exe) != build_id(notables):
        raise SystemExit(name + ": the .notables copy lost the build-id")
    core, _ = crash([exe], name)
    frames = gdb_physical_frames(unstripped, core)
    # Program structure (glibc 2.36): abort -> raise -> __pthread_kill_implementation (a
    # constprop clone in the static libc; in libc.so.6, with __pthread_kill_internal inlined
    # into it, and GDB names raise and abort by their internal __GI_ aliases from libc's debug
    # info) sends SIGABRT; fx_fatal called abort after its prints; main is called by
    # __libc_start_call_main. GDB's names must follow it exactly, no print function among.
    names = [(f["function"] or "").split(".")[0] for f in frames]
    names = [n[len("__GI_"):] if n.startswith("__GI_") else n for n in names]
    if names != GLIBC_NORETURN_FUNCTIONS:
        raise SystemExit("%s: GDB's frames are not the program's structure: %s" % (name, names))
    write(name, {
        "format": "ehbt-expected-nocfi/1", "program": name, "core": core, "exe": exe,
        "exe_unstripped": unstripped, "exe_notables": notables, "source": "gdb",
        "frames": frames, "functions": GLIBC_NORETURN_FUNCTIONS,
        "stale": ["fwrite", "_IO_fwrite", "fputs", "_IO_fputs", "fprintf",
                  "__vfprintf_internal", "_IO_new_file_xsputn", "_IO_file_xsputn",
                  "_IO_new_file_write", "_IO_file_write", "new_do_write", "_IO_new_do_write",
                  "__write", "write", "buffered_vfprintf",
                  "outstring_func", "__printf_buffer", "__printf_buffer_write"],
        "gdb_frames": len(frames), "eu_stack_frames": len(eu_stack_frames(unstripped, core))})


def make_rust():
    exe = os.path.join(BIN, "rust_abort")
    unstripped = exe + ".unstripped"
    ver = run([RUSTC, "--version"]).stdout.strip()
    run([RUSTC, "-C", "panic=abort", "-C", "opt-level=2", "-g",
         os.path.join(PROGRAMS, "rust_abort.rs"), "-o", unstripped])
    run(["strip", "-s", unstripped, "-o", exe])
    core, _ = crash([exe], "rust_abort")
    frames = gdb_physical_frames(unstripped, core)
    names = [f["function"] for f in frames]
    for want in ("abort", "rust_abort::fx_rust_level3", "rust_abort::fx_rust_level2",
                 "rust_abort::fx_rust_level1", "rust_abort::main", "_start"):
        if not any(n and n.endswith(want) for n in names):
            raise SystemExit("rust_abort: GDB's frames lack %s: %s" % (want, names))
    write("rust_abort", {
        "format": "ehbt-expected-nocfi/1", "program": "rust_abort", "core": core, "exe": exe,
        "exe_unstripped": unstripped, "rustc": ver, "source": "gdb", "frames": frames,
        "gdb_frames": len(frames), "eu_stack_frames": len(eu_stack_frames(exe, core))})


def make_node():
    node = shutil.which("node") or "/usr/bin/node"
    script = os.path.join(PROGRAMS, "node_abort.js")
    core, pid = crash([node, "--perf-basic-prof", "--interpreted-frames-native-stack", script],
                      "node_abort")
    perf_map = os.path.join(OUT, "node_abort.perf.map")
    shutil.move("/tmp/perf-%d.map" % pid, perf_map)
    frames = eu_stack_frames(node, core)
    names = [f["function"] or "" for f in frames]
    if not any("node::Start" in n for n in names) or names[-1] != "_start":
        raise SystemExit("node_abort: eu-stack does not reach node::Start and _start: %s" % names)
    write("node_abort", {
        "format": "ehbt-expected-nocfi/1", "program": "node_abort", "core": core, "exe": node,
        "perf_map": perf_map, "source": "eu-stack", "frames": frames,
        "js_functions": ["fx_js_level3", "fx_js_level2", "fx_js_level1"],
        "eu_stack_frames": len(frames), "gdb_frames": len(gdb_physical_frames(node, core))})


def make_node_deopt():
    node = shutil.which("node") or "/usr/bin/node"
    script = os.path.join(PROGRAMS, "node_deopt.js")
    core, _ = crash([node, "--allow-natives-syntax", script], "node_deopt")
    frames = eu_stack_frames(node, core)
    nm = subprocess.run(["nm", node], capture_output=True, text=True, check=True).stdout
    entry = re.search(r"^([0-9a-f]+) [tT] Builtins_InterpreterEnterAtNextBytecode$", nm, re.M)
    if not entry:
        raise SystemExit("node_deopt: node has no Builtins_InterpreterEnterAtNextBytecode")
    planted = "0x%x" % int(entry.group(1), 16)  # node is not PIE: link address = address
    pcs = [f["pc"] for f in frames]
    if planted not in pcs or frames[-1]["function"] != "_start":
        raise SystemExit("node_deopt: eu-stack shows no deoptimised frame or no _start: %s"
                         % pcs)
    write("node_deopt", {
        "format": "ehbt-expected-nocfi/1", "program": "node_deopt", "core": core, "exe": node,
        "source": "eu-stack", "frames": frames, "planted_pc": planted,
        "eu_stack_frames": len(frames), "gdb_frames": len(gdb_physical_frames(node, core))})


JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"


def hs_err_frames(path):
    """HotSpot's "Native frames" of its error report: [{kind, pc or None, text}] in order."""
    text = open(path).read()
    bases = {}
    for m in re.finditer(r"^([0-9a-f]+)-[0-9a-f]+ \S+ 0+ \S+ \d+\s+(/\S+)$", text, re.M):
        bases.setdefault(os.path.basename(m.group(2)), int(m.group(1), 16))
    section = text.split("\nNative frames:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    frames = []
    for line in section:
        kind, pc = line[0], None
        m = re.search(r" @ (0x[0-9a-f]+) ", line)
        if kind == "J" and m:
            pc = int(m.group(1), 16)
        m = re.match(r"[VC]\s+\[(\S+)\+(0x[0-9a-f]+)\]", line)
        if m:
            pc = bases[m.group(1)] + int(m.group(2), 16)
        frames.append({"kind": kind, "pc": None if pc is None else "0x%x" % pc,
                       "text": line[3:].strip()})
    return frames


JAVA_NAMES = ["JavaJit.fx_java_level3", "JavaJit.fx_java_level2", "JavaJit.fx_java_level1"]
# The megamorphic run: level3 is one of three Store classes' (the one the crash uses is StoreA),
# reached from level2 through HotSpot's vtable stub.
JAVA_VIRTUAL_NAMES = ["JavaJit$StoreA.fx_java_level3", "JavaJit.fx_java_level2_virtual",
                      "JavaJit.fx_java_level1_virtual"]


def make_java(name, extra, program_args=(), java_names=JAVA_NAMES, main_kinds="j"):
    argv = [JAVA, "-Xmx32m", "-Xms8m", "-XX:+UseSerialGC", "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,JavaJit*::fx_*", "-Xbatch", *extra,
            os.path.join(PROGRAMS, "JavaJit.java"), *program_args]
    core, pid = crash(argv, name)
    rundir = os.path.join(OUT, "run", name)
    perf_map = os.path.join(OUT, name + ".perf.map")
    shutil.move("/tmp/perf-%d.map" % pid, perf_map)
    [hs_err] = glob.glob(os.path.join(rundir, "hs_err_pid*.log"))
    if os.path.basename(hs_err) != "hs_err_pid%d.log" % pid:
        raise SystemExit("%s: HotSpot's pid is not %d: %s" % (name, pid, hs_err))
    hotspot = hs_err_frames(hs_err)
    if [f["kind"] for f in hotspot[:3]] != ["J", "J", "J"] or \
            hotspot[3]["kind"] not in main_kinds or not all(
            n in f["text"] for n, f in zip(java_names + ["JavaJit.main"], hotspot)):
        raise SystemExit("%s: HotSpot did not crash in the compiled fx_java_level3: %s"
                         % (name, hotspot[:4]))
    eu = eu_stack_frames(JAVA, core)
    write(name, {
        "format": "ehbt-expected-nocfi/1", "program": "JavaJit.java", "core": core,
        "exe": JAVA, "pid": pid, "argv": argv, "perf_map": perf_map, "source": "hs_err+eu-stack",
        "hs_err": hotspot, "eu_stack": eu, "java_functions": java_names,
        "preserve_frame_pointer": "-XX:+PreserveFramePointer" in extra})


CASES = {"musl_sigabort": make_musl, "musl_noreturn_print": make_musl_noreturn_print,
         "glibc_noreturn_print": make_glibc_noreturn_print,
         "glibc_noreturn_print_dyn": lambda: make_glibc_noreturn_print(
             "glibc_noreturn_print_dyn", static=False),
         "rust_abort": make_rust, "node_abort": make_node,
         "node_deopt": make_node_deopt,
         "java_jit": lambda: make_java("java_jit", []),
         "java_jit_fp": lambda: make_java("java_jit_fp", ["-XX:+PreserveFramePointer"]),
         "java_jit_megamorphic": lambda: make_java("java_jit_megamorphic", [], ["megamorphic"],
                                                   JAVA_VIRTUAL_NAMES),
         "java_jit_c1": lambda: make_java("java_jit_c1", ["-XX:TieredStopAtLevel=1"],
                                          main_kinds="Jj")}


NO_CFI = ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fomit-frame-pointer"]
SCAN_CHAIN = ["fx_nounwind_crash", "fx_nounwind_outer", "fx_unwind_caller", "main"]


def _load_make_cores():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_cores", os.path.join(HERE, "make_cores.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_scan(arch):
    mc = _load_make_cores()

    def hide_cfi(arch, exe, bins):
        # GDB reads the copy with .debug_frame; the core's executable has none.
        with_cfi = exe + ".debug_frame"
        shutil.copy2(exe, with_cfi)
        mc.run([mc.tool(arch, "objcopy"), "--remove-section=.debug_frame", exe])
        bins["gdb_exe"] = with_cfi

    def check_no_cfi(arch, exe, bins):
        for fn in SCAN_CHAIN:
            addr, _ = mc.symbol_address(exe, fn)
            if mc.fde_for(arch, exe, addr):
                raise mc.CaseError("%s is covered by an FDE" % fn)
            if not mc.fde_for(arch, bins["gdb_exe"], addr):
                raise mc.CaseError("GDB's copy has no .debug_frame FDE for %s" % fn)
        text = " | ".join("%s %s" % (i[1], i[2]) for i in mc.disassemble(arch, exe, "main"))
        if {"aarch64": "mov x29, sp", "s390x": "stg %r15,0(%r15)"}[arch] in text:
            raise mc.CaseError("main links a frame chain: " + text)
        return "%s: no FDE in .eh_frame or .debug_frame, no frame chain" % ", ".join(SCAN_CHAIN)

    case = mc.Case("scan", [("nounwind.c", NO_CFI), ("nounwind_fp.c", NO_CFI)], SCAN_CHAIN, 11,
                   arches=(arch,), post_build=hide_cfi, checks=[check_no_cfi],
                   note="the program's functions have no CFI and no frame chain: the stack scan")
    print(mc.do_case(arch, case))


CASES["scan_aarch64"] = lambda: make_scan("aarch64")
CASES["scan_s390x"] = lambda: make_scan("s390x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(CASES))
    args = ap.parse_args()
    os.makedirs(BIN, exist_ok=True)
    for name in args.only.split(","):
        CASES[name]()
        print("nocfi cores: %s done" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
