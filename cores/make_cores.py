#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the fixture programs, crashes them into cores and records the expected frames.

    make_cores.py [x86_64|aarch64|s390x|i386|all]... [--only NAME,...] [-j N]

Outputs, per architecture, in cores/out/<arch>/:
    bin/<name>                 the executable that ran (bin/<name>.unstripped for `stripped`)
    <name>.core                the core
    <name>.expected.json       the expected frames (format ehbt-expected/1, see README.md)
    <name>.gdb.txt             GDB's own `thread apply all bt`, for people
    <name>.raw.json            what cores/gdb_expect.py recorded, before post-processing

Expected frames come from GDB with full debug info (native: GDB on the core; qemu: GDB live
through qemu's gdbstub just before the core is written), or, where GDB is wrong, by
construction. Nothing here runs ehbt. Every case is checked: the properties the case exists
for (a call as last instruction, a DRAP FDE, a .plt stop, ...) and the call structure the
source defines. A case that fails its checks gets no expected file, and the script exits 1.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
# EHBT_CORES_OUT writes the cores elsewhere (a worktree whose cores/out is shared and read-only
# makes its new case there); the tests read cores/out.
OUT = os.environ.get("EHBT_CORES_OUT") or os.path.join(HERE, "out")
GDB_EXPECT = os.path.join(HERE, "gdb_expect.py")

CFLAGS = ["-O2", "-g", "-fomit-frame-pointer", "-Wall", "-Wextra"]
NO_UNWIND = ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fno-omit-frame-pointer"]

ARCHES = {
    "x86_64": dict(prefix="", qemu=None, sysroot=None, gdb="gdb", call=("call",)),
    "aarch64": dict(prefix="aarch64-linux-gnu-", qemu="qemu-aarch64",
                    sysroot="/usr/aarch64-linux-gnu",
                    gdb="gdb-multiarch", call=("bl",)),
    "s390x": dict(prefix="s390x-linux-gnu-", qemu="qemu-s390x", sysroot="/usr/s390x-linux-gnu",
                  gdb="gdb-multiarch", call=("brasl", "bras", "basr")),
    # 32-bit x86 goes through qemu-user too: kernels without 32-bit exec support (the
    # Firecracker/PVM guests CI runs on) cannot run it natively.
    # tdesc: see i386_linux_tdesc. The cross glibc's ld.so searches
    # /lib32 (it is amd64's multilib glibc), which is not in the sysroot: qemu would fall back
    # to the host's /lib32 (libc6-i386) or find no libc; LD_LIBRARY_PATH=/lib keeps the
    # guest in the sysroot.
    "i386": dict(prefix="i686-linux-gnu-", qemu="qemu-i386", sysroot="/usr/i686-linux-gnu",
                 gdb="gdb-multiarch", call=("call",), tdesc="i386_linux",
                 guest_env=["LD_LIBRARY_PATH=/lib"]),
}
# The arches every general case runs on; i386 has the subset below that exercises what
# differs for it (4-byte CFI, its two signal frame layouts, DRAP, threads).
BASE_ARCHES = ("x86_64", "aarch64", "s390x")
WITH_I386 = BASE_ARCHES + ("i386",)

# Frames GDB records past this are not recorded (the overflow case has thousands).
DEFAULT_MAX_FRAMES = 512


class Case:
    """One crash scenario: how to build it, run it, and what its crashing thread must show."""

    def __init__(self, name, sources, chain, signal, arches=BASE_ARCHES,
                 cflags=(), ldflags=(), mode="signal", post_build=None, checks=(), max_frames=None,
                 compare_frames=None, stop="outermost", stack_kb=None, qemu_cpu=None,
                 expect_cpu=None, note="", inline_chain=None, build_with=None):
        self.name = name
        self.sources = sources
        self.chain = chain  # fixture functions of the crashing thread, youngest first, contiguous
        self.signal = signal
        self.arches = arches
        self.cflags = list(cflags)
        self.ldflags = list(ldflags)
        self.mode = mode  # "signal": it crashes by itself; "gdb-plt": GDB stops it and gcores
        self.post_build = post_build
        self.checks = checks
        self.max_frames = max_frames or DEFAULT_MAX_FRAMES
        self.compare_frames = compare_frames
        self.stop = stop
        self.stack_kb = stack_kb
        self.qemu_cpu = qemu_cpu  # -cpu for the crash run (default: qemu's default, max)
        # {arch: -cpu} of a second run that GDB can read when it cannot read the crash run.
        self.expect_cpu = expect_cpu or {}
        self.note = note
        # GDB's frames of the crashing thread with the inlined ones (#28), youngest first,
        # contiguous: the inlining the case exists for (cores/make_line_cores.py).
        self.inline_chain = inline_chain
        # build_with(arch, case, exe): builds the executable instead of compile_program (a
        # program in another language: cores/make_line_cores.py's Rust case).
        self.build_with = build_with


class CaseError(Exception):
    pass


def run(cmd, check=True, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    kw.setdefault("text", True)
    proc = subprocess.run(cmd, **kw)
    if check and proc.returncode != 0:
        raise CaseError("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode, proc.stdout))
    return proc


def tool(arch, name):
    return ARCHES[arch]["prefix"] + name


# ---------------------------------------------------------------------------------------------
# ELF facts from binutils (independent of ehbt)

def nm_symbols(path, dynamic=False):
    """[(addr, size, type, name)] from nm; versions (@GLIBC_...) stripped."""
    cmd = ["nm", "-S", "--defined-only"] + (["-D"] if dynamic else []) + [path]
    proc = run(cmd, check=False)
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            addr, size, typ, name = parts
        elif len(parts) == 3:
            addr, typ, name = parts
            size = "0"
        else:
            continue
        try:
            out.append((int(addr, 16), int(size, 16), typ, name.split("@")[0]))
        except ValueError:
            continue
    return out


def symbol_address(path, name):
    for addr, size, _, n in nm_symbols(path):
        if n == name:
            return addr, size
    raise CaseError("%s: no symbol %s" % (path, name))


def fdes(arch, path):
    """[(lo, hi, [instruction lines])] from readelf --debug-dump=frames (.eh_frame and
    .debug_frame both)."""
    text = run([tool(arch, "readelf"), "--debug-dump=frames", path]).stdout
    result, cur = [], None
    for line in text.splitlines():
        m = re.search(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
        if m:
            cur = (int(m.group(1), 16), int(m.group(2), 16), [])
            result.append(cur)
        elif not line.strip():
            cur = None
        elif cur is not None:
            cur[2].append(line.strip())
    return result


def fde_for(arch, path, addr):
    return [f for f in fdes(arch, path) if f[0] <= addr < f[1]]


def disassemble(arch, path, symbol):
    text = run([tool(arch, "objdump"), "-d", "--no-show-raw-insn", "--disassemble=" + symbol,
                path]).stdout
    insns = []
    for line in text.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)(.*)$", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3).strip()))
    return insns


def build_id(arch, path):
    text = run([tool(arch, "readelf"), "-n", path], check=False).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", text)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------
# Per-case property checks: each raises CaseError when the binary does not have the property
# the case exists to exercise.

def check_noreturn(arch, exe, bins):
    insns = disassemble(arch, exe, "fx_noreturn_last")
    if not insns:
        raise CaseError("fx_noreturn_last not disassembled")
    addr, size = symbol_address(exe, "fx_noreturn_last")
    last = insns[-1]
    if last[1] not in ARCHES[arch]["call"] or "abort" not in last[2]:
        raise CaseError("last instruction of fx_noreturn_last is %s %s, not a call to abort"
                        % (last[1], last[2]))
    return "fx_noreturn_last [0x%x, 0x%x): last instruction `%s %s` at 0x%x" % (
        addr, addr + size, last[1], last[2], last[0])


def check_drap(arch, exe, bins):
    addr, _ = symbol_address(exe, "fx_drap_realign")
    found = fde_for(arch, exe, addr)
    if not found:
        raise CaseError("no FDE for fx_drap_realign")
    has_expr = any("DW_CFA_def_cfa_expression" in i for i in found[0][2])
    if arch in ("x86_64", "i386") and not has_expr:
        raise CaseError("fx_drap_realign's FDE has no DW_CFA_def_cfa_expression (no DRAP)")
    return "fx_drap_realign FDE %s DW_CFA_def_cfa_expression" % ("uses" if has_expr else
                                                                 "does not use (no DRAP here)")


def check_nounwind(arch, exe, bins):
    for fn in ("fx_nounwind_crash", "fx_nounwind_outer"):
        addr, _ = symbol_address(exe, fn)
        if fde_for(arch, exe, addr):
            raise CaseError("%s is covered by an FDE" % fn)
    addr, _ = symbol_address(exe, "fx_unwind_caller")
    if not fde_for(arch, exe, addr):
        raise CaseError("fx_unwind_caller has no FDE")
    # The crashing function must link itself into the frame chain before it crashes.
    text = " | ".join("%s %s" % (i[1], i[2]) for i in disassemble(arch, exe, "fx_nounwind_crash"))
    setup = {"x86_64": ("push %rbp", "mov %rsp,%rbp"), "aarch64": ("stp x29, x30", "mov x29, sp"),
             "s390x": ("stmg",)}[arch]
    if not all(s in text for s in setup):
        raise CaseError("fx_nounwind_crash sets up no frame pointer: " + text)
    return "fx_nounwind_crash/fx_nounwind_outer: no FDE in .eh_frame or .debug_frame"


def check_plt(arch, exe, bins):
    text = run([tool(arch, "objdump"), "-d", "-j", ".plt", exe]).stdout
    m = re.search(r"^([0-9a-f]+) <getppid@plt>:", text, re.M)
    if not m:
        raise CaseError("no getppid slot in .plt")
    dyn = run([tool(arch, "readelf"), "-d", exe]).stdout
    if "BIND_NOW" in dyn or re.search(r"FLAGS.*\bNOW\b", dyn):
        raise CaseError("binary binds now; the .plt slot would not be lazy")
    return "getppid@plt slot at 0x%s in .plt, lazy binding" % m.group(1)


def check_static(arch, exe, bins):
    hdr = run([tool(arch, "readelf"), "-lh", exe]).stdout
    if "INTERP" in hdr:
        raise CaseError("has a PT_INTERP")
    typ = re.search(r"Type:\s+(\S+)", hdr).group(1)
    return "no PT_INTERP, type %s" % typ


def check_staticpie(arch, exe, bins):
    note = check_static(arch, exe, bins)
    if "DYN" not in note:
        raise CaseError("static-pie is not ET_DYN: " + note)
    return note


def check_stripped(arch, exe, bins):
    if nm_symbols(exe):
        raise CaseError("the stripped binary still has .symtab symbols")
    if build_id(arch, exe) != build_id(arch, bins["unstripped"]):
        raise CaseError("stripped and unstripped build-ids differ")
    return "no .symtab; unstripped copy %s has the same build-id" % bins["unstripped"]


def check_pac(arch, exe, bins):
    insns = disassemble(arch, exe, "fx_pac_middle")
    if not any(i[1] in ("paciasp", "pacibsp") for i in insns):
        raise CaseError("fx_pac_middle does not sign its return address")
    addr, _ = symbol_address(exe, "fx_pac_middle")
    found = fde_for(arch, exe, addr)
    if not found or not any("negate_ra_state" in i or "window_save" in i for i in found[0][2]):
        raise CaseError("fx_pac_middle's FDE has no DW_CFA_AARCH64_negate_ra_state")
    return "fx_pac_middle: paciasp + DW_CFA_AARCH64_negate_ra_state"


# ---------------------------------------------------------------------------------------------
# Cases

def _strip(arch, exe, bins):
    unstripped = exe + ".unstripped"
    shutil.copy2(exe, unstripped)
    run([tool(arch, "strip"), "-s", exe])
    bins["unstripped"] = unstripped
    bins["gdb_exe"] = unstripped


def _drop_debug_frame(arch, exe, bins):
    # gcc emits .debug_frame for -g code without unwind tables; removing it leaves those
    # functions with no CFI at all, which is the point of the case.
    run([tool(arch, "objcopy"), "--remove-section=.debug_frame", exe])


def _buildid_variant(arch, exe, bins):
    """The wrong-build-id fixture: a variant build at the same path under wrongroot/."""
    variant_dir = os.path.join(OUT, arch, "wrongroot") + os.path.dirname(exe)
    os.makedirs(variant_dir, exist_ok=True)
    variant = os.path.join(variant_dir, os.path.basename(exe))
    compile_program(arch, CASES["buildid"], variant, extra=["-DFX_VARIANT=1"])
    if build_id(arch, variant) == build_id(arch, exe):
        raise CaseError("variant has the same build-id")
    bins["variant"] = variant


def _split_debug(arch, exe, bins):
    """The Debian -dbgsym layout: the binary stripped, its symbols and .debug_frame only in a
    separate debug file, installed under debugroot/usr/lib/debug/.build-id/xx/rest.debug; a
    copy named by the binary's .gnu_debuglink is kept in debuglink/ for the debuglink tests
    (not next to the binary, so that the build-id lookup is tested alone)."""
    unstripped = exe + ".unstripped"
    shutil.copy2(exe, unstripped)
    linkdir = os.path.join(OUT, arch, "debuglink")
    os.makedirs(linkdir, exist_ok=True)
    dbg = os.path.join(linkdir, os.path.basename(exe) + ".debug")
    run([tool(arch, "objcopy"), "--only-keep-debug", exe, dbg])
    run([tool(arch, "strip"), "-s", exe])
    run([tool(arch, "objcopy"), "--add-gnu-debuglink=" + dbg, exe])
    bid = build_id(arch, exe)
    if not bid:
        raise CaseError("no build-id")
    root = os.path.join(OUT, arch, "debugroot")
    shutil.rmtree(root, ignore_errors=True)
    dest = os.path.join(root, "usr/lib/debug/.build-id", bid[:2], bid[2:] + ".debug")
    os.makedirs(os.path.dirname(dest))
    shutil.copy2(dbg, dest)
    bins.update(unstripped=unstripped, gdb_exe=unstripped, symbol_file=unstripped,
                debug_sysroot=root, debuglink_file=dbg)


def _minidebuginfo(arch, exe, bins):
    """Fedora's MiniDebugInfo: the binary stripped, and an xz-compressed ELF holding a .symtab
    of the functions .dynsym lacks added as .gnu_debugdata."""
    unstripped = exe + ".unstripped"
    shutil.copy2(exe, unstripped)
    dynamic = {n for _, _, _, n in nm_symbols(exe, dynamic=True)}
    funcs = sorted({n for _, _, t, n in nm_symbols(exe) if t in "Tt" and n not in dynamic})
    keep = exe + ".keep"
    with open(keep, "w") as f:
        f.write("\n".join(funcs) + "\n")
    mini = exe + ".mini"
    run([tool(arch, "objcopy"), "--only-keep-debug", exe, mini + ".full"])
    run([tool(arch, "objcopy"), "-S", "--remove-section", ".gdb_index", "--remove-section",
         ".comment", "--keep-symbols=" + keep, mini + ".full", mini])
    run(["xz", "-f", mini])
    run([tool(arch, "strip"), "-s", exe])
    run([tool(arch, "objcopy"), "--add-section", ".gnu_debugdata=" + mini + ".xz", exe])
    for leftover in (keep, mini + ".full", mini + ".xz"):
        os.unlink(leftover)
    bins.update(unstripped=unstripped, gdb_exe=unstripped, symbol_file=unstripped)


def check_debugfile(arch, exe, bins):
    for fn in ("fx_level3", "fx_level2", "fx_level1"):
        addr, _ = symbol_address(bins["unstripped"], fn)
        if fde_for(arch, exe, addr):
            raise CaseError("%s has an FDE in the stripped binary" % fn)
        # strip keeps .eh_frame: an FDE the unstripped build has lies in .debug_frame.
        if not fde_for(arch, bins["unstripped"], addr):
            raise CaseError("%s has no FDE in the unstripped build" % fn)
    sections = run([tool(arch, "readelf"), "-SW", exe]).stdout
    if ".symtab" in sections or ".gnu_debuglink" not in sections:
        raise CaseError("the stripped binary has a .symtab or no .gnu_debuglink")
    return "fx_* described by .debug_frame only, in the separate debug file"


def check_minidebug(arch, exe, bins):
    sections = run([tool(arch, "readelf"), "-SW", exe]).stdout
    if ".gnu_debugdata" not in sections or ".symtab" in sections:
        raise CaseError("no .gnu_debugdata, or a .symtab left")
    return "stripped; fx_* named only by the .gnu_debugdata .symtab"


def check_pltcrash(arch, exe, bins):
    text = run([tool(arch, "objdump"), "-d", "-j", ".plt", exe]).stdout
    if not re.search(r"^[0-9a-f]+ <getppid@plt>:", text, re.M):
        raise CaseError("no getppid stub in .plt")
    return "getppid's GOT page made unreadable: the fault is in the .plt stub"


def check_datamaps(arch, exe, bins):
    out = run([tool(arch, "nm"), "-D", "--undefined-only", exe]).stdout
    dyn = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    wanted = {"setlocale", "iconv_open", "mmap", "unlink", "shm_open", "shmget", "shmat"}
    if not wanted <= dyn:
        raise CaseError("does not call " + ", ".join(sorted(wanted - dyn)))
    return "maps a locale, gconv-modules.cache, a deleted data file, POSIX/SysV shm, /dev/zero"


NATIVE_CHAIN = ["fx_level3", "fx_level2", "fx_level1", "main"]

CASE_LIST = [
    Case("chain", ["chain.c"], NATIVE_CHAIN, 11, arches=WITH_I386,
         note="plain PIE, null write three calls deep"),
    Case("coroutine", ["coroutine.c"], ["fx_co_crash", "fx_co_body"], 11,
         arches=("x86_64",), stop="early",
         note="makecontext coroutine on a .bss stack; __start_context (planted, not called) "
              "is outermost"),
    Case("noreturn", ["noreturn.c"], ["fx_noreturn_last", "fx_noreturn_caller", "main"], 6,
         checks=[check_noreturn], arches=WITH_I386,
         note="return address of a call to abort() lies past fx_noreturn_last's end"),
    Case("sighandler", ["sighandler.c"],
         ["fx_handler_crash", "fx_handler", "<signal handler called>", "fx_interrupted",
          "fx_sig_caller", "main"], 11,
         expect_cpu={"aarch64": "max,sve=off"}, arches=WITH_I386,
         note="SIGSEGV in a SIGUSR1 handler; through the signal trampoline into fx_interrupted"
              " (a handler without SA_SIGINFO: i386 gets the old sigframe and __restore)"),
    Case("siginfo", ["sighandler.c"],
         ["fx_handler_crash", "fx_handler", "fx_info_handler", "<signal handler called>",
          "fx_interrupted", "fx_sig_caller", "main"], 11, cflags=["-DFX_SIGINFO=1"],
         arches=("i386",),
         note="sighandler with an SA_SIGINFO handler: i386 gets the rt_sigframe and "
              "__restore_rt (elsewhere there is only that one frame layout)"),
    Case("threads", ["threads.c"], ["fx_main_abort", "main"], 6, ldflags=["-pthread"],
         cflags=["-pthread"], arches=WITH_I386,
         note="main aborts while 4 threads block in read, nanosleep, futex, poll"),
    Case("drap", ["drap.c"], ["fx_drap_callee", "fx_drap_realign", "fx_drap_caller", "main"], 11,
         checks=[check_drap], arches=WITH_I386,
         note="crash in the callee of a DRAP-realigned function"),
    Case("plt", ["plt.c"], ["getppid@plt", "fx_plt_caller", "fx_plt_outer", "main"], 5,
         arches=("x86_64",), mode="gdb-plt", ldflags=["-Wl,-z,lazy"], checks=[check_plt],
         note="stopped by GDB on the first instruction of a lazy .plt slot, core by gcore"),
    Case("terminate", ["terminate.cc"], ["fx_throw_it", "fx_throw_caller", "main"], 6,
         note="uncaught C++ exception -> std::terminate -> abort"),
    Case("static", ["chain.c"], NATIVE_CHAIN, 11, ldflags=["-static"], checks=[check_static],
         note="static executable"),
    Case("staticpie", ["chain.c"], NATIVE_CHAIN, 11, ldflags=["-static-pie"],
         arches=("x86_64", "aarch64"),  # s390x glibc has no static-pie (no rcrt1.o)
         checks=[check_staticpie], note="static-pie executable"),
    Case("stripped", ["chain.c"], NATIVE_CHAIN, 11, post_build=_strip, checks=[check_stripped],
         note="stripped executable; frames from GDB on the unstripped copy"),
    Case("nounwind", [("nounwind.c", []), ("nounwind_fp.c", NO_UNWIND)],
         ["fx_nounwind_crash", "fx_nounwind_outer", "fx_unwind_caller", "main"], 11,
         post_build=_drop_debug_frame, checks=[check_nounwind],
         note="two functions without CFI (frame pointer only) called from normal code"),
    Case("overflow", ["overflow.c"], ["fx_recurse"] * 50, 11, max_frames=60, compare_frames=50,
         stop="any", stack_kb=256, note="runaway recursion until the stack overflows"),
    Case("smashed", ["smashed.c"], ["fx_smash_crash", "fx_smash_victim"], 11,
         stop="early", compare_frames=2,
         note="fx_smash_victim's saved return address is overwritten with 0x4141414141414141"),
    Case("buildid", ["chain.c"], NATIVE_CHAIN, 11, post_build=None,
         note="crashed, then its executable moved to bin/buildid-good/; wrongroot/ holds a "
              "rebuilt variant (another build-id) at the original path"),
    Case("debugfile", ["chain.c"], NATIVE_CHAIN, 11,
         cflags=["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
         post_build=_split_debug, checks=[check_debugfile],
         note="built without unwind tables, stripped: .debug_frame and .symtab only in a "
              "separate debug file (build-id path under debugroot/, and by .gnu_debuglink)"),
    Case("minidebug", ["chain.c"], NATIVE_CHAIN, 11, post_build=_minidebuginfo,
         checks=[check_minidebug], note="stripped, with MiniDebugInfo (.gnu_debugdata)"),
    Case("pltcrash", ["pltcrash.c"],
         ["getppid@plt", "fx_pltcrash_caller", "fx_pltcrash_outer", "main"], 11,
         ldflags=["-Wl,-z,lazy"], checks=[check_pltcrash],
         note="SIGSEGV inside getppid's .plt stub (its GOT slot made unreadable)"),
    Case("datamaps", ["datamaps.c"], ["fx_datamaps_level2", "fx_datamaps_level1", "main"], 11,
         arches=("x86_64",), checks=[check_datamaps],
         note="data files mapped (locale, caches, shm, /dev/zero): none is a module"),
    Case("pac", ["pac.c"], ["fx_pac_crash", "fx_pac_middle", "fx_pac_outer", "main"], 11,
         arches=("aarch64",), cflags=["-mbranch-protection=standard"], checks=[check_pac],
         qemu_cpu="max", expect_cpu={"aarch64": "max,pauth=off"},
         note="pointer authentication: saved return addresses carry a PAC"),
]
CASES = {c.name: c for c in CASE_LIST}


# ---------------------------------------------------------------------------------------------
# Building

def compile_program(arch, case, exe, extra=(), link_extra=()):
    prefix = ARCHES[arch]["prefix"]
    objs = []
    is_cxx = any(str(s if isinstance(s, str) else s[0]).endswith(".cc") for s in case.sources)
    for src in case.sources:
        name, flags = (src, []) if isinstance(src, str) else src
        lang_cc = prefix + ("g++" if name.endswith(".cc") else "gcc")
        obj = exe + "." + os.path.splitext(name)[0] + ".o"
        arch_flags = []
        if arch == "s390x" and flags is NO_UNWIND:
            arch_flags = ["-mbackchain"]  # s390x's frame chain is the back chain
        run([lang_cc] + CFLAGS + case.cflags + list(flags) + arch_flags + list(extra) +
            ["-c", os.path.join(PROGRAMS, name), "-o", obj])
        objs.append(obj)
    link = prefix + ("g++" if is_cxx else "gcc")
    run([link] + CFLAGS + case.ldflags + list(link_extra) + objs + ["-o", exe])
    for obj in objs:
        os.unlink(obj)


def build(arch, case):
    bindir = os.path.join(OUT, arch, "bin")
    os.makedirs(bindir, exist_ok=True)
    exe = os.path.join(bindir, case.name)
    (case.build_with or compile_program)(arch, case, exe)
    bins = {"exe": exe, "gdb_exe": exe}
    if case.post_build:
        case.post_build(arch, exe, bins)
    notes = [chk(arch, exe, bins) for chk in case.checks]
    return bins, notes


# ---------------------------------------------------------------------------------------------
# Running and recording

def _limits(stack_kb=None, coredump_filter=None):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if stack_kb:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_kb * 1024, stack_kb * 1024))
        if coredump_filter is not None:
            with open("/proc/self/coredump_filter", "w") as f:
                f.write(coredump_filter)
    return apply


def kernel_writes_cores_to_cwd():
    try:
        pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    except OSError:
        return False
    return not pattern.startswith("|") and "/" not in pattern and pattern.startswith("core")


def gdb_record_cmds(raw, max_frames):
    return ["-x", GDB_EXPECT, "-ex", "thread apply all bt %d" % max_frames,
            "-ex", "ehbt-expect %s %d" % (raw, max_frames)]


def fresh_rundir(arch, name):
    rundir = os.path.join(OUT, arch, "run", name)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    return rundir


def run_native(arch, case, bins, core, raw, text):
    exe = bins["exe"]
    rundir = fresh_rundir(arch, case.name)
    if case.mode == "gdb-plt":
        # Stop on the first instruction of getppid's .plt slot on its first call, then gcore.
        # The slot's address comes from GDB's own .plt symbols; check_plt matched it against
        # objdump, and the post-processing checks frame 0 is at offset 0 of that slot.
        proc = run(["gdb", "-batch", "-nx", "-ex", "set pagination off",
                    "-ex", "set startup-with-shell off", "-ex", "starti",
                    "-ex", "break *'getppid@plt'", "-ex", "continue",
                    "-ex", "gcore " + core, "-ex", "kill", exe], cwd=rundir, check=False,
                   preexec_fn=_limits())
        if not os.path.exists(core):
            raise CaseError("gcore wrote no core:\n" + proc.stdout)
    elif kernel_writes_cores_to_cwd():
        run([exe], cwd=rundir, check=False, preexec_fn=_limits(case.stack_kb),
            stdin=subprocess.DEVNULL)
        found = glob.glob(os.path.join(rundir, "core")) + glob.glob(os.path.join(rundir, "core.*"))
        if len(found) != 1:
            raise CaseError("expected one core in %s, found %s" % (rundir, found))
        shutil.move(found[0], core)
    else:
        # core_pattern pipes cores elsewhere: let GDB run it and write the core itself.
        run(["gdb", "-batch", "-nx", "-ex", "set pagination off",
             "-ex", "handle SIGUSR1 nostop noprint pass", "-ex", "run",
             "-ex", "gcore " + core, "-ex", "kill", exe], cwd=rundir, check=False,
            preexec_fn=_limits(case.stack_kb))
        if not os.path.exists(core):
            raise CaseError("gdb gcore wrote no core")
    proc = run(["gdb", "-batch", "-nx", "-ex", "set pagination off"] +
               gdb_record_cmds(raw, case.max_frames) + [bins["gdb_exe"], core], check=False)
    with open(text, "w") as f:
        f.write(proc.stdout)
    shutil.rmtree(rundir, ignore_errors=True)


def i386_linux_tdesc():
    """A GDB target description for qemu-i386's gdbstub that says Linux. qemu 7.2 describes
    its registers without the org.gnu.gdb.i386.linux feature (orig_eax); GDB 13 then sets up
    its i386 GNU/Linux support only half: no shared library list (no libc CFI or symbols) and
    no sigtramp recogniser, so the frames past libc and the signal trampoline come out
    wrong. This is qemu's register list, in qemu's order (the 'g' packet layout), plus
    orig_eax after it (qemu has no such register; GDB then sees it unavailable)."""
    regs = ["eax:int32", "ecx:int32", "edx:int32", "ebx:int32", "esp:data_ptr", "ebp:data_ptr",
            "esi:int32", "edi:int32", "eip:code_ptr", "eflags:int32"]
    regs += [r + ":int32" for r in ("cs", "ss", "ds", "es", "fs", "gs", "fs_base", "gs_base",
                                    "k_gs_base", "cr0", "cr2", "cr3", "cr4", "cr8", "efer")]
    regs += ["st%d:i387_ext" % i for i in range(8)]
    regs += [r + ":int" for r in ("fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg", "fooff",
                                  "fop")]
    regs += ["xmm%d:uint128" % i for i in range(8)] + ["mxcsr:int"]
    bits = {"i387_ext": 80, "uint128": 128}

    def reg(n, spec):
        name, typ = spec.split(":")
        return '    <reg name="%s" bitsize="%d" type="%s" regnum="%d"/>' % (
            name, bits.get(typ, 32), typ, n)

    lines = ['<?xml version="1.0"?>', '<!DOCTYPE target SYSTEM "gdb-target.dtd">', "<target>",
             "  <architecture>i386</architecture>", "  <osabi>GNU/Linux</osabi>",
             '  <feature name="org.gnu.gdb.i386.core">']
    lines += [reg(n, spec) for n, spec in enumerate(regs)]
    lines += ["  </feature>", '  <feature name="org.gnu.gdb.i386.linux">',
              reg(len(regs), "orig_eax:int"), "  </feature>", "</target>"]
    path = os.path.join(OUT, "i386", "qemu-i386-linux.xml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


TDESCS = {"i386_linux": i386_linux_tdesc}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_qemu_live(arch, case, bins, raw, text, cpu=None, want_core=True):
    """Runs the guest under qemu's gdbstub, records GDB's frames at the crash signal, then lets
    the signal through so qemu writes the core. Returns the core path (in the run dir)."""
    a = ARCHES[arch]
    rundir = fresh_rundir(arch, case.name + ("" if want_core else ".second"))
    port = free_port()
    qemu = [a["qemu"], "-L", a["sysroot"], "-g", str(port)]
    if cpu:
        qemu += ["-cpu", cpu]
    if case.stack_kb:
        qemu += ["-s", str(case.stack_kb * 1024)]
    for env in a.get("guest_env", ()):
        qemu += ["-E", env]
    # coredump_filter 0: qemu re-raises the signal on itself after writing the guest core;
    # this keeps the host core of qemu (deleted below) tiny.
    guest = subprocess.Popen(qemu + [bins["exe"]], cwd=rundir, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=_limits(coredump_filter="0"))
    try:
        gdb_cmd = [a["gdb"], "-batch", "-nx", "-ex", "set pagination off",
                   "-ex", "set sysroot " + a["sysroot"], "-ex", "set tcp connect-timeout 30"]
        if a.get("tdesc"):
            gdb_cmd += ["-ex", "set tdesc filename " + TDESCS[a["tdesc"]]()]
        gdb_cmd += ["-ex", "handle SIGUSR1 nostop noprint pass", "-ex", "file " + bins["gdb_exe"],
                   "-ex", "target remote 127.0.0.1:%d" % port, "-ex", "continue"]
        gdb_cmd += gdb_record_cmds(raw, case.max_frames)
        gdb_cmd += ["-ex", "continue" if want_core else "kill"]
        proc = run(gdb_cmd, check=False, timeout=300)
        with open(text, "w") as f:
            f.write(proc.stdout)
        guest.wait(timeout=60)
    finally:
        if guest.poll() is None:
            guest.kill()
            guest.wait()
    cores = glob.glob(os.path.join(rundir, "qemu_*.core"))
    for host_core in glob.glob(os.path.join(rundir, "core*")):
        os.unlink(host_core)  # qemu's own core, not the guest's
    if want_core and len(cores) != 1:
        raise CaseError("qemu (exit %s) wrote %d guest cores in %s; GDB said:\n%s" % (
            guest.returncode, len(cores), rundir, "\n".join(proc.stdout.splitlines()[-15:])))
    return cores[0] if cores else None


def run_qemu(arch, case, bins, core, raw, text):
    found = run_qemu_live(arch, case, bins, raw, text, cpu=case.qemu_cpu)
    shutil.move(found, core)
    shutil.rmtree(os.path.dirname(found), ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# From GDB's raw record to the expected file

def demangle(names):
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return []
    out = run(["c++filt"] + mangled).stdout.split("\n")
    return [o for o in out if o]


def debug_file_for(arch, path):
    bid = build_id(arch, path)
    if not bid:
        return None
    cand = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    return cand if os.path.exists(cand) else None


class SymbolTables:
    """Acceptable ELF symbol names for a frame, from nm on the module file itself and on its
    separate debug file: GDB's minimal symbol and every alias at the same address."""

    def __init__(self, arch, symbol_files=None):
        self.arch = arch
        # {module file: file nm reads instead}: a stripped binary whose names live elsewhere
        # (a separate debug file, MiniDebugInfo) is checked against its unstripped build.
        self.symbol_files = symbol_files or {}
        self.cache = {}
        self.demangled = {}

    def mangled(self, table):
        """{demangled: mangled} for the C++ names of a table (computed once per table)."""
        key = id(table)
        if key not in self.demangled:
            names = sorted({n for _, _, _, n in table if n.startswith("_Z")})
            out = run(["c++filt"], input="\n".join(names) + "\n").stdout.split("\n")
            self.demangled[key] = (table, dict(zip(out, names)))
        return self.demangled[key][1]

    def tables(self, path):
        if path not in self.cache:
            src = self.symbol_files.get(path, path)
            own = nm_symbols(src) + nm_symbols(path, dynamic=True)
            dbg = debug_file_for(self.arch, path)
            self.cache[path] = (own, nm_symbols(dbg) if dbg else [])
        return self.cache[path]

    @staticmethod
    def gdb_to_elf_name(name):
        """GDB shows a gcc clone `main.cold` as `main[cold]` (and C++ clones as
        `f() [clone .cold]`); the symbol table holds `main.cold`."""
        m = re.match(r"^(.*?)\s*\[clone (\.[\w.]+)\]$", name)
        if m:
            return m.group(1) + m.group(2)
        m = re.match(r"^(.*)\[(\w+)\]$", name)
        if m:
            return m.group(1) + "." + m.group(2)
        return name

    @staticmethod
    def aliases(table, name, offset):
        """(names at the address of `name` that cover `offset`, whether it has a size)."""
        hits = [(a, s) for a, s, _, n in table if n == name]
        for addr, size in hits:
            if size and offset >= size:
                continue  # GDB's symbol does not cover the address in this table
            return sorted({n for a, s, _, n in table if a == addr and (s or not size)}), size > 0
        return [], False

    def names(self, path, frame):
        name, off = frame.get("min_symbol"), frame.get("min_symbol_offset") or 0
        if not name or path is None or not os.path.exists(path):
            return ([name] if name else []), False
        if name.endswith("@plt"):
            # No symbol table holds PLT stubs; ehbt names them as GDB does (from .rela.plt).
            return [name], True
        name = self.gdb_to_elf_name(name)
        own, dbg = self.tables(path)
        if name[:2] != "_Z" and ("(" in name or "::" in name):
            # GDB shows C++ minimal symbols demangled (and Rust's legacy-mangled ones, without
            # a parameter list: `std::rt::lang_start::{{closure}}::h0123...`); find the mangled
            # name it came from.
            name = self.mangled(own + dbg).get(name, name)
        own_names, sized = self.aliases(own, name, off)
        dbg_names, _ = self.aliases(dbg, name, off)
        names = sorted(set(own_names + dbg_names))
        names += demangle(names)
        # A symbol without a size (s390x's _start) covers nothing for certain: GDB takes the
        # nearest one before the pc, an ELF-symbol lookup may rightly say none. Not required.
        return names, bool(own_names) and sized


def module_basenames(path):
    if path is None:
        return None, []
    if path == "[vdso]":
        return "[vdso]", ["[vdso]", "linux-vdso.so.1", "linux-vdso64.so.1", "linux-vdso.so"]
    real = os.path.realpath(path)
    names = sorted({os.path.basename(path), os.path.basename(real)})
    return os.path.basename(real), names


def expected_frames(arch, raw_frames, bins, syms, sysroot):
    frames = []
    for i, f in enumerate(raw_frames):
        if "error" in f:
            break
        mod = f["module"]
        if mod and bins.get("gdb_exe") != bins["exe"] and mod == bins["gdb_exe"]:
            mod = bins["exe"]  # GDB read the unstripped copy; the core names the stripped file
        host_file = mod if mod and mod != "[vdso]" else None
        if host_file and bins.get("moved_exe") and host_file == bins["exe"]:
            host_file = bins["moved_exe"]
        names, required = syms.names(host_file, f)
        base, aliases = module_basenames(mod)
        core_path = mod
        if sysroot and mod and mod.startswith(sysroot + "/"):
            core_path = mod[len(sysroot):]
        frames.append({
            "index": i,
            "pc": f["pc"],
            "function": f["name"],
            "type": f["type"],
            "module": base,
            "module_aliases": aliases,
            "module_file": host_file,
            "module_core_path": core_path,
            "symbols": names,
            "symbol_required": required,
            # GDB's source lines (#28): absent in records made before gdb_expect kept them.
            "location": f.get("location"),
            "inlined": f.get("inlined", []),
        })
    return frames


def frame_names(frames):
    return ["<signal handler called>" if f["type"] == "sigtramp" else f["function"]
            for f in frames]


def gdb_frame_names(frames):
    """The crashing thread as GDB numbers it: each physical frame after its inlined calls."""
    names = []
    for f in frames:
        names += [i["function"] for i in f.get("inlined", [])]
        names.append("<signal handler called>" if f["type"] == "sigtramp" else f["function"])
    return names


def verify_inline_chain(case, frames):
    names = gdb_frame_names(frames)
    chain = case.inline_chain
    if not any(names[i:i + len(chain)] == chain for i in range(len(names))):
        raise CaseError("GDB's crashing thread with inlined frames %s does not contain %s" %
                        (names, chain))
    return "GDB shows the inlined frames %s" % " <- ".join(chain)


def verify_chain(case, frames):
    """The crashing thread must show the case's fixture functions, in order, contiguous."""
    names = frame_names(frames)
    chain = case.chain
    for start in range(len(names)):
        if names[start:start + len(chain)] == chain:
            return start
    raise CaseError("GDB's crashing thread %s does not contain the call chain %s" %
                    (names, chain))


# The system call an i386 case's signal trampoline must make: the old sigframe returns through
# sigreturn (119), the rt_sigframe through rt_sigreturn (173).
I386_SIGRETURN = {"sighandler": 119, "siginfo": 173}


def check_i386_sigreturn(arch, case, frames):
    """The trampoline frame GDB shows is glibc's restorer for the frame layout the case is
    for: the `mov $NR,%eax` in its disassembly names the system call. The restorer is a local
    symbol (not in the cross libc's .dynsym), so it is found by its offset in libc, using the
    load bias of a libc frame GDB named."""
    tramp = [f for f in frames if f["type"] == "sigtramp"]
    named = [f for f in frames if f["module_file"] and f["module_file"] == (
        tramp[0]["module_file"] if tramp else None) and f["symbols"]]
    if not tramp or not named:
        raise CaseError("no trampoline frame in libc, or no named libc frame for its bias")
    lib, ref = tramp[0]["module_file"], named[0]
    addrs = [a for a, _, _, n in nm_symbols(lib) + nm_symbols(lib, dynamic=True)
             if n == ref["symbols"][0]]
    if not addrs:
        raise CaseError("%s: no address for %s" % (lib, ref["symbols"][0]))
    addr = addrs[0]
    raw = json.load(open(case_raw_path(arch, case)))
    off = [f["min_symbol_offset"] for t in raw["threads"] for f in t["frames"]
           if f.get("pc") == ref["pc"]][0]
    lookup = int(ref["pc"], 16) - (0 if ref["index"] == 0 else 1)
    bias = lookup - off - addr
    pc = int(tramp[0]["pc"], 16) - bias
    text = run([tool(arch, "objdump"), "-d", "--start-address=0x%x" % pc,
                "--stop-address=0x%x" % (pc + 8), lib]).stdout
    want = "mov    $0x%x,%%eax" % I386_SIGRETURN[case.name]
    if want not in text:
        raise CaseError("the trampoline at %s+0x%x does not make system call %d:\n%s" % (
            lib, pc, I386_SIGRETURN[case.name], text))
    return "trampoline at libc+0x%x makes system call %d" % (pc, I386_SIGRETURN[case.name])


def case_raw_path(arch, case):
    return os.path.join(OUT, arch, case.name + ".raw.json")


def finish(arch, case, bins, raw_path, core, text_path, notes, source="gdb", extra_note=""):
    raw = json.load(open(raw_path))
    a = ARCHES[arch]
    syms = SymbolTables(arch, {bins["exe"]: bins["symbol_file"]} if bins.get("symbol_file")
                        else None)
    threads = []
    for t in raw["threads"]:
        frames = expected_frames(arch, t["frames"], bins, syms, a["sysroot"])
        threads.append({
            "tid": t["tid"],
            "crashing": t["selected"],
            "frames": frames,
            "stop": case.stop,
            "compare_frames": case.compare_frames,
            "gdb_stop": t["gdb_stop"],
        })
    crashing = [t for t in threads if t["crashing"]]
    if len(crashing) != 1:
        raise CaseError("GDB selected %d threads" % len(crashing))
    ct = crashing[0]
    if case.name == "nounwind":
        names = frame_names(ct["frames"])
        if "fx_nounwind_crash" in names and "fx_nounwind_outer" in names:
            lo, hi = names.index("fx_nounwind_crash"), names.index("fx_nounwind_outer")
            bogus = ct["frames"][lo + 1:hi]
            if bogus and all(f["function"] is None for f in bogus):
                # GDB's amd64 prologue analyser expects `mov %rsp,%rbp` right after
                # `push %rbp`; gcc scheduled other instructions between them, so GDB misreads
                # fx_nounwind_crash's frame and shows stack words as frames until it finds
                # the chain again. By construction those are not frames (checked below).
                ct["frames"] = ct["frames"][:lo + 1] + ct["frames"][hi:]
                for i, f in enumerate(ct["frames"]):
                    f["index"] = i
                source = "construction"
                extra_note = ("GDB shows %d bogus frames (%s) between fx_nounwind_crash and "
                              "fx_nounwind_outer (its prologue analyser misreads the "
                              "scheduled prologue); dropped, and every caller pc checked to "
                              "follow its call instruction" % (
                                  len(bogus), ", ".join(f["pc"] for f in bogus)))
        check_return_addresses(arch, bins, raw_path, ct["frames"], case.chain)
    start = verify_chain(case, ct["frames"])
    case_notes = list(notes)
    if case.inline_chain:
        case_notes.append(verify_inline_chain(case, ct["frames"]))
    if arch == "i386" and case.name in I386_SIGRETURN:
        case_notes.append(check_i386_sigreturn(arch, case, ct["frames"]))

    if case.stop == "outermost":
        for t in threads:
            last = t["frames"][-1]["function"] if t["frames"] else None
            if t["gdb_stop"] != "outermost":
                raise CaseError("GDB did not reach the outermost frame of thread %s: %s"
                                % (t["tid"], t["gdb_stop"]))
            # None: the cross libcs have no symbols for their thread entry (thread_start).
            # __start_context: where makecontext's coroutines return (glibc ends it).
            if last not in ("_start", "clone3", "clone", "__clone", "thread_start",
                            "__thread_start", "__clone3", "__start_context", None):
                raise CaseError("thread %s ends in %s" % (t["tid"], last))
    if case.name == "plt":
        f0 = raw["threads"][0]["frames"][0]
        if not (f0["min_symbol"] == "getppid@plt" and f0["min_symbol_offset"] == 0 and
                f0["section"] == ".plt"):
            raise CaseError("frame 0 is not the first byte of getppid@plt: %s" % f0)
        case_notes.append("frame 0 at getppid@plt+0 in .plt")
    if case.name == "smashed":
        # By construction the walk is good up to fx_smash_victim; its return address is
        # garbage. GDB shows the garbage as one more frame and stops; that frame is dropped.
        keep = start + len(case.chain)
        dropped = ct["frames"][keep:]
        if not dropped or int(dropped[0]["pc"], 16) != 0x4141414141414141:
            raise CaseError("the frame after fx_smash_victim is not the garbage value: %s"
                            % dropped[:1])
        ct["frames"] = ct["frames"][:keep]
        ct["compare_frames"] = keep
        ct["garbage_pc"] = "0x4141414141414141"
        source = "construction"
        extra_note = ("frames up to fx_smash_victim as GDB shows them (they match the known call "
                      "structure); GDB then shows the garbage return address 0x4141414141414141 as "
                      "a frame, which is not a frame: expected stop is any non-outermost reason")
    if case.name == "coroutine":
        # By construction: fx_co_crash, fx_co_body, then the return address makecontext planted
        # (__start_context in libc: a function's first instruction). What lies past it is the
        # coroutine's .bss, not frames (GDB without libc's debug info shows them); this libc's
        # __start_context CFI does not end the walk, so the expected stop is a non-outermost one.
        keep = start + len(case.chain) + 1
        planted = ct["frames"][keep - 1:keep]
        if not planted or "libc.so.6" not in planted[0]["module_aliases"]:
            raise CaseError("the frame after fx_co_body is not in libc: %s" % planted)
        ct["frames"] = ct["frames"][:keep]
        ct["compare_frames"] = keep
        ct["garbage_pc"] = "0x0"
        source = "construction"
        extra_note = ("frames up to makecontext's planted return address (__start_context) as "
                      "GDB shows them; GDB then reads the coroutine's .bss as frames, which "
                      "are not: expected stop is any non-outermost reason, no frame after it")
    if case.name == "threads":
        seen = sorted(n for t in threads if not t["crashing"] for n in frame_names(t["frames"])
                      if n and n.startswith("fx_thread_"))
        if seen != ["fx_thread_condwait", "fx_thread_poll", "fx_thread_read", "fx_thread_sleep"]:
            raise CaseError("threads: the four blocked threads are not all there: %s" % seen)
    if case.name == "overflow":
        top = ct["frames"][:case.compare_frames]
        if len(top) < case.compare_frames or any(f["function"] != "fx_recurse" for f in top):
            raise CaseError("overflow: top frames are not all fx_recurse")
    doc = {
        "format": "ehbt-expected/1",
        "arch": arch,
        "program": case.name,
        "core": core,
        "exe": bins["exe"],
        "exe_file": bins.get("moved_exe", bins["exe"]),
        "exe_unstripped": bins.get("unstripped"),
        "exe_build_id": build_id(arch, bins.get("moved_exe", bins["exe"])),
        "sysroot": a["sysroot"],
        "signal": case.signal,
        "source": source,
        "note": "; ".join([case.note] + case_notes + ([extra_note] if extra_note else [])),
        "gdb_text": text_path,
        "threads": threads,
    }
    if raw.get("signal") not in (None, case.signal):
        raise CaseError("GDB reports signal %s, expected %s" % (raw.get("signal"), case.signal))
    return doc


# ---------------------------------------------------------------------------------------------

def second_run_expected(arch, case, bins, raw, text, core_raw):
    """Where GDB cannot read the crash run (see Case.expect_cpu), the expected frames come from
    GDB on a second run of the same program on a CPU without the feature GDB trips over. The
    program is deterministic and qemu-user loads it at the same addresses, so the pcs are the
    same: checked here against the frames GDB did get from the crash run, comparing pcs with
    any pointer-authentication code stripped (user addresses are below 2^48)."""
    cpu = case.expect_cpu[arch]
    run_qemu_live(arch, case, bins, raw, text, cpu=cpu, want_core=False)
    second = [f for f in json.load(open(raw))["threads"][0]["frames"] if "error" not in f]
    first = [f for f in json.load(open(core_raw))["threads"][0]["frames"] if "error" not in f]
    agree = 0
    for a_, b in zip(first, second):
        if int(a_["pc"], 16) & ((1 << 48) - 1) != int(b["pc"], 16):
            break
        agree += 1
    if agree < 2 or agree < len(first) - 1:
        raise CaseError("the crash run and the -cpu %s run disagree: %s vs %s" % (
            cpu, [f["pc"] for f in first], [f["pc"] for f in second]))
    return ("GDB on the crash run gets %d frames, the last %s; the expected frames are GDB's "
            "from a second run with -cpu %s, whose pcs agree with the crash run's (PAC "
            "stripped)" % (len(first), first[-1]["pc"], cpu))


def exe_load_bias(bins, raw_path):
    """The executable's load bias: GDB's runtime address of a symbol minus nm's."""
    symfile = bins.get("unstripped") or bins.get("moved_exe", bins["exe"])
    for t in json.load(open(raw_path))["threads"]:
        for f in t["frames"]:
            if f.get("module") in (bins["exe"], bins["gdb_exe"]) and f.get("min_symbol"):
                try:
                    addr, _ = symbol_address(symfile, f["min_symbol"])
                except CaseError:
                    continue
                return int(f["lookup_pc"], 16) - f["min_symbol_offset"] - addr
    return None


def check_return_addresses(arch, bins, raw_path, frames, chain):
    """By construction: each caller frame's pc must be the address right after the call
    instruction that calls the younger chain function, in the caller's own disassembly."""
    symfile = bins.get("unstripped") or bins.get("moved_exe", bins["exe"])
    bias = exe_load_bias(bins, raw_path)
    for callee, caller in zip(frames, frames[1:]):
        if caller["function"] not in chain or callee["function"] not in chain:
            continue
        insns = disassemble(arch, symfile, caller["function"])
        after = [insns[i + 1][0] for i in range(len(insns) - 1)
                 if insns[i][1] in ARCHES[arch]["call"] and
                 "<%s>" % callee["function"] in insns[i][2]]
        if int(caller["pc"], 16) - bias not in after:
            raise CaseError("%s's pc 0x%x is not after a call to %s (%s)" % (
                caller["function"], int(caller["pc"], 16) - bias, callee["function"],
                [hex(a) for a in after]))


def exe_build_id_location(arch, bins, doc, raw_path):
    """Whether the core holds the executable's build-id note where the executable maps it
    (load bias + the PT_NOTE's address, in a PT_LOAD with file contents). The kernel dumps the
    first page of each ELF mapping, so native cores do; qemu-user writes no contents for
    read-only executable mappings, so its cores may not. Without it no tool can tell a
    wrong-build-id file from the right one."""
    exe = bins.get("moved_exe", bins["exe"])
    bias = exe_load_bias(bins, raw_path)
    result = {"exe_bias": None if bias is None else "0x%x" % bias,
              "exe_build_id_in_core": False}
    bid = doc.get("exe_build_id")
    if bias is None or not bid:
        return result
    notes = []
    for line in run([tool(arch, "readelf"), "-lW", exe]).stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "NOTE":
            notes.append((int(parts[2], 16), int(parts[4], 16)))
    loads = []
    for line in run([tool(arch, "readelf"), "-lW", doc["core"]]).stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            loads.append((int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)))
    with open(doc["core"], "rb") as f:
        for vaddr, size in notes:
            start = bias + vaddr
            for off, lo, filesz in loads:
                if lo <= start and start + size <= lo + filesz:
                    f.seek(off + start - lo)
                    if bytes.fromhex(bid) in f.read(size):
                        result["exe_build_id_in_core"] = True
    return result


def do_case(arch, case):
    outdir = os.path.join(OUT, arch)
    os.makedirs(outdir, exist_ok=True)
    core = os.path.join(outdir, case.name + ".core")
    raw = os.path.join(outdir, case.name + ".raw.json")
    text = os.path.join(outdir, case.name + ".gdb.txt")
    expected = os.path.join(outdir, case.name + ".expected.json")
    for p in (core, raw, text, expected):
        if os.path.exists(p):
            os.unlink(p)
    bins, notes = build(arch, case)
    if ARCHES[arch]["qemu"]:
        run_qemu(arch, case, bins, core, raw, text)
    else:
        run_native(arch, case, bins, core, raw, text)
    source, extra = "gdb", ""
    raw_for_expect = raw
    if arch in case.expect_cpu:
        raw_for_expect = os.path.join(outdir, case.name + ".second-run.raw.json")
        extra = second_run_expected(arch, case, bins, raw_for_expect,
                                    os.path.join(outdir, case.name + ".second-run.gdb.txt"), raw)
        source = "gdb-second-run"
    if case.name == "buildid":
        good = os.path.join(outdir, "bin", "buildid-good")
        os.makedirs(good, exist_ok=True)
        moved = os.path.join(good, "buildid")
        shutil.move(bins["exe"], moved)
        bins["moved_exe"] = moved
        bins["gdb_exe"] = bins["exe"]  # the path GDB printed for the module
        _buildid_variant(arch, bins["exe"], bins)
    for leftover in (case.name, case.name + ".second"):  # not a glob: static vs staticpie
        shutil.rmtree(os.path.join(outdir, "run", leftover), ignore_errors=True)
    doc = finish(arch, case, bins, raw_for_expect, core, text, notes, source, extra)
    if raw_for_expect != raw:
        # The frames come from the second run, the thread ids must be the core's.
        crash_threads = json.load(open(raw))["threads"]
        if len(crash_threads) != len(doc["threads"]):
            raise CaseError("the second run has another number of threads")
        for t, c in zip(doc["threads"], crash_threads):
            t["tid"] = c["tid"]
    doc.update(exe_build_id_location(arch, bins, doc, raw))
    for key in ("debug_sysroot", "debuglink_file", "debug_dir", "debug_file", "dwz_file"):
        if key in bins:
            doc[key] = bins[key]
    if "variant" in bins:
        doc["variant_sysroot"] = os.path.join(outdir, "wrongroot")
        doc["variant_file"] = bins["variant"]
        doc["variant_build_id"] = build_id(arch, bins["variant"])
    with open(expected, "w") as f:
        json.dump(doc, f, indent=1)
    return "%s/%s: ok (%s, %d threads, crashing thread %d frames)" % (
        arch, case.name, doc["source"], len(doc["threads"]),
        len([t for t in doc["threads"] if t["crashing"]][0]["frames"]))


def do_case_twice(arch, case):
    """do_case, once more after a failure: a case run under qemu's gdbstub on a loaded machine
    has been seen to stop GDB at another point than the crash (1 in ~50 runs at load 7); the
    second run must pass on its own, and both failures are printed when it does not."""
    try:
        return do_case(arch, case)
    except (CaseError, subprocess.TimeoutExpired) as first:
        try:
            return do_case(arch, case) + " (second run; the first failed: %s)" % first
        except (CaseError, subprocess.TimeoutExpired) as second:
            raise CaseError("%s; and again: %s" % (first, second)) from None


# ---------------------------------------------------------------------------------------------
# The command line and the run, shared with the other core scripts (make_line_cores.py)

def command_line(doc, case_list, arch_names=ARCHES, default_workers=3):
    """The arguments of a core script: architectures (`all`: every one of arch_names), --only
    NAME,... and -j N. Returns (arches, only, [(arch, case)] to make, workers)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("arches", nargs="*", default=["x86_64"])
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("-j", type=int, default=default_workers,
                    help="parallel cases (they mostly wait on gdb and qemu)")
    args = ap.parse_args()
    arches = []
    for a in args.arches:
        arches += list(arch_names) if a == "all" else [a]
    for a in arches:
        if a not in arch_names:
            ap.error("unknown architecture " + a)
    only = set(filter(None, args.only.split(",")))
    jobs = [(a, c) for a in arches for c in case_list
            if a in c.arches and (not only or c.name in only)]
    return arches, only, jobs, max(1, args.j)


def run_cases(jobs, make_one, workers):
    """make_one(arch, case) for every job, `workers` at a time; prints each result, or why it
    failed, as it comes. Returns how many failed."""
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(make_one, a, c): (a, c.name) for a, c in jobs}
        for fut in concurrent.futures.as_completed(futs):
            a, name = futs[fut]
            try:
                print(fut.result(), flush=True)
            except (CaseError, subprocess.TimeoutExpired, OSError) as e:
                failed += 1
                print("%s/%s: FAILED: %s" % (a, name, e), flush=True)
    return failed


def remove_run_dirs(arches):
    """The arches' run directories, where every case has cleaned up after itself."""
    for a in arches:
        try:
            os.rmdir(os.path.join(OUT, a, "run"))
        except OSError:
            pass


def main():
    arches, only, jobs, workers = command_line(__doc__, CASE_LIST)
    t0 = time.time()
    failed = run_cases(jobs, do_case_twice, workers)
    if "x86_64" in arches and shutil.which("lldb-16"):
        # The minidump family (make_minidumps.py): LLDB's minidumps of some of these programs.
        sys.path.insert(0, HERE)
        import make_minidumps
        mini_only = {n for n in only if n in make_minidumps.CASES}
        if not only or mini_only:
            failed += make_minidumps.make_all(mini_only)
    remove_run_dirs(arches)
    print("make-cores: %d cases, %d failed, %.0fs" % (len(jobs), failed, time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
