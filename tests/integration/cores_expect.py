# SPDX-License-Identifier: Apache-2.0
"""Shared helpers: the fixture cores (cores/make-cores.sh), their expected frames
(cores/out/<arch>/<name>.expected.json, recorded from GDB or by construction, never from ehbt),
running `ehbt core ... --json`, and comparing its ehbt-backtrace/1 document to the expectation.

Comparison rules (documented in cores/README.md):
- threads are matched by tid; the same set of tids, the same crashing thread;
- per frame, up to the expectation's compare_frames (all frames when null):
  - pc: exact;
  - module: the basename of ehbt's `module` (or of its resolved `file`) must be one of the
    expected basenames (GDB's path and its realpath, e.g. libstdc++.so.6 / libstdc++.so.6.0.30;
    the vdso under its usual names); an expected null module (qemu's signal trampoline page)
    requires a null module;
  - symbol: ehbt's `symbol`, with a symbol version and a C++ parameter list removed, must be
    one of the expected names: the ELF symbol GDB found for the frame's lookup address (the pc
    for frame 0, the trampoline and the frame a signal interrupted; pc-1 for callers) plus its
    aliases at the same address, from the module's own .symtab/.dynsym and from its separate
    debug file. Null is accepted only when the module's own tables have no such symbol
    (symbol_required false): e.g. a local libc function only its debug file names. GDB's
    function name is not used for this: GDB calls `main.cold` `main`, ehbt must say `main.cold`;
- stop: "outermost" needs stop_reason outermost and exactly the expected frame count;
  "early" (a smashed stack) needs a non-outermost stop and at most one extra frame, whose pc
  is the garbage value; "any" (stack overflow) needs more frames than are compared.
"""

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORES = ROOT / "cores"
# make_cores.py writes under EHBT_CORES_OUT when it is set (see there): read the same place.
OUT = pathlib.Path(os.environ.get("EHBT_CORES_OUT") or CORES / "out")
MAKE_CORES = CORES / "make-cores.sh"


def _load_make_cores():
    spec = importlib.util.spec_from_file_location("make_cores", CORES / "make_cores.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKE = _load_make_cores()
ARCHES = list(MAKE.ARCHES)
# Every (arch, case) the corpus defines, known before the cores exist (pytest parametrizes
# at collection time).
ALL_CASES = [(a, c.name) for a in ARCHES for c in MAKE.CASE_LIST if a in c.arches]


def arch_tools_present(arch):
    a = MAKE.ARCHES[arch]
    needed = [a["prefix"] + "gcc", a["gdb"]] + ([a["qemu"]] if a["qemu"] else [])
    return all(shutil.which(t) for t in needed)


def expected_path(arch, name):
    return OUT / arch / (name + ".expected.json")


def load_expected(arch, name):
    with open(expected_path(arch, name)) as f:
        return json.load(f)


def ensure_cores(arches):
    """Runs make-cores.sh for every architecture with a missing expected file. Returns the
    make-cores output per architecture that was (re)built."""
    logs = {}
    for arch in arches:
        missing = [n for a, n in ALL_CASES if a == arch and not expected_path(a, n).exists()]
        if missing:
            proc = subprocess.run(["bash", str(MAKE_CORES), arch], cwd=ROOT, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=1800)
            logs[arch] = proc.stdout
    return logs


def expected_case(fixture_cores, arch, name, no_tools):
    """The expected file of one fixture core, given the session's `fixture_cores` (conftest.py).
    When this machine lacks the architecture's toolchain, qemu or gdb, calls no_tools(message):
    pytest.skip or pytest.fail, as the test decides. A core make-cores.sh did not produce is a
    failure either way (with its log)."""
    if arch not in fixture_cores["arches"]:
        no_tools("no toolchain/qemu/gdb for " + arch)
    path = expected_path(arch, name)
    if not path.exists():
        pytest.fail("make-cores.sh produced no %s:\n%s" % (path, fixture_cores["logs"].get(
            arch, "(outputs existed before this session)")))
    return load_expected(arch, name)


def run_ehbt(ehbt_bin, core, sysroots=(), exe=None, extra=()):
    cmd = [str(ehbt_bin), "core", str(core), "--json", "--all-threads"]
    for s in sysroots:
        cmd += ["--sysroot", str(s)]
    if exe:
        cmd += ["--exe", str(exe)]
    cmd += list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), "%s: exit %d\n%s" % (" ".join(cmd), proc.returncode,
                                                          proc.stderr)
    doc = json.loads(proc.stdout)
    assert doc.get("format") == "ehbt-backtrace/1", doc.get("format")
    return proc.returncode, doc


def default_args(exp):
    """The sysroot and --exe a core needs as it lies in cores/out."""
    sysroots = [exp["sysroot"]] if exp.get("sysroot") else []
    if exp.get("debug_sysroot"):  # where the case's separate debug file is installed
        sysroots.append(exp["debug_sysroot"])
    exe = exp["exe_file"] if exp["exe_file"] != exp["exe"] else None  # the moved buildid exe
    return sysroots, exe


_VDSO = {"[vdso]", "linux-vdso.so.1", "linux-vdso64.so.1", "linux-vdso.so", "vdso"}


def module_ok(exp_frame, got_frame):
    if exp_frame["module"] is None:
        return got_frame.get("module") in (None, "")
    candidates = set()
    for key in ("module", "file"):
        v = got_frame.get(key)
        if v:
            candidates.add(os.path.basename(v))
    aliases = set(exp_frame["module_aliases"])
    if exp_frame["module"] == "[vdso]":
        return bool(candidates & _VDSO) or any("vdso" in c for c in candidates)
    return bool(candidates & aliases)


def normalize_symbol(name):
    if name is None:
        return None
    name = name.strip()
    if not name.endswith("@plt"):
        name = name.split("@")[0]
    # C++: drop the parameter list (and a trailing const), keep the qualified name.
    m = re.match(r"^(.*?[^\s(])\(.*\)(?: const)?$", name)
    if m and not name.startswith("operator"):
        name = m.group(1)
    return name


def symbol_ok(exp_frame, got_frame):
    got = normalize_symbol(got_frame.get("symbol"))
    names = {normalize_symbol(n) for n in exp_frame["symbols"]}
    if got is None:
        return not exp_frame["symbol_required"]
    return got in names


def describe(frames):
    return "\n".join("  #%d %s %s %s" % (i, f.get("pc"), f.get("symbol", f.get("function")),
                                          f.get("module"))
                     for i, f in enumerate(frames))


def compare_thread(exp_t, got_t, where):
    """A list of mismatch descriptions (empty when the thread matches)."""
    errors = []
    exp_frames = exp_t["frames"]
    got_frames = got_t["frames"]
    n = exp_t["compare_frames"] or len(exp_frames)
    if got_t["crashing"] != exp_t["crashing"]:
        errors.append("%s: crashing %s, expected %s" % (where, got_t["crashing"],
                                                       exp_t["crashing"]))
    for i in range(min(n, len(exp_frames))):
        if i >= len(got_frames):
            errors.append("%s: only %d frames (stop %s: %s), expected at least %d" % (
                where, len(got_frames), got_t.get("stop_reason"), got_t.get("stop_detail"), n))
            break
        e, g = exp_frames[i], got_frames[i]
        if int(g["pc"], 16) != int(e["pc"], 16):
            errors.append("%s frame %d: pc %s, expected %s (%s)" % (where, i, g["pc"], e["pc"],
                                                                   e["function"]))
            break  # later frames follow from this one
        if not module_ok(e, g):
            errors.append("%s frame %d: module %s, expected %s" % (where, i, g.get("module"),
                                                                  e["module_aliases"]))
        if not symbol_ok(e, g):
            errors.append("%s frame %d: symbol %r, expected one of %s%s" % (
                where, i, g.get("symbol"), e["symbols"],
                "" if e["symbol_required"] else " or null"))
    stop = exp_t["stop"]
    reason = got_t.get("stop_reason")
    if stop == "outermost":
        if reason != "outermost" or len(got_frames) != len(exp_frames):
            errors.append("%s: %d frames, stop %s (%s); expected %d frames, outermost" % (
                where, len(got_frames), reason, got_t.get("stop_detail"), len(exp_frames)))
    elif stop == "early":
        if reason == "outermost":
            errors.append("%s: stop outermost, expected an early stop" % where)
        extra = got_frames[n:]
        if len(extra) > 1 or (extra and int(extra[0]["pc"], 16) !=
                              int(exp_t.get("garbage_pc", "0x0"), 16)):
            errors.append("%s: frames past the smashed return address:\n%s" % (
                where, describe(extra)))
    elif stop == "any":
        if len(got_frames) <= n:
            errors.append("%s: %d frames, expected more than %d" % (where, len(got_frames), n))
    if errors:
        errors.append("%s: ehbt frames:\n%s\nexpected:\n%s" % (where, describe(got_frames),
                                                              describe(exp_frames)))
    return errors


def compare(exp, doc, rc=None):
    """All mismatches between an expected file and an ehbt-backtrace/1 document."""
    where = "%s/%s" % (exp["arch"], exp["program"])
    errors = []
    if doc.get("arch") != exp["arch"]:
        errors.append("%s: arch %s" % (where, doc.get("arch")))
    sig = (doc.get("signal") or {}).get("number")
    if sig != exp["signal"]:
        errors.append("%s: signal %s, expected %s" % (where, sig, exp["signal"]))
    got = {t["tid"]: t for t in doc.get("threads", [])}
    want = {t["tid"]: t for t in exp["threads"]}
    if set(got) != set(want):
        errors.append("%s: threads %s, expected %s" % (where, sorted(got), sorted(want)))
    for tid, exp_t in want.items():
        if tid in got:
            errors += compare_thread(exp_t, got[tid], "%s thread %d" % (where, tid))
    if rc is not None:
        stops = {t["stop"] for t in exp["threads"]}
        allowed = {0, 1} if "any" in stops else ({1} if "early" in stops else {0})
        if rc not in allowed:
            errors.append("%s: exit status %d, expected %s" % (where, rc, sorted(allowed)))
    return errors


def modules_in_frames(exp):
    """{path as the core names it: host file} for every non-executable module in the frames."""
    mods = {}
    for t in exp["threads"]:
        for f in t["frames"]:
            host = f.get("module_file")
            if not host or f["module"] == "[vdso]" or host in (exp["exe"], exp["exe_file"]):
                continue
            mods[f["module_core_path"]] = host
    return mods


def relocate(exp, dest):
    """Copies the executable and the libraries the frames use under dest: dest/bin/<exe> and
    dest/sysroot/<path as the core names it> (also at its realpath, which is what an NT_FILE
    note names on a merged-/usr system). Returns (exe copy, sysroot)."""
    dest = pathlib.Path(dest)
    sysroot = dest / "sysroot"
    bindir = dest / "bin"
    bindir.mkdir(parents=True)
    # A static executable uses no library: the sysroot is then empty, but it must exist
    # (a nonexistent --sysroot is a usage error).
    sysroot.mkdir(parents=True, exist_ok=True)
    exe = bindir / os.path.basename(exp["exe"])
    shutil.copy2(exp["exe_file"], exe)
    for core_path, host in modules_in_frames(exp).items():
        paths = {core_path}
        if not exp.get("sysroot"):
            paths.add(os.path.realpath(core_path))
        for p in paths:
            target = sysroot / p.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(host, target)
    return exe, sysroot
