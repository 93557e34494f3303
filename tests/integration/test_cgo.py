# SPDX-License-Identifier: Apache-2.0
"""cgo cores (cores/make_go_cores.py, cores/programs/go/cgocrash/): Go calls C through cgo and
the C code faults three calls deep (main.main -> level1 -> level2 -> cgo -> cfun1 -> cfun2 ->
cfun3, a NULL write in the frameless leaf cfun3), GOTRACEBACK=crash, built unstripped and with
-ldflags='-s -w'. The expected frames come from GDB (its stops at the fault and at both
SIGABRTs: the C frames by their CFI), Go's own traceback (the goroutine's frames, runtime.cgocall
to runtime.goexit, with their fp = CFA) and objdump (cgocall's call of asmcgocall). The walk
must cross Go's signal frame, runtime.sigpanic (which Go's handler made look called from the
faulting pc), the C frames on the thread's g0 stack and runtime.asmcgocall's switch back to the
goroutine's stack, and give exactly those frames: no frame more, none less, on x86-64, aarch64 and s390x
(big-endian; cross-built, run under qemu) (issue #32 item 4:
before, the unstripped walk stopped at asmcgocall, the stripped one added runtime.systemstack
and the C library's start frames by stack scanning and said outermost, exit 0)."""
import json
import re
import subprocess

import pytest

from test_go_cores import case_expectation, expected_set
from test_triage import read_jsonl, tool_env, triage  # noqa: F401

NAMES = ["cgo", "cgostripped"]
# aarch64 and s390x (GOARCH=arm64 / s390x, CC=<arch>-linux-gnu-gcc, run under qemu with GDB
# through its gdbstub): the C library comes from the cross sysroot, which the walk is given.
SYSROOT = {"aarch64": "/usr/aarch64-linux-gnu", "s390x": "/usr/s390x-linux-gnu"}
CASES = NAMES + ["aarch64/" + n for n in NAMES] + ["s390x/" + n for n in NAMES]


@pytest.fixture(scope="module")
def cgo_expected():
    return expected_set("x86_64", tuple(NAMES))


def expected_case(request, case):
    """`name` (x86-64), `aarch64/name` or `s390x/name`: that core's expectation."""
    return case_expectation(case, NAMES)


def sysroot_args(exp):
    return ["--sysroot", SYSROOT[exp["arch"]]] if exp["arch"] in SYSROOT else []


def plain(name):
    """A function's name without the ABI suffix Go's linker gives assembly functions only in
    .symtab (runtime.raise.abi0 there, runtime.raise in Go's own table and GDB)."""
    return re.sub(r"\.abi0$", "", name) if name else name


def walk_json(ehbt_bin, exp, *extra):
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json", *sysroot_args(exp),
                           *extra],
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    assert thread["tid"] == exp["tid"]
    assert doc["signal"]["number"] == exp["signal"]
    return proc.returncode, thread


def assert_exact(frames, exp):
    """Every frame, in order, none more: pc, the name GDB or Go's traceback gives, and the CFA
    Go's traceback prints (fp=, and cgocall's sp for asmcgocall's frame)."""
    got = [(f["pc"], plain(f["symbol"])) for f in frames]
    want = [(f["pc"], plain(f["function"])) for f in exp["frames"]]
    assert got == want, "\n".join("%s %s" % (g, w) for g, w in zip(got, want)) + \
        "\n%d frames, want %d" % (len(got), len(want))
    for f, e in zip(frames, exp["frames"]):
        assert f["symbol"] in e["symbols"], (f, e)
        if "cfa" in e:
            assert f["cfa"] == e["cfa"], (f, e)


@pytest.mark.parametrize("case", CASES)
def test_cgo_core_exact_frames_json(ehbt_bin, request, case):
    exp = expected_case(request, case)
    status, thread = walk_json(ehbt_bin, exp)
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost", thread["stop_detail"]
    assert status == 0


@pytest.mark.parametrize("case", CASES)
def test_cgo_core_exact_frames_text(ehbt_bin, request, case):
    exp = expected_case(request, case)
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], *sysroot_args(exp)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    block = re.search(r"^Thread %d \(crashed.*?\n(.*?)(?:\n\n|\Z)" % exp["tid"], proc.stdout,
                      re.S | re.M)
    assert block, proc.stdout
    lines = block.group(1).splitlines()
    assert not any(line.startswith("Backtrace stopped") for line in lines), lines
    frames = []
    for line in lines:
        if "<signal handler called>" in line:
            continue  # the trampoline's line: its pc is in the JSON
        m = re.match(r"#(\d+)\s+(0x[0-9a-f]+) in (\S+) ", line)
        assert m, line
        frames.append((int(m.group(2), 16), plain(m.group(3))))
    want = [(int(f["pc"], 16), plain(f["function"])) for f in exp["frames"]
            if f["type"] != "sigtramp"]
    assert frames == want


@pytest.mark.parametrize("case", CASES)
def test_cgo_stack_switch_from_the_runtimes_record(ehbt_bin, request, case):
    """The goroutine's frames are reached through asmcgocall's saved state (cgocall's frame is
    tagged go_pclntab, the Go step), on another stack than the C frames; no frame of either
    build comes from a frame-pointer step or a scan (the C part has its .eh_frame, stripped or
    not: the frameless cfun3 is stepped by it)."""
    _, thread = walk_json(ehbt_bin, expected_case(request, case))
    frames = thread["frames"]
    sources = [f["source"] for f in frames]
    assert not {"frame_pointer", "scan"} & set(sources), sources
    i = [plain(f["symbol"]) for f in frames].index("runtime.asmcgocall")
    assert frames[i + 1]["source"] == "go_pclntab"
    assert frames[i - 1]["symbol"].startswith("_cgo_")
    assert frames[i - 1]["source"] == "eh_frame"
    # The switch: the C frames' CFA is on g0's stack (the thread's), far from every CFA of the
    # goroutine's stack (Go's heap), whichever is higher (s390x under qemu: the thread's).
    go_cfas = [int(f["cfa"], 16) for f in frames[i:]]
    c_cfa = int(frames[i - 1]["cfa"], 16)
    assert not min(go_cfas) - 0x10000 <= c_cfa <= max(go_cfas) + 0x10000, (hex(c_cfa), go_cfas)


def frame_name(f):
    sym = f.symbolize()
    return plain(sym[0]) if sym else None


# Where asmcgocall keeps the goroutine's g and the depth of its sp below g.stack.hi, from the C
# callee's CFA, and the byte order (asm_amd64.s: 48(sp), 40(sp); asm_arm64.s: 0(sp), 8(sp);
# asm_s390x.s: 168(r15), 160(r15), r15 being that CFA less 160).
SLOTS = {"x86_64": (48, 40, "little"), "aarch64": (0, 8, "little"), "s390x": (8, 0, "big")}


def cgo_walk_with(build_dir, exp, patch):
    """The crashing thread walked through the Python module over the core's memory with some
    words changed: patch(frames, target) -> {address: 8-byte value in the core's byte order}."""
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)  # skips when the Python module is not built
    byteorder = SLOTS[exp["arch"]][2]
    target = ehbt.open_core(exp["core"], exe=exp["exe"],
                            sysroots=[SYSROOT[exp["arch"]]] if exp["arch"] in SYSROOT else [])
    [thread] = [t for t in target.threads if t.tid == exp["tid"]]
    frames = ehbt.Unwinder().unwind(thread.regs, target, target).frames
    words = patch(frames, target)

    def read(addr, size):
        data = bytearray(target.read(addr, size))
        for slot, value in words.items():
            raw = value.to_bytes(8, byteorder)
            for k in range(8):
                if addr <= slot + k < addr + len(data):
                    data[slot + k - addr] = raw[k]
        return bytes(data)

    return frames, ehbt.Unwinder().unwind(thread.regs, read, target)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("change", ["depth+16", "depth-8", "g=0", "g=stack"])
def test_cgo_switch_must_prove_itself(build_dir, request, case, change):
    """asmcgocall's saved g and depth (SLOTS: amd64 48(sp) and 40(sp) of its frame on g0, sp
    being the C callee's CFA; s390x big-endian) changed in the core's memory: the walk keeps
    every frame down to asmcgocall, takes no frame from a wrong goroutine sp, and stops with a
    reason, never outermost (no scan or frame-pointer step on g0's stack, where stale return
    addresses lie)."""
    exp = expected_case(request, case)
    g_at, depth_at, byteorder = SLOTS[exp["arch"]]

    def patch(frames, target):
        i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.asmcgocall")
        sp = frames[i - 1].cfa
        depth = int.from_bytes(target.read(sp + depth_at, 8), byteorder)
        return {"depth+16": {sp + depth_at: depth + 16}, "depth-8": {sp + depth_at: depth - 8},
                "g=0": {sp + g_at: 0}, "g=stack": {sp + g_at: sp}}[change]

    frames, walk = cgo_walk_with(build_dir, exp, patch)
    pcs = [f.pc for f in frames]
    got = [f.pc for f in walk.frames]
    i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.asmcgocall")
    assert got[:i + 1] == pcs[:i + 1], (got, pcs)
    assert len(got) == i + 1, (got, walk.stop, walk.detail)
    assert walk.stop != "outermost", walk.detail
    assert "asmcgocall" in walk.detail or walk.stop == "memory_fault", (walk.stop, walk.detail)


@pytest.mark.parametrize("arch", ["", "aarch64", "s390x"])
def test_triage_signs_cgo_crashes_by_the_c_frames(tool_env, request, arch, tmp_path):
    """Both builds of the cgo crash share one bucket, signed by the faulting C chain (the
    frames below Go's signal handler, sigpanic and throw), not by the runtime's report; the
    cross-built cores with their sysroot's C library."""
    cores = [expected_case(request, (arch + "/" if arch else "") + n)["core"] for n in NAMES]
    sysroot = ["--sysroot", SYSROOT[arch]] if arch else []
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", *sysroot,
                  *cores)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = read_jsonl(tmp_path / "o.jsonl")
    assert len(recs) == 2, recs
    [signature] = {r["signature"] for r in recs}
    assert signature.startswith("cfun3 | cfun2 | cfun1"), signature
    assert len({r["bucket"] for r in recs}) == 1
    assert not any(r["unreliable"] or r["partial"] for r in recs), recs


@pytest.mark.parametrize("case", CASES)
def test_gdb_plugin_on_cgo_core(build_dir, request, case, tmp_path):
    """The GDB plugin's `ehbt -json`, where GDB's own backtrace turns to garbage past
    asmcgocall: the expected frames, exactly (the cross-built cores in gdb-multiarch, given
    their sysroot's C library)."""
    import ehbt_py as h
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    exp = expected_case(request, case)
    gdb = "gdb" if exp["arch"] == "x86_64" else "gdb-multiarch"
    h.need_gdb(gdb)
    setup = ["set sysroot " + SYSROOT[exp["arch"]]] if exp["arch"] in SYSROOT else []
    out = tmp_path / "ehbt.json"
    text = h.run_gdb(build_dir, [], setup + ["file " + exp["exe"], "core " + exp["core"],
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(out)],
                     gdb=gdb)
    assert out.exists(), text[-3000:]
    captured = out.read_text()
    doc = json.loads(captured[captured.find("{"):])
    [thread] = doc["threads"]
    assert thread["tid"] == exp["tid"]
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost"


@pytest.mark.parametrize("name", NAMES)
def test_cgo_without_c_unwind_tables(ehbt_bin, cgo_expected, name, tmp_path):
    """The executable with .eh_frame and .eh_frame_hdr removed (objcopy; the C part then has no
    table, as C built without unwind tables): the C frames come from the fallbacks, each
    validated (issue #32: a frame-pointer step skipped the frameless cfun3's caller and a scan
    added runtime.mcall, exit 0). Every frame must be a frame of the expected walk, in order,
    and a walk that misses one must not say outermost; this one gets them all."""
    exp = cgo_expected[name]
    exe = tmp_path / name
    subprocess.run(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                    exp["exe"], str(exe)], check=True)
    status, thread = walk_json(ehbt_bin, exp, "--exe", str(exe))
    got = [(f["pc"], plain(f["symbol"])) for f in thread["frames"]]
    want = [(f["pc"], plain(f["function"])) for f in exp["frames"]]
    rest = iter(want)
    assert all(frame in rest for frame in got), (got, want)  # a subsequence, in order
    if len(got) < len(want):
        assert thread["stop_reason"] != "outermost" and status == 1, thread["stop_detail"]
    assert got == want
    assert thread["stop_reason"] == "outermost" and status == 0
    sources = {plain(f["symbol"]): f["source"] for f in thread["frames"]}
    assert sources["cfun2"] == "scan" and sources["runtime.asmcgocall"] == "scan", sources


@pytest.mark.parametrize("case", CASES)
def test_lldb_plugin_on_cgo_core(build_dir, ehbt_bin, request, case, tmp_path):
    """The LLDB plugin's `ehbt --json` (lldb-16) on the cgo cores: the expected frames, exactly,
    and the same frames as the CLI's (pc, CFA, how each was found): the plugin only hands the
    engine LLDB's view of the core; the walk across Go's signal frame, the C frames and
    asmcgocall's stack switch is the engine's. The cross-built cores are opened with the
    C library of their sysroot, as the CLI is given it."""
    import ehbt_py as h
    import test_lldb_plugin as tl
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    exp = expected_case(request, case)
    pre = []
    if exp["arch"] in SYSROOT:
        pre.append("platform select remote-linux --sysroot %s" % SYSROOT[exp["arch"]])
    pre.append("target create %s --core %s" % (exp["exe"], exp["core"]))
    doc, _ = tl.ehbt_json(build_dir, tmp_path, pre, command="ehbt --json")
    [thread] = [t for t in doc["threads"] if t["tid"] == exp["tid"]]
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost", thread["stop_detail"]
    _, cli = walk_json(ehbt_bin, exp)
    assert [(f["pc"], f["cfa"], f["source"]) for f in thread["frames"]] == \
        [(f["pc"], f["cfa"], f["source"]) for f in cli["frames"]]
