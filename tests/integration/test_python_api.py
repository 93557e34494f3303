# SPDX-License-Identifier: Apache-2.0
"""The `ehbt` Python package against stacks whose frames are known independently: a stack
laid out by hand from the psABI frame layout (function and return addresses from nm and
objdump), and real cores and processes whose frames GDB reports."""

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time

import pytest

import ehbt_py as h

# A -O0 frame-pointer program: f2's body keeps CFA = rbp + 16, saved rbp at CFA - 16 and the
# return address at CFA - 8 (x86-64 psABI frame layout with a frame pointer).
SYNTH_C = """
int f2(int x) { volatile int y = x * 3; return y + 1; }
int f1(int x) { volatile int z = f2(x + 1); return z + 2; }
int main(int argc, char **argv) { (void)argv; return f1(argc); }
"""

BIAS = 0x555555554000
STACK = 0x7ffd12340000
B0, B1, B2 = STACK + 0x100, STACK + 0x140, STACK + 0x180  # rbp of f2, f1, main


@pytest.fixture(scope="module")
def ehbt(build_dir):
    return h.import_ehbt(build_dir)


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """The program, its symbols and call return addresses (from binutils, not from ehbt)."""
    if os.uname().machine != "x86_64":
        pytest.skip("the hand-made stack is x86-64")
    d = tmp_path_factory.mktemp("synth")
    exe = h.compile_c(SYNTH_C, d / "synth", flags=("-O0", "-fno-omit-frame-pointer", "-pie",
                                                   "-fpie"))
    syms = h.symbol_addresses(exe)
    ret_f1 = h.return_addresses(exe, "f2")[0]  # in f1, after `call f2`
    ret_main = h.return_addresses(exe, "f1")[0]  # in main, after `call f1`
    stack = bytearray(0x200)

    def put(addr, value):
        stack[addr - STACK:addr - STACK + 8] = struct.pack("<Q", value)

    put(B0, B1)
    put(B0 + 8, BIAS + ret_f1)
    put(B1, B2)
    put(B1 + 8, BIAS + ret_main)
    put(B2, 0)
    put(B2 + 8, 0)  # main "returns" to 0: the walk must end there
    return {"exe": exe, "syms": syms, "ret_f1": ret_f1, "ret_main": ret_main,
            "stack": bytes(stack), "pc0": BIAS + syms["f2"] + 0x10}


def stack_reader(stack, fault=None, calls=None):
    """read(addr, size) over the hand-made stack; raises outside it or inside `fault`."""
    def read(addr, size):
        if calls is not None:
            calls.append((addr, size))
        if fault and addr < fault[1] and addr + size > fault[0]:
            raise OSError("unreadable")
        if addr < STACK or addr + size > STACK + len(stack):
            raise OSError("unmapped")
        return stack[addr - STACK:addr - STACK + size]
    return read


def synth_walk(ehbt, synth, reader, **kw):
    image = ehbt.Image.open(str(synth["exe"]))
    modules = ehbt.ModuleSet([ehbt.Module(image, path="/opt/synth", bias=BIAS)])
    regs = ehbt.RegisterSet("x86_64", {6: B0, 7: B0 - 0x20}, pc=synth["pc0"])
    return ehbt.Unwinder().unwind(regs, reader, modules, **kw)


def test_synthetic_stack_unwinds_to_main(ehbt, synth):
    bt = synth_walk(ehbt, synth, stack_reader(synth["stack"]))
    frames = bt.frames
    assert [f.pc for f in frames] == [synth["pc0"], BIAS + synth["ret_f1"],
                                      BIAS + synth["ret_main"]], bt
    assert [f.cfa for f in frames] == [B0 + 16, B1 + 16, B2 + 16]
    assert [f.symbolize()[0] for f in frames] == ["f2", "f1", "main"]
    assert frames[1].symbolize()[1] == BIAS + synth["syms"]["f1"]
    assert [f.source for f in frames] == ["context", "eh_frame", "eh_frame"]
    assert [f.module_offset for f in frames] == [synth["syms"]["f2"] + 0x10, synth["ret_f1"],
                                                 synth["ret_main"]]
    # The caller's frame pointer is the value saved at CFA - 16, its sp the CFA.
    assert frames[1].regs[6] == B1 and frames[1].regs.sp == B0 + 16
    assert frames[2].regs[6] == B2
    assert bt.stop in ("outermost", "bad_pc"), (bt.stop, bt.detail)
    assert frames[0].module.path == "/opt/synth"


@pytest.mark.parametrize("how", ["raise", "short", "none", "garbage"])
def test_memory_fault_gives_partial_trace(ehbt, synth, how):
    good = stack_reader(synth["stack"])

    def read(addr, size):
        if addr < B1 + 16 and addr + size > B1:  # f1's saved rbp and return address
            if how == "raise":
                raise ValueError("no such memory")
            if how == "short":
                return good(addr, size)[:max(0, B1 - addr)]
            if how == "none":
                return None
            return 12345  # not bytes at all
        return good(addr, size)

    bt = synth_walk(ehbt, synth, read)
    assert [f.pc for f in bt.frames] == [synth["pc0"], BIAS + synth["ret_f1"]]
    assert bt.stop == "memory_fault", (bt.stop, bt.detail)
    assert not bt.complete


def test_memory_cache_reads_pages_once(ehbt, synth):
    cached, direct = [], []
    synth_walk(ehbt, synth, stack_reader(synth["stack"], calls=cached))
    bt = synth_walk(ehbt, synth, stack_reader(synth["stack"], calls=direct), cache_pages=False)
    assert len(bt.frames) == 3
    # The whole stack lies in one page: fetched once (the fetch fails past the end of the
    # hand-made stack, then each word is read alone), never more than the uncached walk.
    assert len(cached) <= len(direct) + 1


def test_interrupt_in_memory_callable_propagates(ehbt, synth):
    def read(addr, size):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        synth_walk(ehbt, synth, read)


def test_step_by_step_matches_walk(ehbt, synth):
    image = ehbt.Image.open(str(synth["exe"]))
    modules = ehbt.ModuleSet([ehbt.Module(image, bias=BIAS)])
    regs = ehbt.RegisterSet("x86_64", {6: B0, 7: B0 - 0x20}, pc=synth["pc0"])
    unwinder = ehbt.Unwinder()
    frame = unwinder.first_frame(regs, modules)
    pcs = [frame.pc]
    reader = stack_reader(synth["stack"])
    for _ in range(10):
        step = unwinder.step(frame, reader, modules)
        if not step:
            break
        assert step.cfa == [B0 + 16, B1 + 16][len(pcs) - 1]
        frame = step.caller
        pcs.append(frame.pc)
    assert pcs == [synth["pc0"], BIAS + synth["ret_f1"], BIAS + synth["ret_main"]]


# The same program for i386 (i686-linux-gnu-gcc), its stack laid out by the i386 psABI frame
# layout with a frame pointer: CFA = ebp + 8, saved ebp at CFA - 8, return address at CFA - 4,
# all 4-byte words. DWARF numbers from the i386 psABI: esp 4, ebp 5.
BIAS32 = 0x56555000
STACK32 = 0xffd10000
E0, E1, E2 = STACK32 + 0x100, STACK32 + 0x140, STACK32 + 0x180  # ebp of f2, f1, main


@pytest.fixture(scope="module")
def synth32(tmp_path_factory):
    import shutil

    if shutil.which("i686-linux-gnu-gcc") is None:
        pytest.fail("i686-linux-gnu-gcc missing (scripts/install-deps.sh installs it)")
    d = tmp_path_factory.mktemp("synth32")
    exe = h.compile_c(SYNTH_C, d / "synth32", compiler="i686-linux-gnu-gcc",
                      flags=("-O0", "-fno-omit-frame-pointer", "-pie", "-fpie"))
    syms = h.symbol_addresses(exe)
    stack = bytearray(0x200)

    def put(addr, value):
        stack[addr - STACK32:addr - STACK32 + 4] = struct.pack("<I", value)

    ret_f1 = h.return_addresses(exe, "f2")[0]
    ret_main = h.return_addresses(exe, "f1")[0]
    put(E0, E1)
    put(E0 + 4, BIAS32 + ret_f1)
    put(E1, E2)
    put(E1 + 4, BIAS32 + ret_main)
    put(E2, 0)
    put(E2 + 4, 0)
    # f2's first instructions are push %ebp; mov %esp,%ebp (3 bytes); 0x10 is past them.
    return {"exe": exe, "syms": syms, "ret_f1": ret_f1, "ret_main": ret_main,
            "stack": bytes(stack), "pc0": BIAS32 + syms["f2"] + 0x10}


def test_i386_synthetic_stack_unwinds_to_main(ehbt, synth32):
    def read(addr, size):
        if addr < STACK32 or addr + size > STACK32 + len(synth32["stack"]):
            raise OSError("unmapped")
        return synth32["stack"][addr - STACK32:addr - STACK32 + size]

    image = ehbt.Image.open(str(synth32["exe"]))
    modules = ehbt.ModuleSet([ehbt.Module(image, path="/opt/synth32", bias=BIAS32)])
    names = ehbt.general_registers("i386")[0]
    assert (names["esp"], names["ebp"]) == (4, 5)
    regs = ehbt.RegisterSet("i386", {names["ebp"]: E0, names["esp"]: E0 - 0x18},
                            pc=synth32["pc0"])
    assert str(regs.arch) == "i386" and regs.sp == E0 - 0x18
    bt = ehbt.Unwinder().unwind(regs, read, modules)
    frames = bt.frames
    assert [f.pc for f in frames] == [synth32["pc0"], BIAS32 + synth32["ret_f1"],
                                      BIAS32 + synth32["ret_main"]], bt
    assert [f.cfa for f in frames] == [E0 + 8, E1 + 8, E2 + 8]
    assert [f.symbolize()[0] for f in frames] == ["f2", "f1", "main"]
    assert frames[1].regs[5] == E1 and frames[1].regs.sp == E0 + 8
    assert frames[2].regs[5] == E2
    assert bt.stop in ("outermost", "bad_pc"), (bt.stop, bt.detail)


def test_debugger_architecture_names(ehbt):
    """GDB's and LLDB's spellings of the architectures, to the engine's names (what the
    plugins ask through ehbt.frontend.engine_arch)."""
    from ehbt import frontend

    for name, want in (("i386", "i386"), ("i386:intel", "i386"), ("i686", "i386"),
                       ("i386:x86-64", "x86_64"), ("i386:x86-64:intel", "x86_64"),
                       ("x86_64", "x86_64"), ("aarch64", "aarch64"), ("s390:64-bit", "s390x"),
                       ("vax", None)):
        assert frontend.engine_arch(name) == want, name
    names, pc, sp = ehbt.general_registers("i386")
    assert (pc, sp) == ("eip", "esp")
    # i386 psABI, "DWARF Register Number Mapping".
    assert names == {
        "eax": 0, "ecx": 1, "edx": 2, "ebx": 3, "esp": 4, "ebp": 5, "esi": 6, "edi": 7}
    # LLDB's own names of aarch64's x29/x30/sp (its register info), GDB's s390x "pc" pseudo
    # register over pswa; none for the others.
    assert [ehbt.register_aliases("aarch64", n) for n in ("x29", "x30", "sp", "x0", "pc")] == [
        ("fp",), ("lr",), ("x31",), (), ()]
    assert ehbt.register_aliases("s390x", "pswa") == ("pc",)
    assert ehbt.register_aliases("x86_64", "rip") == ()


def test_fault_address_signals(ehbt):
    """The signals whose siginfo holds si_addr (the kernel's _sigfault member: SIGILL,
    SIGTRAP, SIGBUS, SIGFPE, SIGSEGV), which the plugins read a live stop's address for."""
    assert [n for n in range(1, 32) if ehbt.signal_has_fault_address(n)] == [4, 5, 7, 8, 11]


def test_the_python_report_shims_are_gone(ehbt):
    """The report is rendered once, in C++ (ehbt.Report): no Python renderer or name table."""
    import importlib

    for name in ("ehbt.report", "ehbt.regnames"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)


def test_register_set_is_dict_like(ehbt):
    regs = ehbt.RegisterSet(ehbt.Arch.AARCH64, {29: 0x1000, 30: 0x2000}, pc=0x400000)
    regs.sp = 0x7fff0000
    assert regs[31] == 0x7fff0000 and regs.sp == 0x7fff0000  # AArch64 sp is DWARF 31
    assert sorted(regs) == [29, 30, 31] and len(regs) == 3 and 30 in regs and 0 not in regs
    del regs[30]
    assert regs.get(30) is None and regs.get(30, 7) == 7
    with pytest.raises(KeyError):
        regs[30]
    with pytest.raises(KeyError):
        regs[1000] = 1
    assert regs.to_dict() == {29: 0x1000, 31: 0x7fff0000}
    assert str(regs.arch) == "aarch64" and regs.pc == 0x400000
    assert ehbt.RegisterSet("s390x", sp=0x100)[15] == 0x100  # s390x sp is r15
    with pytest.raises(ValueError):
        ehbt.RegisterSet("vax")


def test_limits_and_options(ehbt):
    lim = ehbt.Limits(max_frames=7)
    assert lim.max_frames == 7 and ehbt.Unwinder(lim).limits.max_frames == 7
    with pytest.raises(TypeError):
        ehbt.Limits(no_such_cap=1)
    assert ehbt.UnwindOptions(source="sframe").source == "sframe"
    with pytest.raises(ValueError):
        ehbt.UnwindOptions(source="guess")


def test_image_errors_and_modules(ehbt, synth, tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"not an ELF file at all" * 10)
    with pytest.raises(ehbt.Error):
        ehbt.Image.open(str(junk))
    with pytest.raises(ehbt.Error):
        ehbt.Image.open(str(tmp_path / "missing"))
    image = ehbt.Image.open(str(synth["exe"]))
    assert len(image.build_id) == 40 and str(image.arch) == "x86_64"
    assert image.symbolize(synth["syms"]["f1"] + 2).name == "f1"
    assert ".eh_frame" in image.sections
    m = ehbt.Module(image, path="/x", bias=BIAS)
    assert m.start == BIAS + image.extent[0] and m.end == BIAS + image.extent[1]
    mods = ehbt.ModuleSet([m])
    assert mods.find(BIAS + synth["syms"]["f1"]).path == "/x"
    assert mods.find(0x10) is None


CRASH_C = r"""
#include <stdio.h>
__attribute__((noinline)) void crash_here(int *p) { *p = 42; }
__attribute__((noinline)) void middle(int *p) { crash_here(p); printf("unreached\n"); }
__attribute__((noinline)) void outer(int *p) { middle(p); printf("unreached\n"); }
int main(void) { outer((int *)0); return 0; }
"""


@pytest.fixture(scope="module")
def crash_core(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash")
    exe = h.compile_c(CRASH_C, d / "crasher")
    core = h.make_core(exe, d)
    return exe, core


def gdb_core_frames(build_dir, exe, core):
    out = h.run_gdb(build_dir, [exe, core], [h.GDB_FRAMES_PY], source_plugin=False)
    return h.parse_frames(out)


def test_open_core_reaches_main(ehbt, build_dir, crash_core):
    exe, core = crash_core
    target = ehbt.open_core(str(core))
    assert str(target.arch) == os.uname().machine
    assert target.signal.number == signal.SIGSEGV and target.signal.name == "SIGSEGV"
    assert target.signal.address == 0
    assert len(target.threads) == 1
    assert os.path.basename(target.executable) == "crasher"
    bt = target.unwind_thread(target.crashing_thread)
    names = [f.symbolize()[0] if f.symbolize() else None for f in bt.frames]
    assert names[:4] == ["crash_here", "middle", "outer", "main"], names
    assert bt.stop == "outermost", (bt.stop, bt.detail)
    # Every frame GDB shows (it stops at main) has the same pc in the engine's walk.
    theirs = gdb_core_frames(build_dir, exe, core)
    assert [pc for pc, _ in theirs] == [f.pc for f in bt.frames[:len(theirs)]]
    assert theirs[-1][1] == "main"


def test_target_report_document(ehbt, crash_core):
    exe, core = crash_core
    target = ehbt.open_core(str(core))
    doc = ehbt.target_report(target, threads="all").to_dict()
    json.dumps(doc)  # serialisable
    assert doc["format"] == "ehbt-backtrace/1" and doc["core"] == str(core)
    assert doc["arch"] == os.uname().machine
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 1, "address": "0x0"}
    exe_mod = [m for m in doc["modules"] if os.path.basename(m["path"]) == "crasher"]
    assert exe_mod and set(exe_mod[0]) >= {"path", "file", "base", "bias", "build_id",
                                          "build_id_match"}
    (thread,) = doc["threads"]
    assert thread["crashing"] is True and thread["stop_reason"] == "outermost"
    f0 = thread["frames"][0]
    assert set(f0) == {"index", "pc", "cfa", "source", "module", "module_offset", "symbol",
                       "symbol_offset", "location", "inlined"}
    assert f0["symbol"] == "crash_here" and f0["source"] == "context"
    syms = h.symbol_addresses(exe)
    # module_offset is the address nm uses: symbol address + symbol offset.
    for f in thread["frames"][:4]:
        assert int(f["module_offset"], 16) == syms[f["symbol"]] + int(f["symbol_offset"], 16)
        assert f["pc"] == f["pc"].lower() and f["pc"].startswith("0x")
    # The crasher is -g: its frames have lines, as `ehbt core` prints them ...
    assert f0["location"]["file"].endswith("crasher.c") and f0["location"]["line"] > 0
    report = ehbt.Report(target.arch)
    report.add_thread(1, target.unwind_thread(0))
    text = report.threads[0].text(header=False).splitlines()
    assert text[0].startswith("#0  0x") and " in crash_here () at " in text[0]
    assert text[0].endswith(f"crasher.c:{f0['location']['line']}")
    # ... and none when asked for none (`--no-lines`).
    plain = ehbt.target_report(target, threads="all", lines=False).to_dict()
    assert all(f["location"] is None and f["inlined"] == []
               for f in plain["threads"][0]["frames"])
    report = ehbt.Report(target.arch)
    report.add_thread(1, target.unwind_thread(0), lines=False)
    text = report.threads[0].text(header=False).splitlines()
    assert text[0].startswith("#0  0x") and " in crash_here () from " in text[0]


def core_elf_files(core):
    """The ELF files of a core's NT_FILE note (as elfutils' eu-readelf lists them), one path
    per file (an ImageStore keys files by device and inode)."""
    out = subprocess.run(["eu-readelf", "-n", str(core)], capture_output=True, text=True,
                         check=True).stdout
    files = {}
    for line in out.splitlines():
        m = re.match(r"\s+[0-9a-f]+-[0-9a-f]+ [0-9a-f]+ \d+\s+(/.*)$", line)
        if m and os.path.exists(m.group(1)):
            with open(m.group(1), "rb") as f:
                if f.read(4) == b"\x7fELF":
                    st = os.stat(m.group(1))
                    files.setdefault((st.st_dev, st.st_ino), m.group(1))
    return sorted(files.values())


def test_image_store_is_a_bounded_lru(ehbt, crash_core):
    exe, core = crash_core
    if not shutil.which("eu-readelf"):
        pytest.skip("no eu-readelf")
    elf = core_elf_files(core)
    assert len(elf) >= 2, elf  # the program and libc at least
    roomy = ehbt.ImageStore()
    assert roomy.max_images == ehbt.Limits().max_stored_images == 4096
    ehbt.open_core(str(core), store=roomy).close()
    assert len(roomy) == len(elf)
    assert roomy.bytes == sum(os.path.getsize(f) for f in elf)

    # One image at most: the files of the core push each other out while it is opened, yet
    # the target keeps the ones it uses and its frames are named as with the roomy store.
    tiny = ehbt.ImageStore(max_images=1)
    assert tiny.max_images == 1 and tiny.max_bytes == 0
    for _ in range(2):  # the second time, every evicted file is parsed again
        target = ehbt.open_core(str(core), store=tiny)
        assert len(tiny) == 1 and tiny.bytes in {os.path.getsize(f) for f in elf}
        doc = ehbt.target_report(target, threads="all").to_dict()
        target.close()
        names = [f["symbol"] for f in doc["threads"][0]["frames"]]
        assert names[:4] == ["crash_here", "middle", "outer", "main"], names

    # A byte cap below one file: the most recent image alone stays.
    small = ehbt.ImageStore(max_bytes=1)
    ehbt.open_core(str(core), store=small).close()
    assert len(small) == 1


def test_unwind_thread_honours_limits(ehbt, crash_core):
    _, core = crash_core
    target = ehbt.open_core(str(core), limits={"max_frames": 2})
    bt = target.unwind_thread(0)
    assert len(bt.frames) == 2 and bt.stop == "max_frames"
    bt = target.unwind_thread(0, limits=ehbt.Limits(max_frames=3))
    assert len(bt.frames) == 3
    report = ehbt.Report(target.arch)
    report.add_thread(1, bt)
    assert report.threads[0].stop_line().startswith("Backtrace stopped: max_frames")  # the CLI's
    with pytest.raises(IndexError):
        target.unwind_thread(5)
    # A Target is a memory callable and a module source for Unwinder.unwind.
    regs = target.threads[0].regs
    again = ehbt.Unwinder().unwind(regs, target, target)
    full = target.unwind_thread(0, limits=ehbt.Limits())
    assert len(full.frames) > 3 and full.stop == "outermost"
    assert [f.pc for f in again.frames] == [f.pc for f in full.frames]


def test_open_core_rejects_non_cores(ehbt, crash_core, tmp_path):
    exe, _ = crash_core
    with pytest.raises(ehbt.Error) as e:
        ehbt.open_core(str(exe))
    assert "\n" not in str(e.value) and str(e.value)
    with pytest.raises(ehbt.Error):
        ehbt.open_core(str(tmp_path / "nothing-here"))


SLEEPER_C = r"""
#include <unistd.h>
#include <stdio.h>
__attribute__((noinline)) void wait_here(void) {
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
__attribute__((noinline)) void second(void) { wait_here(); printf("unreached\n"); }
__attribute__((noinline)) void first(void) { second(); printf("unreached\n"); }
int main(void) { first(); return 0; }
"""


def test_attach_process(ehbt, tmp_path):
    exe = h.compile_c(SLEEPER_C, tmp_path / "sleeper")
    proc = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.1)
        try:
            target = ehbt.attach_process(proc.pid)
        except ehbt.Error as e:
            pytest.skip("cannot attach here: %s" % e)
        with target:
            assert target.pid == proc.pid and target.threads[0].tid == proc.pid
            bt = target.unwind_thread(0)
            names = [f.symbolize()[0] if f.symbolize() else None for f in bt.frames]
            assert "wait_here" in names, names
            i = names.index("wait_here")
            assert names[i:i + 4] == ["wait_here", "second", "first", "main"], names
        assert target.closed
        # Detached: the process runs on (still alive, not stopped).
        time.sleep(0.1)
        assert proc.poll() is None
        with open("/proc/%d/stat" % proc.pid) as f:
            assert f.read().split(") ")[1][0] in "SR"
    finally:
        proc.kill()
        proc.wait()
