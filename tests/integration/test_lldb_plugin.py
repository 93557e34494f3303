# SPDX-License-Identifier: Apache-2.0
"""The LLDB plugin (plugins/lldb/ehbt_lldb.py) driven through `lldb-16 -b`.

- `ehbt --all --json` against the fixture cores' expected frames (recorded from GDB or by
  construction, never from ehbt; cores_expect.py holds the comparison rules): every x86-64
  core, and every aarch64/s390x core LLDB 16 can open (all of them; the list of those it
  cannot open is asserted, empty here);
- a live session stopped at a breakpoint: `ehbt` against LLDB's own `bt`;
- the frame recognizer: `ehbt_agrees` true on every frame where LLDB unwinds right, false on
  the frame where LLDB's unwinder stops early (aarch64 PAC-signed return addresses, s390x code
  without CFI, qemu's signal trampoline page), checked against the expected frames.

LLDB runs with EHBT_PYTHONPATH pointing at the build tree's package."""

import json
import os
import re
import shutil
import subprocess

import pytest

import cores_expect as ce
import ehbt_py as h

LLDB = "lldb-16"
PLUGIN = h.ROOT / "plugins" / "lldb" / "ehbt_lldb.py"

pytestmark = pytest.mark.usefixtures("built")


@pytest.fixture(scope="module")
def built(build_dir):
    h.import_ehbt(build_dir)  # skips when the module is not built
    assert shutil.which(LLDB), "lldb-16 is not installed (scripts/install-deps.sh lists it)"


# Loaded into LLDB by the tests: `ehbt_test_dump FILE` writes LLDB's own view of every thread
# (each frame's pc, whether it is inlined, LLDB's CFA and symbol, and the values the
# recognizer added, read through SBVariablesOptions.SetIncludeRecognizedArguments), and
# `ehbt_test_capture FILE COMMAND...` appends a command's output and error to FILE (lldb -b
# stops at the first command that fails; a captured one does not fail).
DUMP_SCRIPT = r'''
import json
import lldb


def _recognized(frame):
    options = lldb.SBVariablesOptions()
    for setter in ("SetIncludeArguments", "SetIncludeLocals", "SetIncludeStatics"):
        getattr(options, setter)(False)
    options.SetIncludeRecognizedArguments(True)
    out = {}
    for value in frame.GetVariables(options):
        name = value.GetName()
        if name == "ehbt_source":
            out[name] = value.GetSummary()
        elif name == "ehbt_agrees":
            out[name] = value.GetValue()
        else:
            out[name] = value.GetValueAsUnsigned(0)
    return out


def _line(frame):
    """LLDB's own source position of a frame (file path, line), or None."""
    entry = frame.GetLineEntry()
    if not entry.IsValid() or not entry.GetLine():
        return None
    spec = entry.GetFileSpec()
    return {"file": spec.fullpath, "line": entry.GetLine()}


def dump(debugger, command, exe_ctx, result, internal_dict):
    process = exe_ctx.GetProcess()
    threads = []
    for thread in process:
        frames = []
        for frame in thread:
            frames.append({"index": frame.GetFrameID(), "pc": frame.GetPC(),
                           "module": frame.GetModule().GetFileSpec().GetFilename(),
                           "inlined": frame.IsInlined(), "cfa": frame.GetCFA(),
                           "function": frame.GetFunctionName(),
                           "line": _line(frame),
                           "recognized": _recognized(frame)})
        threads.append({"tid": thread.GetThreadID(), "frames": frames})
    with open(command.strip(), "w") as f:
        json.dump({"threads": threads}, f)


def capture(debugger, command, exe_ctx, result, internal_dict):
    path, _, cmd = command.strip().partition(" ")
    ret = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(cmd, exe_ctx, ret)
    with open(path, "a") as f:
        f.write(ret.GetOutput() or "")
        f.write(ret.GetError() or "")


def __lldb_init_module(debugger, internal_dict):
    debugger.HandleCommand("command script add -o -f %s.dump ehbt_test_dump" % __name__)
    debugger.HandleCommand("command script add -o -f %s.capture ehbt_test_capture" % __name__)
'''


def lldb_env(build_dir):
    env = dict(os.environ)
    env["EHBT_PYTHONPATH"] = str(h.package_dir(build_dir))
    env.pop("PYTHONPATH", None)
    return env


def run_lldb(build_dir, tmp_path, commands, pre=(), timeout=300, plugin=PLUGIN):
    """lldb-16 -b: `pre` (target set-up), the plugin and the test helpers imported, then
    `commands`. Returns the whole output (stdout + stderr)."""
    helper = tmp_path / "ehbt_test_helpers.py"
    helper.write_text(DUMP_SCRIPT)
    cmd = [LLDB, "-b", "--no-lldbinit", "-o", "settings set auto-confirm true"]
    for c in list(pre) + ["command script import %s" % plugin,
                          "command script import %s" % helper] + list(commands):
        cmd += ["-o", c]
    proc = subprocess.run(cmd, env=lldb_env(build_dir), capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path)
    return proc.stdout + proc.stderr


def core_setup(exp, platform_sysroot=False):
    pre = []
    if platform_sysroot and exp.get("sysroot"):
        pre.append("platform select remote-linux --sysroot %s" % exp["sysroot"])
    pre.append("target create %s --core %s" % (exp["exe_file"], exp["core"]))
    return pre


def ehbt_json(build_dir, tmp_path, pre, command="ehbt --all --json"):
    out_file = tmp_path / "ehbt.json"
    text = run_lldb(build_dir, tmp_path, ["ehbt_test_capture %s %s" % (out_file, command)],
                    pre=pre)
    assert out_file.exists(), text[-3000:]
    captured = out_file.read_text()
    start = captured.find("{")
    assert start >= 0, captured[-3000:] + text[-3000:]
    return json.loads(captured[start:]), text


def lldb_dump(build_dir, tmp_path, pre, commands=()):
    out_file = tmp_path / "lldb.json"
    text = run_lldb(build_dir, tmp_path, list(commands) + ["ehbt_test_dump %s" % out_file],
                    pre=pre)
    assert out_file.exists(), text[-3000:]
    return json.loads(out_file.read_text()), text


def stack_frames(frames):
    """LLDB's frames grouped into stack frames: [(pc, first frame, last frame)], the pc of
    the innermost (inlined) frame of each group, as in debugger_support.physical_frames but
    computed here independently."""
    out = []
    group = []
    for f in frames:
        group.append(f)
        if not f["inlined"]:
            out.append((group[0]["pc"], group[0], group[-1]))
            group = []
    if group:
        out.append((group[0]["pc"], group[0], group[-1]))
    return out


def expected_or_fail(arch, name):
    path = ce.expected_path(arch, name)
    assert path.exists(), "no fixture core %s (run cores/make-cores.sh %s)" % (path, arch)
    return ce.load_expected(arch, name)


# ---- the command itself ------------------------------------------------------------------------

def test_help_and_bad_arguments(build_dir, tmp_path):
    errors = tmp_path / "errors.txt"
    out = run_lldb(build_dir, tmp_path, ["help ehbt"] + [
        "ehbt_test_capture %s %s" % (errors, c)
        for c in ("ehbt --bogus", "ehbt --count", "ehbt --count x", "ehbt")])
    out += errors.read_text()
    for opt in ("--all", "--json", "--count N", "--sysroot DIR", "--core FILE", "ehbt_agrees",
                "ehbt_cfa", "ehbt_source"):
        assert opt in out, out
    assert "unknown argument '--bogus'" in out
    assert "--count expects a number between 1 and 4294967295" in out
    assert "--count expects a number between 1 and 4294967295, not 'x'" in out
    assert "no process" in out


def bad_arguments(tmp_path):
    not_a_core = tmp_path / "not-a-core"
    not_a_core.write_bytes(b"\x7fELF" + b"\0" * 60)
    return {
        "ehbt -c 99999999999999999999":
            "error: ehbt: -c expects a number between 1 and 4294967295, not 99999999999999999999",
        "ehbt --count 0": "error: ehbt: --count expects a number between 1 and 4294967295, not 0",
        "ehbt -c": "error: ehbt: -c expects a number between 1 and 4294967295",
        "ehbt --bogus": "error: ehbt: unknown argument '--bogus' (see 'help ehbt')",
        "ehbt --sysroot /nonexistent/root":
            "error: ehbt: --sysroot /nonexistent/root: no such directory",
        "ehbt --core /nonexistent/core": "error: ehbt: --core /nonexistent/core: no such file",
        "ehbt --core %s" % not_a_core: "error: ehbt: cannot read the core %s: " % not_a_core,
        "ehbt 'unclosed": "error: ehbt: ",
    }


def test_bad_arguments_are_one_line(build_dir, tmp_path):
    """Each bad argument is one error line, on a loaded core; no Python traceback."""
    exp = expected_or_fail("x86_64", "chain")
    cases = bad_arguments(tmp_path)
    files = {}
    commands = []
    for i, command in enumerate(cases):
        files[command] = tmp_path / ("err%d.txt" % i)
        commands.append("ehbt_test_capture %s %s" % (files[command], command))
    out = run_lldb(build_dir, tmp_path, commands, pre=core_setup(exp))
    assert "Traceback" not in out, out
    for command, message in cases.items():
        lines = files[command].read_text().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(message), (command, lines)


# ---- fixture cores -------------------------------------------------------------------------------

X86 = [c for c in ce.ALL_CASES if c[0] == "x86_64"]
OTHER = [c for c in ce.ALL_CASES if c[0] != "x86_64"]

# aarch64/s390x fixture cores LLDB 16 cannot open, with its error: none (every core of
# cores/out opens; checked by test_lldb_opens_core below, which fails if this list is wrong
# either way).
LLDB_CANNOT_OPEN = {}


@pytest.mark.parametrize("arch,name", X86, ids=["%s-%s" % c for c in X86])
def test_x86_64_core_json_matches_expected(build_dir, tmp_path, arch, name):
    exp = expected_or_fail(arch, name)
    command = "ehbt --all --json"
    if exp.get("debug_sysroot"):  # the debug file's tree, for the engine to search
        command += " --sysroot %s" % exp["debug_sysroot"]
    doc, text = ehbt_json(build_dir, tmp_path, core_setup(exp), command=command)
    assert doc["format"] == "ehbt-backtrace/1"
    assert doc["core"] == exp["core"], "the core LLDB mapped was not found: %s" % doc["core"]
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("arch,name", OTHER, ids=["%s-%s" % c for c in OTHER])
def test_lldb_opens_core(build_dir, tmp_path, arch, name):
    exp = expected_or_fail(arch, name)
    out = run_lldb(build_dir, tmp_path, ["process status"], pre=core_setup(exp))
    loaded = "Core file '%s' (%s) was loaded." % (exp["core"], arch) in out
    if (arch, name) in LLDB_CANNOT_OPEN:
        assert not loaded and LLDB_CANNOT_OPEN[(arch, name)] in out, out
    else:
        assert loaded, out


@pytest.mark.parametrize("arch,name", OTHER, ids=["%s-%s" % c for c in OTHER])
def test_qemu_core_json_matches_expected(build_dir, tmp_path, arch, name):
    """qemu-user cores name no files: LLDB alone loads only the executable; --sysroot lets
    the engine find the libraries the core's dynamic-linker list names."""
    if (arch, name) in LLDB_CANNOT_OPEN:
        pytest.fail("listed as not openable by LLDB; test_lldb_opens_core checks the error")
    exp = expected_or_fail(arch, name)
    command = "ehbt --all --json --sysroot %s" % exp["sysroot"] if exp.get("sysroot") else (
        "ehbt --all --json")
    if exp.get("debug_sysroot"):  # the debug file's tree, for the engine to search
        command += " --sysroot %s" % exp["debug_sysroot"]
    doc, text = ehbt_json(build_dir, tmp_path, core_setup(exp), command=command)
    assert doc["core"] == exp["core"]
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)


BUILDID = [c for c in ce.ALL_CASES if c[1] == "buildid"]


@pytest.mark.parametrize("arch,name", BUILDID, ids=["%s-%s" % c for c in BUILDID])
def test_wrong_build_id_through_engine_discovery(build_dir, tmp_path, arch, name):
    """No executable given: LLDB loads no module at all, the plugin falls back to the engine's
    own discovery with --sysroot. The sysroot holds a rebuilt variant of the executable
    (another build-id): it is reported with build_id_match false and not used."""
    exp = expected_or_fail(arch, name)
    assert not os.path.exists(exp["exe"])
    if arch != "x86_64":
        # qemu-user writes no NT_FILE build-ids: nothing can be compared there. Assert that
        # fact, so a qemu that starts recording them brings this case into the test.
        assert not exp["exe_build_id_in_core"], exp["core"]
        return
    roots = [exp["variant_sysroot"]] + ([exp["sysroot"]] if exp["sysroot"] else [])
    command = "ehbt --all --json " + " ".join("--sysroot %s" % r for r in roots)
    doc, text = ehbt_json(build_dir, tmp_path, ["target create --core %s" % exp["core"]],
                          command=command)
    exe_mods = [m for m in doc["modules"] if m["path"] == exp["exe"]]
    assert len(exe_mods) == 1, doc["modules"]
    assert exe_mods[0]["build_id_match"] is False, exe_mods
    assert exe_mods[0]["build_id"] == exp["exe_build_id"], exe_mods
    assert doc["executable"] == exp["exe"], doc["executable"]
    (crashing,) = [t for t in doc["threads"] if t["crashing"]]
    for f in crashing["frames"]:
        assert "variant" not in (f.get("symbol") or ""), f
        if f.get("module") == exp["exe"]:
            assert f.get("symbol") is None, "symbol from the wrong-build-id file: %s" % f
    assert int(crashing["frames"][0]["pc"], 16) == int(
        [t for t in exp["threads"] if t["crashing"]][0]["frames"][0]["pc"], 16)
    libc = [m for m in doc["modules"] if os.path.basename(m["path"]) == "libc.so.6"]
    assert libc and libc[0]["build_id_match"] is True, doc["modules"]


RECORDED_ID = [c for c in OTHER if c[1] == "chain"]


@pytest.mark.parametrize("arch,name", RECORDED_ID, ids=["%s-%s" % c for c in RECORDED_ID])
def test_build_id_match_is_null_where_the_core_records_none(build_dir, tmp_path, arch, name):
    """The executable LLDB loaded is compared with the build-id the core records: where the
    core's bytes hold none (qemu-user dumps no first page of a file mapping), build_id_match is
    null, as the CLI and docs/formats.md say, not true; where they hold it, true. Whether the
    core holds the build-id is read from the core file's bytes here, not from ehbt."""
    exp = expected_or_fail(arch, name)
    with open(exp["core"], "rb") as f:
        recorded = bytes.fromhex(exp["exe_build_id"]) in f.read()
    doc, text = ehbt_json(build_dir, tmp_path, core_setup(exp))
    exe_mods = [m for m in doc["modules"] if m["path"] == exp["exe"]]
    assert len(exe_mods) == 1, doc["modules"]
    assert exe_mods[0]["build_id_match"] is (True if recorded else None), (recorded, exe_mods)


def test_some_qemu_core_records_no_build_id():
    """The case above exists: at least one fixture core holds no build-id of its executable."""
    missing = []
    for arch, name in RECORDED_ID:
        exp = expected_or_fail(arch, name)
        with open(exp["core"], "rb") as f:
            if bytes.fromhex(exp["exe_build_id"]) not in f.read():
                missing.append(arch)
    assert missing, RECORDED_ID


PLATFORM = [c for c in OTHER if c[1] in ("chain", "terminate", "threads")]


@pytest.mark.parametrize("arch,name", PLATFORM, ids=["%s-%s" % c for c in PLATFORM])
def test_qemu_core_with_lldb_platform_sysroot(build_dir, tmp_path, arch, name):
    """With `platform select remote-linux --sysroot DIR` LLDB loads the libraries itself:
    the plugin takes them from LLDB's module list (no --sysroot given to ehbt)."""
    exp = expected_or_fail(arch, name)
    doc, text = ehbt_json(build_dir, tmp_path, core_setup(exp, platform_sysroot=True))
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)
    libc = [m for m in doc["modules"] if os.path.basename(m["path"]) == "libc.so.6"]
    assert libc and all(m["file"].startswith(exp["sysroot"]) for m in libc), doc["modules"]


# Markers between commands in LLDB's output (LLDB has no echo command).
MARK = "script print('MARK')"
END = "script print('END')"


def test_text_output_on_core(build_dir, tmp_path):
    """The CLI's frame lines (checked against the CLI by test_plugins_one_voice.py); here
    against the expected frames, and the stop line of a walk cut by --count."""
    exp = expected_or_fail("x86_64", "chain")
    out = run_lldb(build_dir, tmp_path, ["ehbt", MARK, "ehbt --count 2", MARK, "ehbt --all"],
                   pre=core_setup(exp))
    full, short, every = out.split(MARK)[:3]
    frames = h.parse_bt_text(full)
    (thread,) = exp["threads"]
    assert [pc for _, pc, _ in frames] == [int(f["pc"], 16) for f in thread["frames"]]
    # The fixture is -O2 -g: frame 0's line is fx_null_write, inlined into fx_level3 at its
    # pc (chain.c's structure, as GDB shows it), and fx_level3 follows without an address.
    assert [name for _, _, name in frames[:4]] == ["fx_null_write", "fx_level2", "fx_level1",
                                                   "main"]
    assert re.search(r"^#0  0x[0-9a-f]{16} in fx_null_write \(\) at \S+/fixture\.h:\d+\n"
                     r"#1  fx_level3 \(\) at \S+/chain\.c:\d+$", full, re.M), full
    assert "Thread " not in full  # a header only with --all
    assert len(h.parse_bt_text(short)) == 2
    assert "\nBacktrace stopped: max_frames" in short
    assert re.search(r"^Thread %d \(crashed: SIGSEGV, SEGV_MAPERR at 0x0\):$" % thread["tid"],
                     every, re.M), every


# ---- a live session ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    d = tmp_path_factory.mktemp("lldbchain")
    return h.compile_chain(d / "chain")


def test_live_ehbt_matches_lldb_bt(build_dir, chain, tmp_path):
    out_json = tmp_path / "live.json"
    dump, text = lldb_dump(build_dir, tmp_path, ["target create %s" % chain],
                           commands=["breakpoint set -n bottom", "process launch",
                                     MARK, "ehbt", END, "bt",
                                     "ehbt_test_capture %s ehbt --json" % out_json])
    (thread,) = dump["threads"]
    theirs = stack_frames(thread["frames"])
    names = [last["function"] for _, _, last in theirs]
    assert names[:4] == ["bottom", "level3", "level2", "level1"], text
    assert names.count("recurse") == 6 and "main" in names, names
    ehbt_text = text.split(MARK, 1)[1].split(END, 1)[0]
    ours = h.parse_bt_text(ehbt_text)
    assert [pc for _, pc, _ in ours] == [pc for pc, _, _ in theirs], text
    main = names.index("main")
    assert [sym for _, _, sym in ours[:main + 1]] == names[:main + 1]
    doc = json.loads(out_json.read_text()[out_json.read_text().find("{"):])
    # A live process: "pid", no "core"; the signal is the breakpoint's trap (int3: SIGTRAP,
    # SI_KERNEL), the same as GDB's plugin says at the same breakpoint.
    assert "core" not in doc and doc["pid"] > 0 and doc["arch"] == "x86_64"
    # (force_sig()'s SI_KERNEL leaves siginfo's union zero: no address.)
    assert doc["signal"] == {"number": 5, "name": "SIGTRAP", "code": 128, "address": None}
    (record,) = doc["threads"]
    assert record["stop_reason"] == "outermost" and record["crashing"] is True
    assert [int(f["pc"], 16) for f in record["frames"]] == [pc for pc, _, _ in theirs]
    assert record["frames"][0]["source"] == "context"
    # The recognizer on a live stop: every frame agrees, ehbt_cfa is LLDB's own CFA.
    for pc, first, last in theirs:
        rec = first["recognized"]
        assert rec["ehbt_agrees"] == "true", (hex(pc), rec)
        assert rec["ehbt_cfa"] == last["cfa"], (hex(pc), rec, last)


SLEEPER_C = r"""
#include <unistd.h>
__attribute__((noinline)) void wait_here(void) { for (;;) pause(); }
__attribute__((noinline)) void outer(void) { wait_here(); asm volatile(""); }
int main(void) { outer(); return 0; }
"""


def test_attach_ehbt_matches_lldb_bt(build_dir, tmp_path):
    """`process attach`: the process sits in pause() inside libc; ehbt's frames are LLDB's."""
    exe = h.compile_c(SLEEPER_C, tmp_path / "sleeper", flags=("-O1", "-g"))
    proc = subprocess.Popen([str(exe)])
    try:
        out_json = tmp_path / "attach.json"
        dump, text = lldb_dump(build_dir, tmp_path, [], commands=[
            "process attach -p %d" % proc.pid,
            "ehbt_test_capture %s ehbt --json" % out_json])
        (thread,) = dump["threads"]
        theirs = stack_frames(thread["frames"])
        names = [last["function"] for _, _, last in theirs]
        assert "wait_here" in names and "outer" in names and "main" in names, text
        doc = json.loads(out_json.read_text()[out_json.read_text().find("{"):])
        (record,) = doc["threads"]
        assert record["tid"] == proc.pid
        assert [int(f["pc"], 16) for f in record["frames"]] == [pc for pc, _, _ in theirs]
        assert record["stop_reason"] == "outermost"
        syms = [f["symbol"] for f in record["frames"]]
        assert syms[syms.index("wait_here"):syms.index("main") + 1] == [
            "wait_here", "outer", "main"], syms
    finally:
        proc.kill()
        proc.wait()


# ---- the frame recognizer --------------------------------------------------------------------

# Frames LLDB's own assert recognizer handles (lldb/source/Target/AssertFrameRecognizer.cpp:
# these symbols in libc.so.6): the plugin leaves them to it, so they carry no ehbt values.
ASSERT_FRAME = re.compile(r"^(raise|__GI_raise|gsignal|pthread_kill)(@.*)?$")


def left_to_assert_recognizer(frame):
    return frame["module"] == "libc.so.6" and bool(ASSERT_FRAME.match(frame["function"] or ""))


AGREE = [("x86_64", "chain"), ("x86_64", "sighandler"), ("x86_64", "threads"),
         ("aarch64", "chain"), ("s390x", "terminate"), ("i386", "chain"), ("i386", "noreturn")]
# Not i386 threads: there LLDB's CFA of each thread's outermost frame (glibc's clone) is 12
# bytes above the one its CFI gives, which the engine and GDB ("Previous frame's sp is ...")
# both compute; the pcs agree.


@pytest.mark.parametrize("arch,name", AGREE, ids=["%s-%s" % c for c in AGREE])
def test_recognizer_agrees_where_lldb_is_right(build_dir, tmp_path, arch, name):
    """LLDB's frames equal the expected ones here (checked first): every frame agrees, and the
    engine's CFA is LLDB's own CFA of the same frame."""
    exp = expected_or_fail(arch, name)
    dump, text = lldb_dump(build_dir, tmp_path, core_setup(exp, platform_sysroot=True))
    want = {t["tid"]: t for t in exp["threads"]}
    skipped = 0
    for thread in dump["threads"]:
        theirs = stack_frames(thread["frames"])
        exp_pcs = [int(f["pc"], 16) for f in want[thread["tid"]]["frames"]]
        assert [pc for pc, _, _ in theirs] == exp_pcs, text
        for i, (pc, first, last) in enumerate(theirs):
            if left_to_assert_recognizer(last):
                assert first["recognized"] == {}, (thread["tid"], i, first)
                skipped += 1
                continue
            for frame in thread["frames"][first["index"]:last["index"] + 1]:
                rec = frame["recognized"]
                assert rec.get("ehbt_agrees") == "true", (thread["tid"], i, hex(pc), rec)
                assert rec["ehbt_cfa"] == last["cfa"], (thread["tid"], i, rec, last)
            source = first["recognized"]["ehbt_source"]
            assert (source == '"context"') == (i == 0), (i, source)
    # The SIGABRT cores pass through raise/pthread_kill: LLDB's assert recognizer keeps them.
    assert (skipped > 0) == (exp["signal"] == 6), skipped


# Where LLDB 16 stops early (LLDB's `log enable lldb unwind` says why):
# - aarch64 pac: fx_pac_middle's caller's return address was saved signed (paciasp): LLDB
#   reads lr = 0x5f0055000007b0 from the stack, knows no PAC mask for this core (qemu writes
#   no NT_ARM_PAC_MASK note), and stops: "pc is in a non-executable section of memory".
#   The engine strips the PAC (DW_CFA_AARCH64_negate_ra_state, 48-bit addresses).
# - s390x nounwind: no FDE covers fx_nounwind_crash and LLDB 16 has no other unwinder for
#   s390x (no s390x instruction emulation, no back chain): "could not find an unwindplan row
#   for this frame's pc", one frame. The engine's frame-pointer fallback follows the back
#   chain (-mbackchain).
# - aarch64/s390x sighandler: the handler returns into qemu's signal trampoline page, which
#   lies in no module; LLDB recognises signal trampolines only by symbol (__kernel_rt_sigreturn,
#   __restore_rt), so it cannot step through the signal frame (s390x: it does not even take
#   the trampoline page as a frame). The engine recognises the trampoline by its code.
#   On aarch64 LLDB's last frame is that trampoline page itself: no module, so LLDB offers
#   it to no recognizer and there is no value to check; s390x is checked.
EARLY = [("aarch64", "pac"), ("s390x", "nounwind"), ("s390x", "sighandler")]


@pytest.mark.parametrize("arch,name", EARLY, ids=["%s-%s" % c for c in EARLY])
def test_recognizer_flags_where_lldb_stops_early(build_dir, tmp_path, arch, name):
    exp = expected_or_fail(arch, name)
    dump, text = lldb_dump(build_dir, tmp_path, core_setup(exp, platform_sysroot=True))
    (thread,) = [t for t in dump["threads"] if t["tid"] == exp["threads"][0]["tid"]]
    theirs = stack_frames(thread["frames"])
    exp_pcs = [int(f["pc"], 16) for f in exp["threads"][0]["frames"]]
    # LLDB is right as far as it goes, and stops before the expected outermost frame.
    assert len(theirs) < len(exp_pcs), text
    assert [pc for pc, _, _ in theirs] == exp_pcs[:len(theirs)], text
    flags = [first["recognized"].get("ehbt_agrees") for _, first, _ in theirs]
    last = theirs[-1][1]
    if last["pc"] != exp_pcs[len(theirs) - 1] or not last["recognized"]:
        pytest.fail("LLDB's last frame has no annotation: %s" % last)
    assert flags == ["true"] * (len(theirs) - 1) + ["false"], (flags, text)


# Where LLDB 16 goes wrong without stopping: i386 sighandler/siginfo. The handler returns to
# glibc's restorer (__restore / __restore_rt), a local symbol the cross libc's .dynsym lacks
# and no FDE covers; LLDB recognises signal trampolines only by name, so it unwinds the
# restorer as an ordinary function and its next frame skips fx_interrupted, fx_sig_caller and
# main. The engine recognises the restorer by its code (pop/mov $119/int $0x80,
# mov $173/int $0x80).
WRONG = [("i386", "sighandler"), ("i386", "siginfo")]


@pytest.mark.parametrize("arch,name", WRONG, ids=["%s-%s" % c for c in WRONG])
def test_recognizer_flags_where_lldb_goes_wrong(build_dir, tmp_path, arch, name):
    exp = expected_or_fail(arch, name)
    dump, text = lldb_dump(build_dir, tmp_path, core_setup(exp, platform_sysroot=True))
    (thread,) = [t for t in dump["threads"] if t["tid"] == exp["threads"][0]["tid"]]
    theirs = stack_frames(thread["frames"])
    exp_frames = exp["threads"][0]["frames"]
    exp_pcs = [int(f["pc"], 16) for f in exp_frames]
    (tramp,) = [i for i, f in enumerate(exp_frames) if f["type"] == "sigtramp"]
    # LLDB is right up to the trampoline, and wrong in the frame after it.
    got = [pc for pc, _, _ in theirs]
    assert got[:tramp + 1] == exp_pcs[:tramp + 1], text
    assert len(got) > tramp + 1 and got[tramp + 1] != exp_pcs[tramp + 1], text
    # The restorer frame has a module but no symbol: LLDB offers it to no recognizer (no
    # values); the wrong frame after it is flagged.
    flags = [first["recognized"].get("ehbt_agrees") for _, first, _ in theirs]
    assert flags[:tramp + 2] == ["true"] * tramp + [None, "false"], (flags, text)


def test_recognizer_values_in_frame_variable(build_dir, tmp_path):
    """`frame variable` lists the three values, ehbt_source as a string."""
    exp = expected_or_fail("aarch64", "pac")
    out = run_lldb(build_dir, tmp_path, ["frame variable", "frame select 2",
                                         "frame variable"],
                   pre=core_setup(exp, platform_sysroot=True))
    assert re.search(r"\(void \*\) ehbt_cfa = 0x[0-9a-f]{16}", out), out
    assert '($ehbt_source_t) ehbt_source = "context"' in out, out
    assert "(bool) ehbt_agrees = true" in out, out
    assert "(bool) ehbt_agrees = false" in out, out


ARRAY_C = r"""
#include <string.h>
__attribute__((noinline)) int look(const char *p) { return p[0]; }
int main(void) {
  char name[19];
  memset(name, 'x', sizeof name);  /* no NUL: LLDB's own summary shows all 19 */
  return look(name);
}
"""


def test_recognizer_values_are_its_own(build_dir, tmp_path):
    """`frame variable` shows exactly the three ehbt values, once each; the ehbt_source
    summary is bound to ehbt's own type, not to the program's char[19] array."""
    exe = h.compile_c(ARRAY_C, tmp_path / "array", flags=("-O0", "-g"))
    probe = ("script v = lldb.frame.FindVariable('name'); s = v.GetTypeSummary(); "
             "print('USER', v.GetTypeName(), s.IsValid() and s.GetData())")
    out = run_lldb(build_dir, tmp_path, [
        "breakpoint set -n look", "process launch", "frame select 1", MARK, "frame variable",
        END, probe, "process kill"], pre=["target create %s" % exe])
    shown = out.split(MARK, 1)[1].split(END, 1)[0]
    names = re.findall(r"^\(.*?\) (ehbt_\w+) = ", shown, re.M)
    assert sorted(names) == ["ehbt_agrees", "ehbt_cfa", "ehbt_source"], shown
    assert re.search(r'^\(\$ehbt_source_t\) ehbt_source = "(context|eh_frame)"$', shown,
                     re.M), shown
    # The program's array: LLDB's own rendering (all 19 characters, no NUL to stop at), not
    # the plugin's summary function.
    assert re.search(r'^\(char\[19\]\) name = "x{19}"$', shown, re.M), shown
    user = [line for line in out.splitlines() if line.startswith("USER ")]
    assert user and "_source_summary" not in user[0], user


def test_recognizer_costs_one_step_per_stop(build_dir, chain, tmp_path):
    """At a stop LLDB asks for frame 0's values by itself: that must not walk the stack. The
    whole walk runs once per stop, when a deeper frame is looked at."""
    probe = ("script import ehbt_lldb; c = list(ehbt_lldb._contexts.values())[0]; "
             "print('WALKS', c.walks_done)")
    out = run_lldb(build_dir, tmp_path, [
        "breakpoint set -n recurse", "process launch", probe, "frame variable",
        probe, "frame select 2", "frame variable", "frame select 4", "frame variable", probe,
        "continue", probe, "frame select 1", "frame variable", probe, "process kill"],
        pre=["target create %s" % chain])
    walks = [int(n) for n in re.findall(r"^WALKS (\d+)", out, re.M)]
    assert walks == [0, 0, 1, 1, 2], out
    assert out.count("ehbt_agrees = true") == 4, out


# ---- the installed layout -----------------------------------------------------------------------

def test_installed_plugin_finds_its_package(build_dir, tmp_path):
    """PREFIX/share/ehbt/lldb/ehbt_lldb.py imports PREFIX/lib/python3/dist-packages/ehbt with
    no PYTHONPATH or EHBT_PYTHONPATH (docs/install.md, "Installed layout")."""
    prefix = tmp_path / "prefix"
    h.install_into(build_dir, prefix, "engine/python", "plugins/lldb")
    plugin = prefix / "share" / "ehbt" / "lldb" / "ehbt_lldb.py"
    assert plugin.exists()
    exp = expected_or_fail("x86_64", "chain")
    env = h.env_without_package_path()
    proc = subprocess.run([LLDB, "-b", "--no-lldbinit", "-o",
                           "target create %s --core %s" % (exp["exe_file"], exp["core"]),
                           "-o", "command script import %s" % plugin,
                           "-o", "script import ehbt; print('PKG', ehbt.__file__)",
                           "-o", "ehbt"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    pkg = [line.split()[1] for line in out.splitlines() if line.startswith("PKG ")]
    assert pkg and pkg[0].startswith(str(prefix / "lib" / "python3" / "dist-packages")), out
    # The installed plugin prints ehbt's trace (its frames have lines: the fixture is -g).
    assert " fx_level3 () at " in out and " in main () at " in out, out
