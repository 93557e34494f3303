# SPDX-License-Identifier: Apache-2.0
"""The GDB plugin (plugins/gdb/ehbt.py): the `ehbt` command against GDB's own frames and the
fixture cores' expected frames, and the `ehbt` unwinder driving GDB's bt/up/finish.

GDB runs in batch mode with EHBT_PYTHONPATH pointing at the build tree's package."""

import json
import os
import re
import subprocess

import pytest

import cores_expect as ce
import ehbt_py as h

pytestmark = pytest.mark.usefixtures("built")


@pytest.fixture(scope="module")
def built(build_dir):
    h.import_ehbt(build_dir)  # skips when the module is not built
    h.need_gdb()


def gdb_json(build_dir, args, pre=(), gdb="gdb", command="ehbt -all -json", tmp=None):
    out = os.path.join(str(tmp), "ehbt.json")
    text = h.run_gdb(build_dir, args, list(pre) + [
        "python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (out, command)],
        gdb=gdb)
    assert os.path.exists(out), text[-3000:]
    with open(out) as f:
        captured = f.read()
    # GDB's own warnings (thread switches in a core) may come first; the document follows.
    start = captured.find("\n{") + 1 if not captured.startswith("{") else 0
    return json.loads(captured[start:]), text


def test_sourcing_changes_nothing_until_enabled(build_dir):
    out = h.run_gdb(build_dir, [], ["info unwinder", "help ehbt", "complete ehbt -a",
                                    "complete ehbt -", "enable unwinder global ehbt",
                                    "info unwinder"])
    first, _, after = out.partition("Usage: ehbt")
    assert "ehbt [disabled]" in first, out
    assert "-compare" in after and "-json" in after
    assert "ehbt -all\n" in after
    for opt in ("-all", "-json", "-full", "-n", "-compare"):
        assert "ehbt %s\n" % opt in after
    assert after.rstrip().endswith("ehbt"), after  # enabled: no "[disabled]" any more


BAD_ARGUMENTS = {
    "ehbt -bogus": "ehbt: unknown argument '-bogus' (see 'help ehbt')",
    "ehbt -n": "ehbt: -n expects a number between 1 and 4294967295",
    "ehbt -n x": "ehbt: -n expects a number between 1 and 4294967295, not 'x'",
    "ehbt -n 0": "ehbt: -n expects a number between 1 and 4294967295, not 0",
    "ehbt -n 99999999999999999999":
        "ehbt: -n expects a number between 1 and 4294967295, not 99999999999999999999",
    "ehbt 'unclosed": "ehbt: ",
    # The CLI's long options, checked as the CLI checks them (a usage error, before anything).
    "ehbt --max-frames=x": "ehbt: --max-frames expects a number between 1 and 4294967295, not 'x'",
    "ehbt --sysroot /nonexistent/root": "ehbt: --sysroot /nonexistent/root: no such directory",
    "ehbt --debug-dir /nonexistent/dbg": "ehbt: --debug-dir /nonexistent/dbg: no such directory",
    "ehbt --exe /nonexistent/exe": "ehbt: --exe /nonexistent/exe: no such file",
    "ehbt --source bogus": "ehbt: --source expects auto, eh_frame, sframe or frame_pointer",
}


def test_bad_arguments_are_one_line(build_dir, chain_core, tmp_path):
    """Each bad argument is one error starting with "ehbt: " (a gdb.GdbError, which GDB prints
    as its message alone), never a Python exception with its traceback; with and without a
    core loaded (the arguments are checked first)."""
    exe, core = chain_core
    script = (
        "python\n"
        "import json\n"
        "for i, c in enumerate(%r):\n"
        "    try:\n"
        "        gdb.execute(c, to_string=True)\n"
        "        print('RESULT', i, 'no error')\n"
        "    except gdb.error as e:\n"
        "        print('RESULT', i, json.dumps(str(e)))\n"
        "end\n") % list(BAD_ARGUMENTS)
    commands = tmp_path / "bad.gdb"
    commands.write_text(script)
    for args in ([], [exe, core]):
        out = h.run_gdb(build_dir, args, ["source %s" % commands])
        assert "Traceback" not in out and "Python Exception" not in out, out
        results = dict(re.findall(r"^RESULT (\d+) (.*)$", out, re.M))
        for i, (command, message) in enumerate(BAD_ARGUMENTS.items()):
            error = json.loads(results[str(i)])
            assert "\n" not in error and error.startswith(message), (command, error)


# ---- fixture cores ---------------------------------------------------------------------------

@pytest.mark.parametrize("arch,name", ce.ALL_CASES, ids=["%s-%s" % c for c in ce.ALL_CASES])
def test_fixture_core_json_matches_expected(build_dir, tmp_path, arch, name):
    if not ce.expected_path(arch, name).exists():
        pytest.skip("no fixture core (run cores/make-cores.sh %s)" % arch)
    exp = ce.load_expected(arch, name)
    gdb = ce.MAKE.ARCHES[arch]["gdb"]
    h.need_gdb(gdb)
    pre = ["set sysroot " + exp["sysroot"]] if exp.get("sysroot") else []
    if exp.get("debug_sysroot"):  # where GDB itself would be told to find the debug file
        pre.append("set debug-file-directory %s/usr/lib/debug" % exp["debug_sysroot"])
    pre += ["file " + exp["exe_file"], "core " + exp["core"]]
    doc, text = gdb_json(build_dir, [], pre=pre, gdb=gdb, tmp=tmp_path)
    assert doc["format"] == "ehbt-backtrace/1" and doc["core"] == exp["core"]
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)


def test_rebuilt_file_gdb_loads_is_not_used(build_dir, ehbt_bin, tmp_path):
    """GDB loads a rebuilt executable (the buildid fixture's variant: another build-id than the
    one the core records). The engine decides which files are used: the plugin reports the
    core's module with build_id_match false, uses nothing of the variant (no symbol, no
    table), and walks as the CLI does with the same file given as --exe."""
    if not ce.expected_path("x86_64", "buildid").exists():
        pytest.fail("no fixture core (run cores/make-cores.sh x86_64)")
    exp = ce.load_expected("x86_64", "buildid")
    assert exp["variant_build_id"] != exp["exe_build_id"]
    doc, text = gdb_json(build_dir, [], pre=["file " + exp["variant_file"], "core " + exp["core"]],
                         tmp=tmp_path)
    assert not [m for m in doc["modules"] if m["build_id"] == exp["variant_build_id"]], \
        doc["modules"]
    exe_mods = [m for m in doc["modules"] if m["path"] == exp["exe"]]
    assert len(exe_mods) == 1, doc["modules"]
    assert exe_mods[0]["build_id_match"] is False and exe_mods[0]["file"] is None, exe_mods
    assert exe_mods[0]["build_id"] == exp["exe_build_id"], exe_mods
    (crashing,) = [t for t in doc["threads"] if t["crashing"]]
    for f in crashing["frames"]:
        if f.get("module") == exp["exe"]:
            assert f.get("symbol") is None, "symbol from the wrong-build-id file: %s" % f
    # GDB's truth, up to the first frame in the executable (past it nothing can be proven
    # without its tables): the walk stops there, not outermost.
    (truth,) = [t for t in exp["threads"] if t["crashing"]]
    want = []
    for f in truth["frames"]:
        want.append(int(f["pc"], 16))
        if os.path.basename(exp["exe"]) in f["module_aliases"]:
            break
    assert [int(f["pc"], 16) for f in crashing["frames"]] == want, crashing["frames"]
    assert crashing["stop_reason"] != "outermost", crashing
    cli = subprocess.run([str(ehbt_bin), "core", exp["core"], "--exe",
                          exp["variant_file"], "--json"], capture_output=True, text=True)
    (cli_crashing,) = [t for t in json.loads(cli.stdout)["threads"] if t["crashing"]]
    assert [f["pc"] for f in cli_crashing["frames"]] == [f["pc"] for f in crashing["frames"]]
    assert cli_crashing["stop_reason"] == crashing["stop_reason"]


# Fixture cores GDB cannot unwind without their executable: it knows no file, so only its
# heuristic unwinders would go past the engine's last frame.
NO_EXE_CASES = ["chain", "sighandler", "threads", "noreturn", "smashed"]


@pytest.mark.parametrize("name", NO_EXE_CASES)
def test_unwinder_stops_where_the_walk_ends_without_the_executable(build_dir, name):
    """`gdb -c CORE` alone, `enable unwinder global ehbt`, `bt`: exactly the crashing thread's
    frames GDB found with the executable (the fixture's expected frames), then GDB stops,
    where before it went on into frames made of stack words (0x38, 0x1, ...)."""
    if not ce.expected_path("x86_64", name).exists():
        pytest.fail("no fixture core (run cores/make-cores.sh x86_64)")
    exp = ce.load_expected("x86_64", name)
    out = h.run_gdb(build_dir, ["-c", exp["core"]], [
        "enable unwinder global ehbt", "echo MARK:BT\\n", "bt", "echo MARK:END\\n"])
    bt = out.split("MARK:BT\n", 1)[1].split("MARK:END\n", 1)[0]
    got = [m.group(1) or "sigtramp"
           for m in re.finditer(r"^#\d+\s+(?:(0x[0-9a-f]+) in |<signal handler called>)", bt,
                                re.M)]
    (thread,) = [t for t in exp["threads"] if t["crashing"]]
    want = ["sigtramp" if f["type"] == "sigtramp" else f["pc"] for f in thread["frames"]]
    assert [g if g == "sigtramp" else hex(int(g, 16)) for g in got] == \
        [w if w == "sigtramp" else hex(int(w, 16)) for w in want], bt
    assert bt.rstrip().splitlines()[-1].startswith("Backtrace stopped: "), bt


# ---- a core of our own, GDB's bt with and without the unwinder ---------------------------------


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    d = tmp_path_factory.mktemp("chain")
    exe = h.compile_chain(d / "chain")
    return exe, d


@pytest.fixture(scope="module")
def chain_core(chain):
    exe, d = chain
    return exe, h.make_core(exe, d, env=dict(os.environ, EHBT_CRASH="1"))


def test_unwinder_gives_gdb_the_same_frames(build_dir, chain_core):
    exe, core = chain_core
    out = h.run_gdb(build_dir, [exe, core], [
        h.GDB_FRAMES_PY, "enable unwinder global ehbt", "echo ENABLED\\n",
        h.frames_cmd("UNWOUND"),
        "python print('WALKS', gdb._ehbt_plugin_state['unwinder'].walks)"])
    before = h.parse_frames(out)
    after = h.parse_frames(out, "UNWOUND")
    names = [n for _, n in before]
    assert "bottom" in names, out  # below it: abort, raise and friends from libc
    names = names[names.index("bottom"):]
    assert names[:4] == ["bottom", "level3", "level2", "level1"], out
    assert names.count("recurse") == 6 and names[-1] == "main", names
    assert after == before
    walks = [line for line in out.splitlines() if line.startswith("WALKS ")]
    assert walks and int(walks[0].split()[1]) >= 1, "the ehbt unwinder never ran:\n" + out


def test_ehbt_command_on_own_core(build_dir, chain_core, tmp_path):
    exe, core = chain_core
    out = h.run_gdb(build_dir, [exe, core], [
        h.GDB_FRAMES_PY, "echo MARK:EHBT\\n", "ehbt", "echo MARK:COMPARE\\n", "ehbt -compare",
        "echo MARK:N3\\n", "ehbt -n 3", "echo MARK:FULL\\n", "ehbt -full -n 1",
        "echo MARK:END\\n"])
    theirs = h.parse_frames(out)
    pieces = re.split(r"^MARK:(\w+)\n", out, flags=re.M)
    part = dict(zip(pieces[1::2], pieces[2::2]))
    ours = h.parse_bt_text(part["EHBT"])
    # GDB stops at main; the engine goes on to _start. GDB names libc's frames from its
    # debug info (__GI_raise), the engine from the ELF symbol table (raise): names are
    # compared from the program's own frames on.
    assert [pc for _, pc, _ in ours[:len(theirs)]] == [pc for pc, _ in theirs]
    start = [n for _, n in theirs].index("bottom")
    assert [name for _, _, name in ours[start:len(theirs)]] == [n for _, n in theirs[start:]]
    assert [name for _, _, name in ours[len(theirs):]][-1] == "_start"
    assert "GDB and ehbt agree on all %d frames GDB shows." % len(theirs) in part["COMPARE"]
    assert "first difference" not in part["COMPARE"]
    assert len(h.parse_bt_text(part["N3"])) == 3
    # As the CLI says it: "Backtrace stopped: max_frames: limit of 3 frames".
    assert part["N3"].rstrip().splitlines()[-1].startswith("Backtrace stopped: max_frames")
    assert "via context" in part["FULL"] and "rsp=0x" in part["FULL"]


# ---- a live session ---------------------------------------------------------------------------

def test_live_session_ehbt_up_finish(build_dir, chain, tmp_path):
    exe, _ = chain
    py_frames = h.GDB_FRAMES_PY
    out = h.run_gdb(build_dir, [exe], [
        "break bottom", "run",
        py_frames, "echo EHBT\\n", "ehbt", "echo END\\n",
        "enable unwinder global ehbt",
        h.frames_cmd("UNWOUND"),
        "up",
        "python print('SELECTED', gdb.selected_frame().name())",
        # from_tty, as when typed: batch-mode commands do not announce "Run till exit".
        "python gdb.execute('finish', True)",
        "python print('AFTER', gdb.selected_frame().name(), hex(gdb.selected_frame().pc()))",
        h.frames_cmd("FINISHED"),
        "python print('WALKS', gdb._ehbt_plugin_state['unwinder'].walks)",
        "kill"])
    theirs = h.parse_frames(out)
    assert [n for _, n in theirs[:4]] == ["bottom", "level3", "level2", "level1"], out
    ours = h.parse_bt_text(out.split("EHBT\n", 1)[1].split("END\n", 1)[0])
    assert [(pc, name) for _, pc, name in ours[:len(theirs)]] == theirs
    assert h.parse_frames(out, "UNWOUND") == theirs
    assert "SELECTED level3" in out
    assert "Run till exit from #1" in out, out
    # finish from level3 returns into level2, at the return address bt showed for level3.
    after = [line.split() for line in out.splitlines() if line.startswith("AFTER ")]
    assert after and after[0][1] == "level2", out
    assert int(after[0][2], 16) == theirs[2][0]
    assert h.parse_frames(out, "FINISHED") == theirs[2:]
    walks = [line for line in out.splitlines() if line.startswith("WALKS ")]
    assert int(walks[0].split()[1]) >= 2, out  # one walk per stop at least


def test_live_json_matches_gdb(build_dir, chain, tmp_path):
    exe, _ = chain
    doc, text = gdb_json(build_dir, [exe], pre=["break bottom", "run", h.GDB_FRAMES_PY],
                         command="ehbt -json", tmp=tmp_path)
    theirs = h.parse_frames(text)
    # A live process is named by "pid" (no "core"), and the document is one line.
    assert "core" not in doc and doc["pid"] > 0 and doc["arch"] == os.uname().machine
    assert doc["warnings"] == []
    # The truth of the stop: the breakpoint's trap (int3: SIGTRAP, SI_KERNEL), in the thread
    # that hit it. The kernel's force_sig() leaves siginfo's union zero: no address (GDB's
    # $_siginfo shows si_addr 0x0 whatever the code; the report layer keeps none).
    assert doc["signal"] == {"number": 5, "name": "SIGTRAP", "code": 128, "address": None}
    (thread,) = doc["threads"]
    frames = thread["frames"]
    assert [(int(f["pc"], 16), f["symbol"]) for f in frames[:len(theirs)]] == theirs
    assert thread["stop_reason"] == "outermost" and thread["crashing"] is True
    assert doc["executable"] == os.path.realpath(exe)
    libc = [m["path"] for m in doc["modules"] if os.path.basename(m["path"]) == "libc.so.6"]
    assert libc and all(p == os.path.realpath(p) for p in libc), libc  # as /proc/PID/maps
    assert frames[0]["source"] == "context" and all(
        f["source"] != "context" for f in frames[1:])
    assert any(os.path.basename(m["path"]) == "chain" for m in doc["modules"])


# ---- the installed layout -----------------------------------------------------------------------

def test_installed_plugin_finds_its_package(build_dir, chain_core, tmp_path):
    """PREFIX/share/ehbt/gdb/ehbt.py imports PREFIX/lib/python3/dist-packages/ehbt with no
    PYTHONPATH or EHBT_PYTHONPATH (docs/install.md, "Installed layout")."""
    prefix = tmp_path / "prefix"
    h.install_into(build_dir, prefix, "engine/python", "plugins/gdb")
    plugin = prefix / "share" / "ehbt" / "gdb" / "ehbt.py"
    assert plugin.exists()
    exe, core = chain_core
    env = h.env_without_package_path()
    proc = subprocess.run(["gdb", "-batch", "-nx", "-ex", "source %s" % plugin,
                           "-ex", "python import ehbt; print('PKG', ehbt.__file__)",
                           "-ex", "ehbt", str(exe), str(core)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    pkg = [line.split()[1] for line in out.splitlines() if line.startswith("PKG ")]
    assert pkg and pkg[0].startswith(str(prefix / "lib" / "python3" / "dist-packages")), out
    names = [name for _, _, name in h.parse_bt_text(out)]
    assert "bottom" in names and "main" in names, out


# ---- i386 live, through qemu-user's gdbstub ------------------------------------------------------
# This machine's kernel execs no 32-bit programs, so a live i386 process exists only inside
# qemu-i386; GDB debugs it through qemu's gdbstub (a remote target). The fixture programs are
# deterministic and qemu-user loads them at the same addresses every run, so the frames GDB
# recorded for the fixture (cores/make_cores.py, live at the same crash) are the expectation.

I386_LIVE = ["sighandler", "siginfo", "noreturn"]


def _i386_live(build_dir, name, commands):
    import socket

    exp = ce.load_expected("i386", name) if ce.expected_path("i386", name).exists() else None
    if exp is None:
        pytest.fail("no i386 fixture (run cores/make-cores.sh i386)")
    a = ce.MAKE.ARCHES["i386"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env_args = [x for e in a.get("guest_env", ()) for x in ("-E", e)]
    guest = subprocess.Popen([a["qemu"], "-L", a["sysroot"], "-g", str(port)] + env_args +
                             [exp["exe"]], cwd=str(ce.OUT / "i386"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: open("/proc/self/coredump_filter", "w").write(
                                 "0"))
    try:
        pre = ["set sysroot " + a["sysroot"], "set tcp connect-timeout 30",
               "set tdesc filename " + ce.MAKE.TDESCS[a["tdesc"]](),
               "handle SIGUSR1 nostop noprint pass", "file " + exp["exe"],
               "target remote 127.0.0.1:%d" % port, "continue"]
        out = h.run_gdb(build_dir, [], pre + commands + ["kill"], gdb=a["gdb"], timeout=120)
    finally:
        guest.kill()
        guest.wait()
    (thread,) = [t for t in exp["threads"] if t["crashing"]]
    return out, [int(f["pc"], 16) for f in thread["frames"]], dict(thread, signal=exp["signal"])


@pytest.mark.parametrize("name", I386_LIVE)
def test_i386_live_ehbt_command_through_qemu_gdbstub(build_dir, tmp_path, name):
    """`ehbt -json` on a live i386 process (remote target): the fixture's GDB frames."""
    out_file = tmp_path / "ehbt.json"
    out, want, thread = _i386_live(build_dir, name, [
        "python open(%r, 'w').write(gdb.execute('ehbt -json', to_string=True))" % str(out_file)])
    assert out_file.exists(), out[-3000:]
    text = out_file.read_text()
    assert "{" in text, out[-3000:]
    doc = json.loads(text[text.find("{"):])
    assert doc["arch"] == "i386"
    # qemu's gdbstub gives no siginfo: the signal GDB stopped with, its code and address null.
    assert doc["signal"] == {"number": thread["signal"], "name": doc["signal"]["name"],
                             "code": None, "address": None}, doc["signal"]
    (got,) = [t for t in doc["threads"] if t["crashing"]]
    assert [int(f["pc"], 16) for f in got["frames"]] == want, (got["frames"], want)
    assert got["stop_reason"] == "outermost", got
    if name in ("sighandler", "siginfo"):
        # The frame the signal interrupted is found from the trampoline's signal frame.
        sources = [f["source"] for f in got["frames"]]
        tramp = [i for i, f in enumerate(thread["frames"]) if f["type"] == "sigtramp"]
        assert tramp and sources[tramp[0] + 1] == "signal", sources


@pytest.mark.parametrize("name", I386_LIVE)
def test_i386_live_unwinder_through_qemu_gdbstub(build_dir, name):
    """With the ehbt unwinder enabled, GDB's own frames of the live i386 process are the
    fixture's GDB frames (GDB then unwinds with ehbt, not with its own CFI reader)."""
    out, want, _ = _i386_live(build_dir, name, [
        "set backtrace past-main on", "set backtrace past-entry on",
        "enable unwinder global ehbt", h.frames_cmd("UNWOUND"),
        "python print('WALKS', gdb._ehbt_plugin_state['unwinder'].walks)"])
    got = [pc for pc, _ in h.parse_frames(out, "UNWOUND")]
    assert got == want, out[-3000:]
    walks = [line for line in out.splitlines() if line.startswith("WALKS ")]
    assert walks and int(walks[0].split()[1]) >= 1, "the ehbt unwinder never ran:\n" + out
