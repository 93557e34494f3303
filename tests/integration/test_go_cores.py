# SPDX-License-Identifier: Apache-2.0
"""Go cores (cores/make_go_cores.py): a Go program's nil dereference, GOTRACEBACK=crash, built
unstripped, with -ldflags='-s -w', and position-independent stripped (x86-64), and unstripped
and stripped for arm64 and s390x (run under qemu; s390x is checked against Go's traceback
alone, from runtime.gopanic down, after the walk has crossed Go's signal frame). The crashing thread's frames must equal the
expectation (GDB live on the unstripped binary's tables, checked against or joined to Go's own
traceback; see the script): every pc, a name Go or the symbol table gives at the lookup pc, the
CFA Go's traceback prints as fp=, and the walk must cross Go's own signal frame and end at
runtime.goexit."""
import functools
import json
import os
import subprocess

import pytest

import cores_expect as ce
from test_triage import read_jsonl, tool_env, triage  # noqa: F401

GO_CORES = ce.CORES / "make_go_cores.py"
NAMES = ["go", "gostripped", "gopie"]
ARM64_NAMES = ["go", "gostripped"]


def load_expected(arch, names):
    if not os.path.exists("/usr/bin/go"):
        pytest.skip("Debian golang-go is not installed (scripts/install-deps.sh)")
    out = ce.OUT / arch
    missing = [n for n in names if not (out / (n + ".expected.json")).exists()]
    if missing:
        proc = subprocess.run(["/usr/bin/python3", str(GO_CORES), "--arch", arch,
                               "--only", ",".join(missing)],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return {n: json.loads((out / (n + ".expected.json")).read_text()) for n in names}


@functools.lru_cache(maxsize=None)
def expected_set(arch, names):
    """load_expected of a tuple of names, once per session: the modules' fixtures and their
    parametrised cases share it."""
    return load_expected(arch, list(names))


def case_expectation(case, names):
    """`name` (x86-64) or `arch/name` (aarch64, s390x) among `names`: that core's expectation."""
    arch, _, name = case.rpartition("/")
    return expected_set(arch or "x86_64", tuple(names))[name]


@pytest.fixture(scope="module")
def go_expected():
    return expected_set("x86_64", tuple(NAMES))


@pytest.fixture(scope="module")
def go_arm64_expected():
    return expected_set("aarch64", tuple(ARM64_NAMES))


def expected_case(request, case):
    """`name` (x86-64) or `arch/name`: that core's expectation."""
    return case_expectation(case, ARM64_NAMES if "/" in case else NAMES)


def crashing_thread(ehbt_bin, exp):
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    assert thread["tid"] == exp["tid"]
    assert doc["signal"]["number"] == exp["signal"]
    return proc.returncode, thread


@pytest.mark.parametrize("case", NAMES + [a + "/" + n for a in ("aarch64", "s390x")
                                          for n in ARM64_NAMES])
def test_go_core_matches_go_and_gdb(ehbt_bin, request, case):
    exp = expected_case(request, case)
    status, thread = crashing_thread(ehbt_bin, exp)
    frames = thread["frames"]
    if exp.get("tail"):
        # Go's traceback alone (s390x): the thread's last frames, after Go's signal frame.
        n = len(exp["frames"])
        assert len(frames) > n and frames[-n - 1]["source"] != "context", frames
        assert "signal" in [f["source"] for f in frames[:-n]], frames
        frames = frames[-n:]
    got = [(f["pc"], f["symbol"]) for f in frames]
    want = [(f["pc"], f["symbols"]) for f in exp["frames"]]
    assert [p for p, _ in got] == [p for p, _ in want], (got, want)
    for (pc, sym), (_, names) in zip(got, want):
        assert sym in names, "%s: %s not in %s" % (pc, sym, names)
    for f, e in zip(frames, exp["frames"]):
        if "cfa" in e:
            assert f["cfa"] == e["cfa"], (f, e)
    assert thread["stop_reason"] == "outermost", thread["stop_detail"]
    assert status == 0


def test_stripped_go_frames_come_from_pclntab(ehbt_bin, go_expected):
    """Without .debug_frame, the Go functions are stepped by their pcsp tables, including the
    frameless leaf (its caller is not skipped); with it, by the CFI."""
    sources = {}
    for name in NAMES:
        _, thread = crashing_thread(ehbt_bin, go_expected[name])
        sources[name] = {f["symbol"]: f["source"] for f in thread["frames"]}
    assert sources["gostripped"]["main.fxGoMiddle"] == "go_pclntab"
    assert sources["gostripped"]["main.fxGoOuter"] == "go_pclntab"
    assert sources["go"]["main.fxGoMiddle"] == "debug_frame"
    assert "go_pclntab" not in sources["go"].values()
    assert "frame_pointer" not in sources["gostripped"].values()


def test_go_pclntab_caller_must_prove_itself(build_dir, go_expected):
    """A caller found by Go's frame-size table is validated like every frame not from an unwind
    table (issue #32): with the return-address slot of a go_pclntab step overwritten by the
    return address of the frame above (it follows a call to the caller's function, not to the
    callee's), the walk keeps the frames below, takes no frame from that word, and does not
    end outermost. The memory is the core's, one word changed (read through a callback)."""
    import ehbt_py as h
    ehbt = h.import_ehbt(build_dir)  # skips when the Python module is not built
    exp = go_expected["gostripped"]
    target = ehbt.open_core(exp["core"])
    [thread] = [t for t in target.threads if t.tid == exp["tid"]]
    frames = ehbt.Unwinder().unwind(thread.regs, target, target).frames
    pcs = [f.pc for f in frames]
    # A callee i whose caller i + 1 came from its pcsp table, below a frame i + 2 (amd64: the
    # return address is the word just below the callee's CFA).
    i = next(i for i in range(len(frames) - 2)
             if frames[i + 1].source == "go_pclntab" and frames[i].symbolize() and
             frames[i + 2].pc != frames[i + 1].pc and
             int.from_bytes(target.read(frames[i].cfa - 8, 8), "little") == frames[i + 1].pc)
    slot, stale = frames[i].cfa - 8, frames[i + 2].pc

    def read(addr, size):
        data = bytearray(target.read(addr, size))
        for k in range(8):
            if addr <= slot + k < addr + len(data):
                data[slot + k - addr] = stale.to_bytes(8, "little")[k]
        return bytes(data)

    walk = ehbt.Unwinder().unwind(thread.regs, read, target)
    got = [f.pc for f in walk.frames]
    assert got[:i + 1] == pcs[:i + 1], (got, pcs)
    assert stale not in got[i + 1:i + 2], (got, walk.stop, walk.detail)
    assert walk.stop != "outermost", (got, walk.detail)


def test_arm64_go_frames_come_from_pclntab(ehbt_bin, go_arm64_expected):
    """arm64: stripped, every Go frame is stepped by its pcsp table (the frameless leaf's return
    address from x30, the others' from 0(sp)); unstripped, Go's own .debug_frame is used except
    where it is wrong: runtime.sigtramp (TOPFRAME, return address undefined) is stepped to the
    sigreturn trampoline, and the caller of runtime.sigpanic sits above the slot Go's signal
    handler pushed."""
    frames = {}
    for name in ARM64_NAMES:
        _, thread = crashing_thread(ehbt_bin, go_arm64_expected[name])
        frames[name] = thread["frames"]
    stripped = frames["gostripped"]
    assert {f["source"] for f in stripped[1:]} == {"go_pclntab", "signal"}, stripped
    plain = frames["go"]
    by_symbol = {f["symbol"]: f["source"] for f in plain}
    assert by_symbol["main.fxGoLeaf"] == "go_pclntab"  # stepped from sigpanic's frame
    assert by_symbol["main.fxGoMiddle"] == "debug_frame"
    [tramp] = [i for i, f in enumerate(plain) if f["symbol"] is None]
    assert plain[tramp - 1]["symbol"] == "runtime.sigtramp.abi0"
    assert plain[tramp]["source"] == "go_pclntab"
    assert plain[tramp + 1]["source"] == "signal"


def test_stripped_go_without_section_headers(ehbt_bin, go_expected, tmp_path):
    """With the section headers gone too, the table is found by its magic in the read-only
    segment: the same frames and names."""
    exp = go_expected["gostripped"]
    elf = bytearray(open(exp["exe"], "rb").read())
    assert elf[4] == 2  # ELFCLASS64: e_shoff at 0x28, e_shnum and e_shstrndx at 0x3c
    elf[0x28:0x30] = bytes(8)
    elf[0x3c:0x40] = bytes(4)
    exe = tmp_path / "gostripped"
    exe.write_bytes(bytes(elf))
    probe = subprocess.run(["readelf", "-S", str(exe)], capture_output=True, text=True)
    assert "no sections" in probe.stdout
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json", "--exe", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["modules"][0]["file"] == str(exe)
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    got = [(f["pc"], f["symbol"]) for f in thread["frames"]]
    want = [(f["pc"], f["symbols"]) for f in exp["frames"]]
    assert [p for p, _ in got] == [p for p, _ in want]
    for (pc, sym), (_, names) in zip(got, want):
        assert sym in names, "%s: %s not in %s" % (pc, sym, names)


# gopie too: the plugins must place the position-independent executable where the debugger
# relocated it, or the walk falls back to frame pointers and skips Go's frameless functions.
PLUGIN_NAMES = ["go", "gostripped", "gopie"]


@pytest.mark.parametrize("name", PLUGIN_NAMES)
def test_gdb_plugin_on_go_core(build_dir, go_expected, name, tmp_path):
    """The GDB plugin's `ehbt -json` on the core GDB itself cannot unwind past Go's signal
    trampoline: the expected frames."""
    import ehbt_py as h
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    h.need_gdb()
    exp = go_expected[name]
    out = tmp_path / "ehbt.json"
    text = h.run_gdb(build_dir, [exp["exe"], exp["core"]], [
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(out)])
    assert out.exists(), text[-3000:]
    captured = out.read_text()
    doc = json.loads(captured[captured.find("{"):])
    [thread] = doc["threads"]
    assert thread["tid"] == exp["tid"]
    got = [(f["pc"], f["symbol"]) for f in thread["frames"]]
    want = [(f["pc"], f["symbols"]) for f in exp["frames"]]
    assert [p for p, _ in got] == [p for p, _ in want], (got, want)
    for (pc, sym), (_, names) in zip(got, want):
        assert sym in names, "%s: %s not in %s" % (pc, sym, names)


@pytest.mark.parametrize("name", PLUGIN_NAMES)
def test_lldb_plugin_on_go_core(build_dir, go_expected, name, tmp_path):
    """The LLDB plugin's `ehbt --json` on the Go cores: the expected frames."""
    import ehbt_py as h
    import test_lldb_plugin as tl
    h.import_ehbt(build_dir)  # skips when the Python module is not built
    exp = go_expected[name]
    doc, _ = tl.ehbt_json(build_dir, tmp_path, ["target create %s --core %s" % (
        exp["exe"], exp["core"])], command="ehbt --json")
    [thread] = [t for t in doc["threads"] if t["tid"] == exp["tid"]]
    got = [(f["pc"], f["symbol"]) for f in thread["frames"]]
    want = [(f["pc"], f["symbols"]) for f in exp["frames"]]
    assert [p for p, _ in got] == [p for p, _ in want], (got, want)
    for (pc, sym), (_, names) in zip(got, want):
        assert sym in names, "%s: %s not in %s" % (pc, sym, names)


def test_triage_signs_go_crashes_by_the_programs_own_frames(tool_env, go_expected, tmp_path):
    """The three builds of one Go crash (plain, stripped, PIE) share one bucket, and its
    signature is gocrash.go's own call chain (fxGoLeaf <- fxGoMiddle <- fxGoOuter <- main):
    Go's signal handler, panic and re-raise frames above it only report the crash, and
    runtime.main below it starts every goroutine. `runtime.raise.abi0` (the unstripped
    build's ELF symbol) and `runtime.raise` (the stripped build's .gopclntab name) are one
    function."""
    cores = [go_expected[n]["core"] for n in NAMES]
    proc = triage(tool_env, "--db", tmp_path / "db", "--jsonl", tmp_path / "o.jsonl", *cores)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = read_jsonl(tmp_path / "o.jsonl")
    assert len(recs) == 3, recs
    assert {r["signature"] for r in recs} == {
        "main.fxGoLeaf | main.fxGoMiddle | main.fxGoOuter | main.main"}, recs
    assert len({r["bucket"] for r in recs}) == 1
    assert not any(r["unreliable"] or r["partial"] for r in recs), recs
