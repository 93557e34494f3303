# SPDX-License-Identifier: Apache-2.0
"""Go source lines and inlined frames from .gopclntab (#28), stripped binaries too: on the
goinline cores (cores/make_go_cores.py: a nil dereference in a function inlined twice, main
calling through an inlined function; unstripped and -ldflags='-s -w'; x86-64 natively, arm64
under qemu), `ehbt core --json` must give, for every frame Go's own traceback lists (from
runtime.gopanic down), the traceback's function, file, line and inline chain exactly (the
traceback prints inlined calls as frames of their own, with their file:line); the frames
above it (the SIGABRT raise, Go's signal handler), which the traceback does not print, must
have the innermost position `go tool addr2line` gives on the unstripped binary. The same on
the Go cores of test_go_cores.py (gocrash.go: runtime.panicmem inlined into runtime.sigpanic
on x86-64; unstripped, stripped, and stripped position-independent)."""
import json
import os
import re
import shutil
import subprocess

import pytest

import cores_expect as ce
import ehbt_py as h
from test_lldb_plugin import LLDB, run_lldb

GO_CORES = ce.CORES / "make_go_cores.py"
NAMES = ["goinline", "goinlinestripped"]
CASES = NAMES + ["aarch64/" + n for n in NAMES] + ["go", "gostripped", "gopie"] + [
    "aarch64/go", "aarch64/gostripped"]
# The unstripped build of the same code (go tool addr2line's input).
REFERENCE = {"goinline": "goinline", "goinlinestripped": "goinline", "go": "go",
             "gostripped": "go", "gopie": "gopie.unstripped"}


def expected(arch, name):
    if not os.path.exists("/usr/bin/go"):
        pytest.skip("Debian golang-go is not installed (scripts/install-deps.sh)")
    if arch != "x86_64" and not shutil.which("qemu-aarch64"):
        pytest.skip("qemu-aarch64 is not installed")
    path = ce.OUT / arch / (name + ".expected.json")
    if not path.exists():
        proc = subprocess.run(["/usr/bin/python3", str(GO_CORES), "--arch", arch, "--only", name],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(path.read_text())


def traceback_frames(path):
    """The running goroutine's physical frames, each with the inlined calls Go printed above
    it (innermost first): [{"function", "file", "line", "pc", "inlined": [(fn, file, line)]}]."""
    text = open(path, errors="replace").read()
    block = re.search(r"^goroutine \d+ \[running\]:\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    assert block, "no running goroutine in " + path
    frames, inlined, name = [], [], None
    for line in block.group(1).splitlines():
        if not line.startswith("\t"):
            name = re.sub(r"\(.*$", "", line)
            name = "runtime.gopanic" if name == "panic" else name
            continue
        m = re.match(r"\t(.*):(\d+)(?: \+0x[0-9a-f]+ fp=\S+ sp=\S+ pc=(0x[0-9a-f]+))?$", line)
        assert m, line
        if m.group(3) is None:
            inlined.append((name, m.group(1), int(m.group(2))))
            continue
        frames.append({"function": name, "file": m.group(1), "line": int(m.group(2)),
                       "pc": int(m.group(3), 16), "inlined": inlined})
        inlined = []
    return frames


def addr2line(exe, pcs):
    """The innermost file:line of each pc: Go's own addr2line (from .gopclntab), or for a
    position-independent build, which it cannot read, binutils' addr2line on the DWARF line
    table Go's compiler wrote."""
    pie = exe.endswith("gopie.unstripped")
    cmd = ["addr2line", "-e", exe] if pie else ["/usr/bin/go", "tool", "addr2line", exe]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         input="".join("0x%x\n" % pc for pc in pcs))
    lines = out.stdout.splitlines()
    if pie:
        assert len(lines) == len(pcs)
        return [re.sub(r" \(discriminator \d+\)$", "", line) for line in lines]
    assert len(lines) == 2 * len(pcs)
    return [lines[2 * i + 1] for i in range(len(pcs))]


def crashing_thread(ehbt_bin, exp, *args):
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"], "--json"] + list(args),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    [thread] = [t for t in doc["threads"] if t["crashing"]]
    assert thread["tid"] == exp["tid"]
    return thread["frames"]


def position(loc):
    return None if loc is None else (loc["file"], loc["line"], loc["column"])


@pytest.mark.parametrize("case", CASES)
def test_go_lines_equal_go_traceback(ehbt_bin, case):
    arch, _, name = case.rpartition("/")
    exp = expected(arch or "x86_64", name)
    compare_with_go(crashing_thread(ehbt_bin, exp), exp, name)


def compare_with_go(frames, exp, name):
    """Every frame of Go's traceback, and the frames above it, in `frames` (ehbt-backtrace/1
    frames of the crashing thread), as the module's docstring says."""
    go = traceback_frames(exp["traceback"])
    assert go[0]["function"] == "runtime.gopanic" and go[-1]["function"] == "runtime.goexit"
    pcs = [int(f["pc"], 16) for f in frames]
    assert go[0]["pc"] in pcs, (hex(go[0]["pc"]), frames)
    start = pcs.index(go[0]["pc"])
    tail = frames[start:]
    assert [int(f["pc"], 16) for f in tail] == [g["pc"] for g in go]
    for f, g in zip(tail, go):
        # Assembly functions carry an ABI suffix only in the ELF symbol table.
        assert re.sub(r"\.abi0$", "", f["symbol"]) == g["function"], (f, g)
        assert position(f["location"]) == (g["file"], g["line"], None), (f, g)
        got = [(c["function"], position(c["location"])) for c in f["inlined"]]
        want = [(fn, (file, line, None)) for fn, file, line in g["inlined"]]
        assert got == want, (f["symbol"], got, want)
    if name in NAMES:
        # The point of the case: two calls inlined at the fault, one at main's call.
        by_name = {f["symbol"]: f for f in tail}
        assert [c["function"] for c in by_name["main.fxInOuter"]["inlined"]] == [
            "main.fxInLeaf", "main.fxInMid"]
        assert [c["function"] for c in by_name["main.main"]["inlined"]] == ["main.fxInWrap"]

    # Above runtime.gopanic (the re-raised SIGABRT in Go's signal handler): the innermost
    # position at each frame's lookup pc (the pc for frame 0, the trampoline and the frame
    # the signal interrupted; pc - 1 for return addresses), as Go's addr2line gives it.
    reference = os.path.join(os.path.dirname(exp["exe"]), REFERENCE[name])
    above = [f for f in frames[:start] if f["module"] is not None and f["symbol"] is not None]
    assert len(above) >= 3, frames[:start]
    lookups = []
    for f in above:
        i = frames.index(f)
        # The trampoline is the frame whose caller was found through the signal frame.
        trampoline = i + 1 < len(frames) and frames[i + 1]["source"] == "signal"
        exact = i == 0 or f["source"] == "signal" or trampoline
        lookups.append(int(f["module_offset"], 16) - (0 if exact else 1))
    for f, want in zip(above, addr2line(reference, lookups)):
        innermost = f["inlined"][0]["location"] if f["inlined"] else f["location"]
        assert innermost is not None, f
        assert "%s:%d" % (innermost["file"], innermost["line"]) == want, f


# The debugger plugins' `ehbt` builds its report from the debugger's own walk and modules
# (Report.add_thread), through the same lines dispatcher as the CLI: Go's frames get their
# lines there too. GDB 13 (gdb-multiarch for arm64) and LLDB 16 both load these static Go
# cores.
PLUGIN_CASES = NAMES + ["aarch64/" + n for n in NAMES] + ["go", "gostripped"]


def gdb_plugin_document(build_dir, exp, arch, tmp_path):
    gdb = "gdb" if arch == "x86_64" else "gdb-multiarch"
    h.need_gdb(gdb)
    out_file = tmp_path / "gdb.json"
    out = h.run_gdb(build_dir, [], [
        "file " + exp["exe"], "core " + exp["core"],
        "python open(%r, 'w').write(gdb.execute('ehbt --json', to_string=True))" % str(
            out_file)], gdb=gdb)
    assert out_file.exists(), out[-3000:]
    return one_document(out_file.read_text())


def lldb_plugin_document(build_dir, exp, arch, tmp_path):
    if shutil.which(LLDB) is None:
        pytest.skip(LLDB + " not installed")
    out_file = tmp_path / "lldb.json"
    # A static Go binary carries no OS note: LLDB reads its arm64 core only when told it is
    # Linux's.
    triple = "" if arch == "x86_64" else "--arch aarch64-unknown-linux-gnu "
    out = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s ehbt --json" % out_file],
                   pre=["target create %s%s --core %s" % (triple, exp["exe"], exp["core"])])
    assert out_file.exists(), out[-3000:]
    return one_document(out_file.read_text())


def one_document(text):
    docs = [line for line in text.splitlines() if line.startswith("{")]
    assert len(docs) == 1, text[-3000:]
    return json.loads(docs[0])


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
@pytest.mark.parametrize("case", PLUGIN_CASES)
def test_plugins_give_go_lines(build_dir, ehbt_bin, debugger, case, tmp_path):
    """GDB's and LLDB's `ehbt --json` on a Go core: the crashing thread's positions and inline
    chains are Go's traceback (and go tool addr2line above it), as the CLI's are."""
    arch, _, name = case.rpartition("/")
    arch = arch or "x86_64"
    exp = expected(arch, name)
    if debugger == "gdb":
        doc = gdb_plugin_document(build_dir, exp, arch, tmp_path)
    else:
        doc = lldb_plugin_document(build_dir, exp, arch, tmp_path)
    [thread] = [t for t in doc["threads"] if t["crashing"]] or doc["threads"][:1]
    assert thread["tid"] == exp["tid"]
    compare_with_go(thread["frames"], exp, name)
    cli = crashing_thread(ehbt_bin, exp)
    lines = [(f["pc"], f["location"], f["inlined"]) for f in thread["frames"]]
    assert lines == [(f["pc"], f["location"], f["inlined"]) for f in cli]


# C code linked into a Go binary (cgo) has no .gopclntab entry: its lines come from the DWARF
# gcc wrote. Its store is inlined into fx_cgo_crash, and Go's signal handler makes the fault
# look like a call to runtime.sigpanic, so the frame is looked up at its pc, as Go's traceback
# names it ("[signal SIGSEGV ... pc=0x...]"); GDB, which does not know that, looks up pc - 1.
CGO_PROGRAM = """package main

/*
static inline __attribute__((always_inline)) void fx_cgo_store(int *p, int v) {
\t*(volatile int *)p = v; // at:store
}

__attribute__((noinline)) void fx_cgo_crash(int v) {
\tint *p = 0;
\t__asm__("" : "+r"(p));
\tfx_cgo_store(p, v + 1); // at:call
}
*/
import "C"

func main() {
\tC.fx_cgo_crash(7)
}
"""


def test_cgo_c_frame_has_its_dwarf_lines(ehbt_bin, tmp_path):
    if not os.path.exists("/usr/bin/go") or not shutil.which("gcc"):
        pytest.skip("Debian golang-go and gcc are needed")
    src = tmp_path / "main.go"
    src.write_text(CGO_PROGRAM)
    (tmp_path / "go.mod").write_text("module cgocrash\n\ngo 1.19\n")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "cache"),
               GOPATH=str(tmp_path / "gopath"), GOFLAGS="-mod=mod", CGO_ENABLED="1",
               CGO_CFLAGS="-O2 -g", GOTOOLCHAIN="local")
    subprocess.run(["/usr/bin/go", "build", "-o", "cgocrash", "."], cwd=tmp_path, env=env,
                   check=True, capture_output=True, timeout=600)
    exe = tmp_path / "cgocrash"
    core = h.make_core(exe, tmp_path, env=dict(env, GOTRACEBACK="crash"))
    # The same run again for what Go printed (a non-PIE executable: the same pcs).
    run = subprocess.run([str(exe)], cwd=tmp_path, env=dict(env, GOTRACEBACK="single"),
                         capture_output=True, text=True, timeout=60)
    fault = re.search(r"\[signal SIGSEGV: .* pc=(0x[0-9a-f]+)\]", run.stderr)
    assert fault, run.stderr
    proc = subprocess.run([str(ehbt_bin), "core", str(core), "--exe", str(exe), "--json"],
                          capture_output=True, text=True, timeout=300)
    # Exit 1: the walk past runtime.asmcgocall (Go's unwinding through cgo) may stop early.
    assert proc.returncode in (0, 1), proc.stderr
    [thread] = [t for t in json.loads(proc.stdout)["threads"] if t["crashing"]]
    at = {m.group(1): n for n, line in enumerate(CGO_PROGRAM.splitlines(), 1)
          for m in [re.search(r"// at:(\w+)", line)] if m}
    [c] = [f for f in thread["frames"] if int(f["pc"], 16) == int(fault.group(1), 16)]
    assert c["symbol"] == "fx_cgo_crash", c
    file_line = lambda loc: loc and (loc["file"], loc["line"])  # noqa: E731 (gcc's columns)
    assert [(i["function"], file_line(i["location"])) for i in c["inlined"]] == [
        ("fx_cgo_store", (str(src), at["store"]))], c
    assert file_line(c["location"]) == (str(src), at["call"]), c
    # Its callee, runtime.sigpanic, keeps the line Go's traceback gives it.
    callee = thread["frames"][thread["frames"].index(c) - 1]
    sigpanic = re.search(r"^runtime\.sigpanic\(\)\n\t(\S+):(\d+) ", run.stderr, re.M)
    assert callee["symbol"] == "runtime.sigpanic" and sigpanic, (callee, run.stderr)
    assert file_line(callee["location"]) == (sigpanic.group(1), int(sigpanic.group(2)))


def marked_lines():
    """Line of each `// at:NAME` marker in the program."""
    src = (ce.CORES / "programs" / "go" / "goinline.go").read_text().splitlines()
    return {m.group(1): n for n, line in enumerate(src, 1)
            for m in [re.search(r"// at:(\w+)", line)] if m}


@pytest.mark.parametrize("name", NAMES)
def test_go_lines_text(ehbt_bin, name):
    """The text numbers the inlined calls as GDB does, each `at file:line` (the lines the
    program marks), then the physical frame."""
    exp = expected("x86_64", name)
    proc = subprocess.run([str(ehbt_bin), "core", exp["core"]], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    [outer] = [g for g in traceback_frames(exp["traceback"]) if g["function"] == "main.fxInOuter"]
    src, at = outer["file"], marked_lines()
    lines = proc.stdout.splitlines()
    leaf = [i for i, line in enumerate(lines) if " main.fxInLeaf " in line]
    assert len(leaf) == 1, proc.stdout
    i = leaf[0]
    assert lines[i].endswith(" at %s:%d" % (src, at["leaf"])), lines[i]
    assert " main.fxInMid " in lines[i + 1], lines[i + 1]
    assert lines[i + 1].endswith(" at %s:%d" % (src, at["mid"])), lines[i + 1]
    assert " main.fxInOuter " in lines[i + 2], lines[i + 2]
    assert lines[i + 2].endswith(" at %s:%d" % (src, at["outer"])), lines[i + 2]
    number = [int(re.match(r"#(\d+) ", lines[k]).group(1)) for k in (i, i + 1, i + 2)]
    assert number == [number[0], number[0] + 1, number[0] + 2], lines[i:i + 3]
