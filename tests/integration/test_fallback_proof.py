# SPDX-License-Identifier: Apache-2.0
"""Frames found without an unwind table must prove themselves (engine/src/unwind/validate.hpp):
with the executable replaced by another program's, with `--source frame_pointer` on an intact
core, and with one module's tables hidden at a time, every frame ehbt prints must be a frame of
the fixture's truth, in order, and a walk that lost a frame never ends `outermost`.

The truth: cores/out/<arch>/<name>.expected.json (frames recorded from GDB with full debug
info), never ehbt's own output; for the property test also the fixtures whose complete list of
pcs comes from elsewhere (other_fixtures: GDB live plus Go's traceback for the Go cores,
eu-stack for node, eu-stack checked against HotSpot's hs_err for the JVM, GDB on the
unstripped copy for glibc_noreturn_print). EHBT_CORES_OUT names another fixture directory (as
for cores/make_cores.py)."""
import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import cores_expect as ce
from hide_modules import without_file

OUT = pathlib.Path(os.environ.get("EHBT_CORES_OUT") or ce.OUT)


def expected_documents():
    """(path, document) of every fixture's expectation under OUT (unreadable ones left
    out), in path order."""
    for path in sorted(glob.glob(str(OUT / "*" / "*.expected.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        yield path, doc


def gdb_fixtures():
    """(arch, name) of every fixture whose truth is GDB's, per thread (ehbt-expected/1)."""
    found = []
    for _path, exp in expected_documents():
        if exp.get("format") == "ehbt-expected/1" and exp.get("source") == "gdb":
            found.append((exp["arch"], exp["program"]))
    return found


FIXTURES = gdb_fixtures()


def complete_pcs(exp):
    """The crashing thread's pcs, innermost first down to its outermost frame, when the
    expectation of another format lists them all (else None): the Go cores' frames (GDB live
    and Go's traceback; not a qemu core's tail), the nocfi cores' GDB or eu-stack frames, a
    JVM core's eu-stack frames when they hold every pc HotSpot's own walk (hs_err) printed, in
    order. The musl cores list functions, not pcs: nothing to compare a pc with."""
    fmt, source = exp.get("format"), exp.get("source")
    if fmt == "ehbt-go-expected/1":
        return None if exp.get("tail") else [int(f["pc"], 16) for f in exp["frames"]]
    if fmt != "ehbt-expected-nocfi/1":
        return None
    if source in ("gdb", "eu-stack") and "frames" in exp:
        return [int(f["pc"], 16) for f in exp["frames"]]
    if source == "hs_err+eu-stack":
        pcs = [int(f["pc"], 16) for f in exp["eu_stack"]]
        it = iter(pcs)
        hotspot = [int(f["pc"], 16) for f in exp["hs_err"] if f["pc"]]
        return pcs if all(pc in it for pc in hotspot) else None
    return None


def other_fixtures():
    """{(arch, name): expectation in the shape of an ehbt-expected/1 one} of the fixtures whose
    truth is not a GDB expectation but a complete pc list (complete_pcs): one thread, the
    crashing one (by tid where the expectation records it), ending outermost."""
    found = {}
    for path, exp in expected_documents():
        pcs = complete_pcs(exp)
        if not pcs:
            continue
        arch = os.path.basename(os.path.dirname(path))
        name = os.path.basename(path)[:-len(".expected.json")]
        # The executable as it lies in this fixture directory (the recorded path may be the
        # directory it was made in), else as recorded (node and java: the host's).
        exe = OUT / arch / "bin" / os.path.basename(exp["exe"])
        exe = str(exe) if exe.is_file() else exp["exe"]
        notables = exp.get("exe_notables")
        found[(arch, name)] = {
            "arch": arch, "program": name, "exe": exe, "exe_file": exe, "source": exp["source"],
            "exe_notables": str(OUT / arch / "bin" / os.path.basename(notables))
            if notables else None,
            "threads": [{"tid": exp.get("tid", "crashing"), "compare_frames": None,
                         "stop": "outermost", "frames": [{"pc": hex(pc)} for pc in pcs]}]}
    return found


# The fixtures tests make on demand (cores/make_nocfi_cores.py) whose truth is a pc list: made
# here when missing, so that the property covers them whichever test runs first.
ON_DEMAND = ["glibc_noreturn_print", "glibc_noreturn_print_dyn"]


def make_on_demand():
    for name in ON_DEMAND:
        if not (OUT / "x86_64" / (name + ".expected.json")).exists():
            subprocess.run([sys.executable, str(ce.ROOT / "cores" / "make_nocfi_cores.py"),
                            "--only", name], check=True)
    OTHER.update(other_fixtures())


OTHER = other_fixtures()


def load(arch, name):
    if (arch, name) in OTHER:
        exp = OTHER[(arch, name)]
    else:
        with open(OUT / arch / (name + ".expected.json")) as f:
            exp = json.load(f)
    if not (OUT / arch / (name + ".core")).exists():
        pytest.skip("no core for %s/%s" % (arch, name))
    return exp


def run(ehbt_bin, exp, *extra, sysroots=None, exe=None):
    default_sysroots, default_exe = ce.default_args(exp)
    cmd = [str(ehbt_bin), "core", str(OUT / exp["arch"] / (exp["program"] + ".core")), "--json",
           "--all-threads"]
    for s in default_sysroots if sysroots is None else sysroots:
        cmd += ["--sysroot", str(s)]
    if exe or default_exe:
        cmd += ["--exe", str(exe or default_exe)]
    cmd += list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), (cmd, proc.returncode, proc.stderr)
    return proc.returncode, json.loads(proc.stdout)


def truth(exp):
    """{tid: [pc, ...]} as GDB saw them (compare_frames bounds an overflow's endless stack)."""
    out = {}
    for t in exp["threads"]:
        n = t["compare_frames"] or len(t["frames"])
        out[t["tid"]] = ([int(f["pc"], 16) for f in t["frames"][:n]], t["stop"])
    return out


def invented(got_pcs, true_pcs):
    """The first of ehbt's frames that is not the next one of the truth in order (a frame may
    be left out: a walk that stopped early), as (index, pc), or None."""
    j = 0
    for i, pc in enumerate(got_pcs):
        while j < len(true_pcs) and true_pcs[j] != pc:
            j += 1
        if j == len(true_pcs):
            return i, hex(pc)
        j += 1
    return None


def check_no_invented_frame(exp, rc, doc, counts=None):
    """Every frame in the truth, in order; a thread that lost frames does not end outermost and
    the exit status says so. Returns the error list."""
    errors = []
    where = "%s/%s" % (exp["arch"], exp["program"])
    want = truth(exp)
    for t in doc["threads"]:
        key = t["tid"] if t["tid"] in want else "crashing" if t["crashing"] else None
        if key not in want:
            continue
        true_pcs, stop = want[key]
        if stop == "any":
            continue  # a stack overflow: GDB's frames are a prefix, the rest is unknown
        got = [int(f["pc"], 16) for f in t["frames"]]
        if counts is not None:
            counts["fallback"] += sum(f.get("source") in ("frame_pointer", "scan")
                                      for f in t["frames"])
        bad = invented(got, true_pcs)
        if bad:
            if counts is not None:
                counts["invented"] += 1
            errors.append("%s thread %d: frame %d %s is not in the truth:\n%s" % (
                where, t["tid"], bad[0], bad[1], ce.describe(t["frames"])))
        short = len(got) < len(true_pcs) or got != true_pcs[:len(got)]
        if short and stop == "outermost":
            if counts is not None:
                counts["early"] += 1
            if t["stop_reason"] == "outermost":
                errors.append("%s thread %d: %d of %d frames, yet outermost" % (
                    where, t["tid"], len(got), len(true_pcs)))
            if rc != 1:
                errors.append("%s: exit %d with thread %d cut short" % (where, rc, t["tid"]))
    return errors


def exe_frames(exp):
    """{tid: frames up to and including the first frame in the executable}: past it nothing
    can be proven when the executable is another program's."""
    exe_base = os.path.basename(exp["exe"])
    out = {}
    for t in exp["threads"]:
        pcs = []
        for f in t["frames"]:
            pcs.append(int(f["pc"], 16))
            if exe_base in f["module_aliases"]:
                break
        out[t["tid"]] = pcs
    return out


X86 = [name for arch, name in FIXTURES if arch == "x86_64"]


@pytest.mark.parametrize("name", [n for n in ("chain", "noreturn", "sighandler", "threads")
                                  if n in X86] or ["chain"])
def test_replaced_executable_gives_no_invented_frame(ehbt_bin, name):
    exp = load("x86_64", name)
    other = OUT / "x86_64" / "bin" / ("noreturn" if name == "chain" else "chain")
    rc, doc = run(ehbt_bin, exp, exe=other)
    assert rc == 1, doc["threads"][0]
    assert check_no_invented_frame(exp, rc, doc) == []
    # The crashing thread: exactly GDB's frames up to the first one in the executable (whose
    # code the core does not hold), then a stop naming the cause. (Another thread may go on
    # by a proven scan: a worker's start_thread called it through a pointer.)
    want = exe_frames(exp)
    t = next(t for t in doc["threads"] if t["crashing"])
    got = [int(f["pc"], 16) for f in t["frames"]]
    assert got == want[t["tid"]], (t["tid"], ce.describe(t["frames"]))
    assert t["stop_reason"] == "no_module", t
    assert "is another build" in t["stop_detail"], t["stop_detail"]


@pytest.mark.parametrize("arch,name", FIXTURES or [("x86_64", "chain")])
def test_frame_pointer_source_gives_no_invented_frame(ehbt_bin, arch, name):
    exp = load(arch, name)
    rc, doc = run(ehbt_bin, exp, "--source", "frame_pointer")
    assert check_no_invented_frame(exp, rc, doc) == []


def hidden_module_runs(exp, dest):
    """(what is hidden, --sysroot list, --exe) per module of the truth's frames: a sysroot that
    holds every other module's file (ce.relocate's copies), with one left out at a time (only
    where the path the core names is not also on this host, which ehbt would use: the qemu
    cores' libraries); the executable is hidden by giving another program's as --exe."""
    if ce.modules_in_frames(exp):
        exe, sysroot = ce.relocate(exp, dest)
    else:  # nothing to relocate (no module but the executable: the other fixtures' frames)
        exe, sysroot = exp["exe_file"], pathlib.Path(dest) / "sysroot"
        sysroot.mkdir(parents=True)
    extra_roots = [exp["debug_sysroot"]] if exp.get("debug_sysroot") else []
    # Another fixture program of the same architecture (chain's, or noreturn's for chain).
    other = next((OUT / exp["arch"] / "bin" / n for n in ("chain", "noreturn", "drap", "threads")
                  if n != exp["program"] and (OUT / exp["arch"] / "bin" / n).is_file()), None)
    if other is None:
        pytest.fail("no other program in %s" % (OUT / exp["arch"] / "bin"))
    yield os.path.basename(exp["exe"]), [sysroot] + extra_roots, other
    if exp.get("exe_notables"):  # the executable's code without its tables (same build-id)
        yield os.path.basename(exp["exe"]) + " tables", [sysroot] + extra_roots, \
            exp["exe_notables"]
    for core_path in sorted(ce.modules_in_frames(exp)):
        if os.path.exists(core_path):
            continue  # a host library (x86_64 cores): ehbt falls back to the host's file
        root = pathlib.Path(str(dest) + "-no-" + os.path.basename(core_path))
        shutil.copytree(sysroot, root, symlinks=True)
        for p in {core_path, os.path.realpath(core_path)}:
            hidden = root / p.lstrip("/")
            if hidden.exists() or hidden.is_symlink():
                hidden.unlink()
        yield os.path.basename(core_path), [root] + extra_roots, exe


# Runs of the property test where a fallback still invents a frame: real bugs, each named,
# kept out of test_hiding_one_module_at_a_time_invents_no_frame's assertion and asserted by
# test_known_invented_frames (a strict xfail: it fails loudly once the bug is fixed). Keyed
# (arch, fixture, what is hidden). None now: the two found by the glibc noreturn fixtures (issue
# #32), both the unnamed-callee rule (validate.cpp, disprove_unnamed_callee), are fixed --
# glibc_noreturn_print without tables (fwrite+0xb3, after its call through a register into
# _IO_new_file_xsputn, taken for abort's caller; then main's address, after a noreturn call in
# main's .cold part, for __libc_start_call_main's): a call through a register no longer proves
# an unnamed callee's caller unless the caller's own table proves it by the frame above, else
# the scan stops there; gopie without its file (0x55555555f3e8, after a direct call to
# 0x555555568800, 193 KB below runtime.sigpanic, taken for sigpanic's caller): that target lies
# below a function start the walk had proven (unwind/known_starts.hpp).
KNOWN_BUGS = {}


def hidden_module_walks(ehbt_bin, tmp_path, known):
    """The property's walks: over every fixture with a complete truth (GDB's, other_fixtures')
    and every module of its frames hidden in turn (the runs in KNOWN_BUGS only when `known`,
    else all others): (counts, errors)."""
    counts = {"walks": 0, "no_exe": 0, "not_hidden": 0, "fallback": 0, "invented": 0,
              "early": 0, "fixtures": 0}
    errors = []
    make_on_demand()
    for arch, name in FIXTURES + sorted(OTHER):
        if known and not any(k[:2] == (arch, name) for k in KNOWN_BUGS):
            continue
        exp = load(arch, name)
        if not all(os.path.isfile(f) for f in [exp["exe_file"], *ce.modules_in_frames(exp).values()]):
            counts["no_exe"] += 1  # a fixture directory being remade: its files moved
            continue
        counts["fixtures"] += 1
        for i, (hidden, roots, exe) in enumerate(hidden_module_runs(exp, tmp_path / arch / name)):
            if ((arch, name, hidden) in KNOWN_BUGS) != known:
                continue
            rc, doc = run(ehbt_bin, exp, sysroots=roots, exe=exe)
            counts["walks"] += 1
            # The module really is hidden: the report says its file was not used. (Where ehbt
            # still found a file, e.g. the buildid case's moved executable by its build-id,
            # nothing is hidden and the run is only counted.) A run hiding only the tables
            # (`<exe> tables`: the file without .eh_frame) uses the file.
            if not hidden.endswith(" tables"):
                mods = [m for m in doc["modules"] if os.path.basename(m["path"] or "") == hidden]
                assert mods, (arch, name, hidden)
                if any(m["file"] is not None for m in mods):
                    counts["not_hidden"] += 1
                    continue
            errors += ["[%s hidden] %s" % (hidden, e)
                       for e in check_no_invented_frame(exp, rc, doc, counts)]
    return counts, errors


def test_hiding_one_module_at_a_time_invents_no_frame(ehbt_bin, tmp_path):
    """The property: over every fixture core with a complete truth and every module of its
    frames, with that module's file (so its tables) gone, the fallbacks walk on; each frame
    they give is one of the truth's, in order, and a walk that lost frames does not end
    outermost."""
    counts, errors = hidden_module_walks(ehbt_bin, tmp_path, known=False)
    print("\nfallback proof: %(fixtures)d fixtures, %(walks)d walks (%(not_hidden)d hid nothing; "
          "%(no_exe)d fixtures without their files), "
          "%(fallback)d fallback frames, %(invented)d threads with a frame not in the truth, "
          "%(early)d threads ending early" % counts)
    print("fallback proof: %d runs left to test_known_invented_frames" % len(KNOWN_BUGS))
    assert errors == [], "\n".join(errors)


@pytest.mark.xfail(bool(KNOWN_BUGS), strict=True,
                   reason="; ".join(sorted(set(KNOWN_BUGS.values()))) or "none")
def test_known_invented_frames(ehbt_bin, tmp_path):
    """The property on the runs where a fallback is known to invent a frame (KNOWN_BUGS)."""
    if not KNOWN_BUGS:
        pytest.skip("no known invented frame (KNOWN_BUGS is empty)")
    counts, errors = hidden_module_walks(ehbt_bin, tmp_path, known=True)
    if not counts["walks"]:
        pytest.skip("none of the KNOWN_BUGS runs' fixtures is in %s" % OUT)
    print("\nknown bugs: %(walks)d walks, %(fallback)d fallback frames, %(invented)d threads "
          "with a frame not in the truth, %(early)d threads ending early" % counts)
    assert errors == [], "\n".join(errors)


def test_makecontext_coroutine_ends_at_the_planted_return(ehbt_bin):
    """cores/programs/coroutine.c: exactly fx_co_crash, fx_co_body and makecontext's planted
    return address (__start_context's first instruction, looked up at pc, not pc - 1); nothing
    from the coroutine's .bss stack after it (no scan walks off the stack into main's saved
    context), and the walk does not claim outermost."""
    exp = load("x86_64", "coroutine")
    rc, doc = run(ehbt_bin, exp)
    t = next(t for t in doc["threads"] if t["crashing"])
    want = [int(f["pc"], 16) for f in exp["threads"][0]["frames"]]
    assert [int(f["pc"], 16) for f in t["frames"]] == want, ce.describe(t["frames"])
    assert [f["source"] for f in t["frames"]][1:] == ["eh_frame", "eh_frame"], t["frames"]
    assert t["stop_reason"] != "outermost" and rc == 1, (t["stop_reason"], t["stop_detail"])


def coroutine_without_libc_tables(build_dir):
    """The coroutine core walked with libc's file hidden (through the Python API: the host's
    libc is the core's, so no --sysroot can hide it): __start_context has no table, and the
    fallbacks run from makecontext's planted return address at the top of the coroutine's
    .bss stack, where the ucontext_t of main's saved context follows in the same mapping."""
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)  # skips when the Python module is not built
    exp = load("x86_64", "coroutine")
    target = ehbt.open_core(str(OUT / "x86_64" / "coroutine.core"))
    modules = without_file(ehbt, target.modules, "libc.so.6")
    [thread] = [t for t in target.threads if t.signal]
    walk = ehbt.Unwinder().unwind(thread.regs, target, ehbt.ModuleSet(modules))
    want = [int(f["pc"], 16) for f in exp["threads"][0]["frames"]]
    return [f.pc for f in walk.frames], want, walk


def test_coroutine_without_libc_tables_gives_exactly_the_true_frames(build_dir):
    """Issue #32 item 2: the scan from __start_context reads up the coroutine's stack to the end
    of its mapping, the .bss, which also holds main's saved context (a ucontext_t) right after
    the array: no region bound separates them. Its saved rip, after main's call to
    swapcontext@plt (a PLT call proves nothing), is no caller: main's own table, stepped from
    the sp the scan gives it, reads a zero return address there. Exactly GDB's frames up to
    the planted return address, then a stop naming the missing file (no_module), the end of
    the mapping and the rejected word; never outermost (before: main, then outermost, exit 0)."""
    got, want, walk = coroutine_without_libc_tables(build_dir)
    assert got == want, (got, walk.stop, walk.detail)
    assert walk.stop == "no_module", (walk.stop, walk.detail)
    assert "and the end of its stack mapping at" in walk.detail, walk.detail
    assert "reads a zero return address from the stack the scan gives it" in walk.detail, \
        walk.detail


def core_load_segments(path):
    """[(start, end)] of an ELF64 little-endian core's PT_LOAD program headers, read here (not
    by ehbt): the mappings a debugger lists for the core (LLDB's memory regions)."""
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _flags, _off, vaddr, _paddr, _filesz, memsz = struct.unpack_from(
            "<IIQQQQQ", table, i * phentsize)
        if p_type == 1 and memsz:
            out.append((vaddr, vaddr + memsz))
    return out


def test_callable_memory_is_bounded_by_the_regions_given(build_dir):
    """The debugger plugins read memory through a callable, which says nothing of mappings:
    Unwinder.unwind's `regions` gives them (GDB: a live process's /proc/PID/maps; LLDB: its
    memory regions). The coroutine walk with libc's tables hidden, read through a callable over
    the same core: given the core's PT_LOADs (read by this test), exactly the walk the engine
    makes with its own memory -- frames, stop and detail, the scan ending at the end of the
    coroutine stack's mapping; given nothing, no stack bound is known to the walk."""
    got, want, walk = coroutine_without_libc_tables(build_dir)
    assert got == want and "the end of its stack mapping" in walk.detail, walk.detail
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)
    path = str(OUT / "x86_64" / "coroutine.core")
    target = ehbt.open_core(path)
    modules = without_file(ehbt, target.modules, "libc.so.6")
    [thread] = [t for t in target.threads if t.signal]
    read = target.read
    bounded = ehbt.Unwinder().unwind(thread.regs, read, ehbt.ModuleSet(modules),
                                     module_files=True, regions=core_load_segments(path))
    assert ([f.pc for f in bounded.frames], bounded.stop, bounded.detail) == (
        got, walk.stop, walk.detail)
    unbounded = ehbt.Unwinder().unwind(thread.regs, read, ehbt.ModuleSet(modules),
                                       module_files=True)
    assert "the end of its stack mapping" not in unbounded.detail, unbounded.detail


def test_replaced_executable_through_the_debugger_plugins(ehbt_bin, build_dir, tmp_path):
    """Item 3 through GDB and LLDB: each debugger given another program as the core's
    executable (`gdb OTHER CORE`, `target create OTHER --core CORE`) and the same `--exe`:
    the plugin's `ehbt --json` walks the crashing thread exactly as `ehbt core --exe OTHER`
    (GDB's frames up to the first one in the executable, then `no_module`), not with the
    file the debugger loaded (it is another build: the engine decides, merge_modules)."""
    import ehbt_py as h
    from test_lldb_plugin import ehbt_json

    h.import_ehbt(build_dir)
    exp = load("x86_64", "chain")
    other = OUT / "x86_64" / "bin" / "noreturn"
    core = OUT / "x86_64" / "chain.core"
    rc, want_doc = run(ehbt_bin, exp, exe=other)
    want = next(t for t in want_doc["threads"] if t["crashing"])
    assert want["stop_reason"] == "no_module", want

    def crashing(doc):
        t = next(t for t in doc["threads"] if t["crashing"])
        return [f["pc"] for f in t["frames"]], t["stop_reason"], t["stop_detail"]

    out = tmp_path / "gdb.json"
    text = h.run_gdb(build_dir, [other, core], [
        "python open(%r, 'w').write(gdb.execute('ehbt --json --exe %s', to_string=True))"
        % (str(out), other)])
    assert out.exists(), text[-3000:]
    gdb_doc = json.loads([ln for ln in out.read_text().splitlines() if ln.startswith("{")][0])
    assert crashing(gdb_doc) == crashing(want_doc)
    lldb_doc, _ = ehbt_json(build_dir, tmp_path, ["target create %s --core %s" % (other, core)],
                            command="ehbt --json --exe %s" % other)
    assert crashing(lldb_doc) == crashing(want_doc)
