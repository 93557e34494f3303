# SPDX-License-Identifier: Apache-2.0
"""Go's runtime.systemstack crossing (issue #32): cores/programs/go/gosystemstack.go unlocks an
unlocked sync.Mutex; sync.fatal -> runtime.fatal -> fatalthrow runs its report and crash()
through runtime.systemstack, on the thread's g0 stack, where the process dies of SIGABRT
(GOTRACEBACK=crash). Built unstripped (the offsets of runtime.g/m/gobuf from its DWARF) and with
-ldflags='-s -w' (no DWARF: the offsets from the table of the Go version .go.buildinfo
records), x86-64 and arm64 (qemu). Expected frames (cores/make_go_cores.py, never ehbt's): GDB
on g0 up to runtime.systemstack, objdump for fatalthrow's return address, Go's own traceback
for the goroutine's frames (fp = CFA). Before, the walk stopped at systemstack (stripped:
no_unwind_info, exit 1) or left g0 by Go's .debug_frame for a frame that was not there
(unstripped: runtime.newproc, then bad_pc).

runtime.mcall (godeadlock.go, below): threads parked in mcall end there, and a goroutine
re-attached to its thread in a copy of the memory is crossed to."""
import json
import re
import subprocess

import pytest

from test_cgo import assert_exact, plain, sysroot_args, walk_json, frame_name
from test_go_cores import case_expectation, expected_set

NAMES = ["gosys", "gosysstripped"]
CASES = NAMES + ["aarch64/" + n for n in NAMES]


@pytest.fixture(scope="module")
def sys_expected():
    return expected_set("x86_64", tuple(NAMES))


def expected_case(request, case):
    return case_expectation(case, NAMES)


@pytest.mark.parametrize("case", CASES)
def test_systemstack_core_exact_frames(ehbt_bin, request, case):
    exp = expected_case(request, case)
    status, thread = walk_json(ehbt_bin, exp)
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost", thread["stop_detail"]
    assert status == 0


@pytest.mark.parametrize("case", CASES)
def test_systemstack_switch_from_the_runtimes_record(ehbt_bin, request, case):
    """fatalthrow's frame comes from the crossing (tagged go_pclntab), on the goroutine's stack
    (Go's heap: below g0's, the thread's); no frame from a frame-pointer step or a scan."""
    _, thread = walk_json(ehbt_bin, expected_case(request, case))
    frames = thread["frames"]
    assert not {"frame_pointer", "scan"} & {f["source"] for f in frames}
    i = [plain(f["symbol"]) for f in frames].index("runtime.systemstack")
    assert plain(frames[i + 1]["symbol"]) == "runtime.fatalthrow"
    assert frames[i + 1]["source"] == "go_pclntab"
    assert int(frames[i + 1]["cfa"], 16) < int(frames[i]["cfa"], 16) or \
        int(frames[i]["cfa"], 16) < int(frames[i - 1]["cfa"], 16)


def walk_with(build_dir, exp, patch):
    """The crashing thread walked through the Python module over the core's memory with some
    words changed: patch(frames, target) -> {address: 8-byte little-endian value}."""
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)  # skips when the Python module is not built
    target = ehbt.open_core(exp["core"])
    [thread] = [t for t in target.threads if t.tid == exp["tid"]]
    frames = ehbt.Unwinder().unwind(thread.regs, target, target).frames
    words = patch(frames, target)

    def read(addr, size):
        data = bytearray(target.read(addr, size))
        for slot, value in words.items():
            raw = value.to_bytes(8, "little")
            for k in range(8):
                if addr <= slot + k < addr + len(data):
                    data[slot + k - addr] = raw[k]
        return bytes(data)

    return frames, ehbt.Unwinder().unwind(thread.regs, read, target)


# Go 1.19's runtime2.go (also in the binary's DWARF): g.stack 0, g.m 48, g.sched 56; m.g0 0,
# m.curg 192; gobuf.sp 0, gobuf.pc 8.
G_M, G_SCHED, M_G0, M_CURG = 48, 56, 0, 192


# The register Go keeps g in: amd64 r14, arm64 x28 (DWARF numbers).
G_REG = {"x86_64": 14, "aarch64": 28}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("change, says", [
    ("m.g0", "is not its m's g0"),
    ("m.curg=0", "m.curg is nil"),
    ("curg.m", "belongs to m"),
    ("sched.pc", "is not runtime.systemstack_switch"),
    ("sched.sp", "outside the goroutine's stack"),
    ("g0.stack", "is not on g0's stack"),
    ("return", "systemstack"),
])
def test_systemstack_switch_must_prove_itself(build_dir, request, case, change, says):
    """A saved word of the way back (g0 -> m -> curg -> curg.sched -> the return address)
    changed in the core's memory: the walk keeps every frame down to systemstack, takes none
    from the changed state, and stops with a reason naming the check, never outermost."""
    exp = expected_case(request, case)

    def u64(target, addr):
        return int.from_bytes(target.read(addr, 8), "little")

    def patch(frames, target):
        i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.systemstack")
        g0 = frames[i].regs[G_REG[exp["arch"]]]
        m = u64(target, g0 + G_M)
        curg = u64(target, m + M_CURG)
        sched = curg + G_SCHED
        ssp = u64(target, sched)
        return {"m.g0": {m + M_G0: g0 + 8}, "m.curg=0": {m + M_CURG: 0},
                "curg.m": {curg + G_M: m + 8},
                "sched.pc": {sched + 8: frames[i + 1].pc},
                "sched.sp": {sched: u64(target, curg + 8) + 64},
                "g0.stack": {g0 + 8: u64(target, g0)},
                "return": {ssp: frames[i + 1].pc + 1}}[change]

    frames, walk = walk_with(build_dir, exp, patch)
    i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.systemstack")
    got = [f.pc for f in walk.frames]
    assert got == [f.pc for f in frames[:i + 1]], (got, walk.stop, walk.detail)
    assert walk.stop == "no_unwind_info", walk.detail
    assert "runtime.systemstack's stack switch" in walk.detail and says in walk.detail, \
        walk.detail


def test_unknown_go_version_without_dwarf_stops(ehbt_bin, sys_expected, tmp_path):
    """The stripped build with the Go version in .go.buildinfo changed to one the table does
    not know (go1.19.8 -> go1.99.8, same length): no DWARF, no known layout, so the walk stops
    at systemstack saying so (exit 1), keeping the frames above."""
    exp = sys_expected["gosysstripped"]
    data = bytearray(open(exp["exe"], "rb").read())
    at = data.find(b"\xff Go buildinf:")
    assert at >= 0 and data[at + 33:at + 41] == b"go1.19.8", data[at:at + 48]
    data[at + 33:at + 41] = b"go1.99.8"
    exe = tmp_path / "gosysstripped"
    exe.write_bytes(bytes(data))
    status, thread = walk_json(ehbt_bin, exp, "--exe", str(exe))
    names = [plain(f["symbol"]) for f in thread["frames"]]
    want = [plain(f["function"]) for f in exp["frames"]]
    assert names == want[:want.index("runtime.systemstack") + 1], names
    assert thread["stop_reason"] == "no_unwind_info"
    assert "Go version go1.99.8 is not one whose layout is known" in thread["stop_detail"]
    assert status == 1


@pytest.mark.parametrize("case", ["gosys", "aarch64/gosys"])
def test_unstripped_offsets_come_from_dwarf(ehbt_bin, request, case, tmp_path):
    """The unstripped build with its recorded Go version changed to one the table does not know:
    the offsets come from its DWARF (runtime.g, runtime.m, runtime.gobuf, which Go 1.19 puts
    in a later one of several units named "runtime"), so the walk is still exact."""
    exp = dict(expected_case(request, case))
    data = bytearray(open(exp["exe"], "rb").read())
    at = data.find(b"\xff Go buildinf:")
    assert data[at + 33:at + 41] == b"go1.19.8", data[at:at + 48]
    data[at + 33:at + 41] = b"go1.99.8"
    exe = tmp_path / "gosys"
    exe.write_bytes(bytes(data))
    status, thread = walk_json(ehbt_bin, exp, "--exe", str(exe))
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost", thread["stop_detail"]
    assert status == 0


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_version_table_matches_dwarf(build_dir, request, arch):
    """The go1.19.8 table equals the unstripped build's DWARF (runtime.g/m/gobuf members, read
    with readelf, not ehbt) for both architectures."""
    exp = case_expectation(arch + "/gosys", NAMES)
    out = subprocess.run(["readelf", "--debug-dump=info", exp["exe"]], capture_output=True,
                         text=True, timeout=300).stdout
    offsets = {}
    struct = kind = member = None
    for line in out.splitlines():
        m = re.search(r"DW_TAG_(\w+)", line)
        if m:
            kind = m.group(1)
            continue
        m = re.search(r"DW_AT_name\s*:\s*(?:\(.*?\):\s*)?(\S+)", line)
        if m and kind == "structure_type":
            struct = m.group(1)
        elif m and kind == "member":
            member = m.group(1)
        m2 = re.search(r"DW_AT_data_member_location\s*:\s*(\d+)", line)
        if m2 and kind == "member" and struct in ("runtime.g", "runtime.m", "runtime.gobuf"):
            offsets.setdefault((struct, member), int(m2.group(1)))
    want = {("runtime.g", "stack"): 0, ("runtime.g", "m"): G_M, ("runtime.g", "sched"): G_SCHED,
            ("runtime.m", "g0"): M_G0, ("runtime.m", "curg"): M_CURG,
            ("runtime.gobuf", "sp"): 0, ("runtime.gobuf", "pc"): 8, ("runtime.gobuf", "bp"): 48}
    assert {k: offsets.get(k) for k in want} == want


# runtime.mcall (cores/programs/go/godeadlock.go): main parks in a channel receive through
# mcall(park_m), which detaches it (dropg: m.curg = nil) before scheduling; Go 1.19's sysmon
# then reports the deadlock and crashes on its own thread. x86-64 and arm64.
DEADLOCK = ["godeadlock", "godeadlockstripped"]
DEADLOCK_CASES = DEADLOCK + ["aarch64/" + n for n in DEADLOCK]


def deadlock_case(request, case):
    return case_expectation(case, DEADLOCK)


@pytest.mark.parametrize("case", DEADLOCK_CASES)
def test_mcall_detached_ends_the_walk_there(ehbt_bin, request, case):
    """Every thread parked in mcall ends at it: outermost (g0's stack starts there, as Go's
    own traceback says), the detail naming the detached goroutine, no frame read from g0's
    stack beyond (before, unstripped: Go's .debug_frame for mcall gave runtime.newproc from a
    stale word, then bad_pc, exit 1)."""
    exp = deadlock_case(request, case)
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json", "--all-threads"] +
                          sysroot_args(exp),
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    parked = [t for t in doc["threads"]
              if any(plain(f["symbol"]) == "runtime.mcall" for f in t["frames"])]
    assert parked, [t["tid"] for t in doc["threads"]]
    for t in parked:
        names = [plain(f["symbol"]) for f in t["frames"]]
        assert names[-3:] == ["runtime.schedule", "runtime.park_m", "runtime.mcall"], names
        assert t["stop_reason"] == "outermost"
        assert "runtime.mcall's stack switch" in t["stop_detail"] and \
            "m.curg is nil" in t["stop_detail"], t["stop_detail"]
    assert all(t["stop_reason"] == "outermost" for t in doc["threads"])
    assert proc.returncode == 0


def goroutine_one(target, exp):
    """Goroutine 1's g, found in the core without ehbt's walk: the one runtime.g (in the
    64 KiB-aligned pages within 1 MiB of its stack) whose stack {lo, hi} holds every CFA Go
    printed for it and whose sched.pc is Go's gopark pc."""
    import struct
    pc = int(exp["goroutine"][0]["pc"], 16)
    cfas = [int(g["cfa"], 16) for g in exp["goroutine"]]
    base = cfas[0] & ~0xfffff
    found = []
    for chunk in range(base - 0x100000, base + 0x100000, 0x10000):
        try:
            data = target.read(chunk, 0x10000)
        except Exception:  # not in the core
            continue
        if len(data) < 0x10000:
            continue
        w = struct.unpack("<%dQ" % (len(data) // 8), data)
        for k in range(len(w) - (G_SCHED // 8 + 2)):
            if w[k + G_SCHED // 8 + 1] == pc and w[k] <= cfas[0] and cfas[-1] <= w[k + 1] and \
                    w[k + 1] - w[k] < (1 << 30):
                found.append(chunk + 8 * k)
    assert len(found) == 1, [hex(g) for g in found]
    return found[0]


def mcall_walk(build_dir, exp, extra=None):
    """A thread parked in mcall walked over the core's memory with goroutine 1 re-attached to
    it (m.curg = gp, gp.m = m, as while mcall's function runs, before dropg). amd64: the thread
    whose mcall pushed gp on g0 (its argument, `PUSHQ AX`); arm64 passes it in a register
    only: the first thread in mcall."""
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)
    target = ehbt.open_core(exp["core"])
    gp = goroutine_one(target, exp)
    g_reg = G_REG[exp["arch"]]
    chosen = None
    for t in target.threads:
        frames = ehbt.Unwinder().unwind(t.regs, target, target).frames
        names = [frame_name(f) for f in frames]
        if "runtime.mcall" not in names:
            continue
        i = names.index("runtime.mcall")
        if exp["arch"] == "x86_64":
            pushed = int.from_bytes(target.read(frames[i].regs[7], 8), "little")
            if pushed != gp:
                continue
        chosen = (t, frames, i)
        break
    assert chosen, "no thread in mcall"
    thread, frames, i = chosen
    g0 = frames[i].regs[g_reg]
    m = int.from_bytes(target.read(g0 + G_M, 8), "little")
    words = {m + M_CURG: gp, gp + G_M: m}
    if extra:
        words.update(extra(gp, m))

    def read(addr, size):
        data = bytearray(target.read(addr, size))
        for slot, value in words.items():
            raw = value.to_bytes(8, "little")
            for k in range(8):
                if addr <= slot + k < addr + len(data):
                    data[slot + k - addr] = raw[k]
        return bytes(data)

    return frames, ehbt.Unwinder().unwind(thread.regs, read, target)


@pytest.mark.parametrize("case", DEADLOCK_CASES)
def test_mcall_attached_crosses_to_the_goroutine(build_dir, request, case):
    """The same core with the goroutine re-attached (as it is while mcall's function runs,
    before dropg): the walk crosses mcall to the goroutine's frames, exactly Go's traceback of
    goroutine 1 (pc and fp = CFA), and ends at runtime.goexit."""
    exp = deadlock_case(request, case)
    frames, walk = mcall_walk(build_dir, exp)
    i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.mcall")
    assert [f.pc for f in walk.frames[:i + 1]] == [f.pc for f in frames[:i + 1]]
    got = [(hex(f.pc), hex(f.cfa)) for f in walk.frames[i + 1:]]
    want = [(g["pc"], g["cfa"]) for g in exp["goroutine"]]
    assert got == want, (got, walk.stop, walk.detail)
    assert walk.frames[i + 1].source == "go_pclntab"
    assert walk.stop == "outermost", walk.detail


@pytest.mark.parametrize("case", DEADLOCK_CASES)
@pytest.mark.parametrize("change, says", [
    ("sched.pc", "runtime.mcall's stack switch"),
    ("sched.sp", "outside the goroutine's stack"),
    ("curg.m", "belongs to m"),
])
def test_mcall_switch_must_prove_itself(build_dir, request, case, change, says):
    exp = deadlock_case(request, case)

    def extra(gp, m):
        # chanrecv's return address: after a direct call of gopark, not of mcall.
        return {"sched.pc": {gp + G_SCHED + 8: int(exp["goroutine"][1]["pc"], 16)},
                "sched.sp": {gp + G_SCHED: 8},
                "curg.m": {gp + G_M: m + 8}}[change]

    frames, walk = mcall_walk(build_dir, exp, extra)
    i = next(i for i, f in enumerate(frames) if frame_name(f) == "runtime.mcall")
    assert [f.pc for f in walk.frames] == [f.pc for f in frames[:i + 1]], (walk.stop, walk.detail)
    assert walk.stop == "no_unwind_info", walk.detail
    assert says in walk.detail, walk.detail


@pytest.mark.parametrize("name", NAMES)
def test_gdb_plugin_on_systemstack_core(build_dir, sys_expected, name, tmp_path):
    """The GDB plugin's `ehbt -json`, where GDB's own backtrace leaves g0 by Go's .debug_frame
    for systemstack as if sp had not moved: the expected frames, exactly."""
    import ehbt_py as h
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    h.need_gdb()
    exp = sys_expected[name]
    out = tmp_path / "ehbt.json"
    text = h.run_gdb(build_dir, [exp["exe"], exp["core"]], [
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(out)])
    assert out.exists(), text[-3000:]
    captured = out.read_text()
    doc = json.loads(captured[captured.find("{"):])
    [thread] = doc["threads"]
    assert thread["tid"] == exp["tid"]
    assert_exact(thread["frames"], exp)
    assert thread["stop_reason"] == "outermost"
