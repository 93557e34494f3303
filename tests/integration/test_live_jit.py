# SPDX-License-Identifier: Apache-2.0
"""JIT frames of a live process through the GDB and LLDB plugins, as `ehbt pid` walks and
names them (issue #32 item 5): the plugins give the engine the process's JIT code (executable
mappings no file backs, from /proc/PID/maps) and the perf map naming it (/tmp/perf-PID.map,
or --perf-map FILE), by the rule the CLI's live path follows (ModuleSet.add_process_jit_code).

The program: cores/programs/node_wait.js under `node --perf-basic-prof
--interpreted-frames-native-stack`, parked in three nested JS functions (fx_wait3 blocks in
Atomics.wait, a futex wait no one wakes). Nothing moves while it waits, so `ehbt pid`, GDB
(`attach`, `ehbt`, `detach`) and LLDB (`process attach`, `ehbt`, `process detach`) see the same
stacks one after the other.

Expected values not from ehbt: the program's structure (fx_wait3, fx_wait2, fx_wait1, innermost
first, one after the other) and node's perf map itself (each JIT frame's name is the map's line
covering its pc, read here); the plugins' frames are then held to the CLI's on every thread.
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

import ehbt_py as h

SCRIPT = h.ROOT / "cores" / "programs" / "node_wait.js"
JS = ("fx_wait3", "fx_wait2", "fx_wait1")
# What the walks are compared on (source lines are not: the plugins' live modules come from
# the debuggers' files, whose separate debug files the engine does not look up).
KEYS = ("pc", "cfa", "source", "module", "symbol", "symbol_offset", "jit")


def perf_map_lines(path):
    """[(start, end, name)] of a perf map (START SIZE NAME, hex without 0x)."""
    out = []
    for line in open(path):
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) == 3:
            start, size = int(parts[0], 16), int(parts[1], 16)
            out.append((start, start + size, parts[2]))
    return out


def named_by(lines, pc):
    """The name of the line covering pc - 1 (a caller's pc is a return address: the call is
    before it); a later line replaces an earlier one."""
    found = [name for start, end, name in lines if start <= pc - 1 < end]
    return found[-1] if found else None


def threads_of(doc):
    return {t["tid"]: ([{k: f.get(k) for k in KEYS} for f in t["frames"]], t["stop_reason"],
                       t["stop_detail"]) for t in doc["threads"]}


def document(text):
    line = [t for t in text.splitlines() if t.startswith("{")]
    assert line, text[-3000:]
    return json.loads(line[0])


@pytest.fixture(scope="module")
def parked(build_dir, ehbt_bin, tmp_path_factory):
    """The walks of one parked node: {"cli", "cli_renamed", "gdb", "gdb_renamed", "gdb_absent",
    "lldb", "lldb_renamed", "lldb_absent"} documents, the perf map's lines, the renamed map's
    lines, the pid."""
    h.import_ehbt(build_dir)
    node = shutil.which("node")
    assert node, "node is needed (scripts/install-deps.sh)"
    h.need_gdb()
    from test_lldb_plugin import LLDB, PLUGIN, DUMP_SCRIPT, lldb_env

    assert shutil.which(LLDB), "%s is needed (scripts/install-deps.sh)" % LLDB
    d = tmp_path_factory.mktemp("live_jit")
    ready = d / "ready"
    p = subprocess.Popen([node, "--perf-basic-prof", "--interpreted-frames-native-stack",
                          str(SCRIPT), str(ready)], cwd=str(d))
    perf_map = "/tmp/perf-%d.map" % p.pid
    out = {"pid": p.pid}
    try:
        # Parked: the file written, then the main thread in futex(2) (syscall 202 on x86_64).
        for _ in range(600):
            if ready.exists() and open("/proc/%d/syscall" % p.pid).read().startswith("202 "):
                break
            time.sleep(0.05)
        else:
            pytest.fail("node did not park in Atomics.wait")
        # A copy of the map with other names: what --perf-map FILE names the frames by.
        renamed = d / "renamed.map"
        renamed.write_text(open(perf_map).read().replace("fx_wait", "fx_named"))
        absent = d / "absent.map"
        out["map"], out["renamed_map"] = perf_map_lines(perf_map), perf_map_lines(renamed)
        out["absent"] = str(absent)

        def cli(*extra):
            r = subprocess.run([str(ehbt_bin), "pid", str(p.pid), "--all-threads", "--json",
                                *extra], capture_output=True, text=True, timeout=300)
            assert r.returncode in (0, 1), r.stderr
            return json.loads(r.stdout)

        out["cli"] = cli()
        out["cli_renamed"] = cli("--perf-map", str(renamed))
        out["cli_absent"] = cli("--perf-map", str(absent))

        files = {k: d / ("%s.json" % k) for k in ("gdb", "gdb_renamed", "gdb_absent")}
        commands = ["attach %d" % p.pid]
        for key, extra in (("gdb", ""), ("gdb_renamed", " -perf-map %s" % renamed),
                           ("gdb_absent", " --perf-map %s" % absent)):
            commands.append("python open(%r, 'w').write(gdb.execute('ehbt -all -json%s', "
                            "to_string=True))" % (str(files[key]), extra))
        commands.append("detach")
        text = h.run_gdb(build_dir, [], commands)
        for key, path in files.items():
            assert path.exists(), text[-3000:]
            out[key] = document(path.read_text())

        helpers = d / "ehbt_test_helpers.py"
        helpers.write_text(DUMP_SCRIPT)
        files = {k: d / ("%s.json" % k) for k in ("lldb", "lldb_renamed", "lldb_absent")}
        cmd = [LLDB, "-b", "--no-lldbinit", "-o", "settings set auto-confirm true",
               "-o", "command script import %s" % PLUGIN,
               "-o", "command script import %s" % helpers,
               "-o", "process attach -p %d" % p.pid]
        for key, extra in (("lldb", ""), ("lldb_renamed", " --perf-map %s" % renamed),
                           ("lldb_absent", " --perf-map %s" % absent)):
            cmd += ["-o", "ehbt_test_capture %s ehbt --all --json%s" % (files[key], extra)]
        cmd += ["-o", "process detach"]
        proc = subprocess.run(cmd, env=lldb_env(build_dir), capture_output=True, text=True,
                              timeout=300, cwd=d)
        for key, path in files.items():
            assert path.exists(), (proc.stdout + proc.stderr)[-3000:]
            out[key] = document(path.read_text())
        # Still parked after both debuggers left: every walk saw the same stop.
        assert p.poll() is None
        assert open("/proc/%d/syscall" % p.pid).read().startswith("202 ")
        out["cli_after"] = cli()
    finally:
        p.kill()
        p.wait()
        if os.path.exists(perf_map):
            os.unlink(perf_map)
    return out


def main_thread(doc, pid):
    [t] = [t for t in doc["threads"] if t["tid"] == pid]
    return t["frames"]


def check_structure(frames, lines, names):
    """The JS functions innermost first, one after the other, each a JIT frame (no module)
    named by the perf map's line covering its pc; every JIT frame is so named."""
    jit = [f for f in frames if f.get("jit")]
    assert jit, [f["symbol"] for f in frames]
    assert not frames[0].get("jit")  # parked in libc: every JIT frame is a caller
    for f in jit:
        assert f["module"] is None, f
        assert f["symbol"] == named_by(lines, int(f["pc"], 16)), f
    symbols = [f["symbol"] or "" for f in frames]
    at = [next((i for i, s in enumerate(symbols) if re.search(r"\b%s\b" % n, s)), None)
          for n in names]
    assert None not in at and at == list(range(at[0], at[0] + len(names))), symbols
    assert all(frames[i].get("jit") for i in at), symbols
    assert any("node::Start" in s for s in symbols[at[-1]:]), symbols


def test_cli_walks_the_js_frames(parked):
    """The reference itself holds to the program: `ehbt pid` names the three JS functions
    from node's perf map, and the stack did not change while the debuggers looked."""
    check_structure(main_thread(parked["cli"], parked["pid"]), parked["map"], JS)
    assert threads_of(parked["cli_after"]) == threads_of(parked["cli"])


@pytest.mark.parametrize("host", ["gdb", "lldb"])
def test_plugin_jit_frames_equal_ehbt_pid(parked, host):
    doc = parked[host]
    assert doc["pid"] == parked["pid"] and "core" not in doc
    check_structure(main_thread(doc, parked["pid"]), parked["map"], JS)
    assert threads_of(doc) == threads_of(parked["cli"])


@pytest.mark.parametrize("host", ["gdb", "lldb"])
def test_plugin_perf_map_option(parked, host):
    """--perf-map FILE names the JIT frames from FILE instead of /tmp/perf-PID.map, as
    `ehbt pid --perf-map FILE` does."""
    doc = parked[host + "_renamed"]
    check_structure(main_thread(doc, parked["pid"]), parked["renamed_map"],
                    tuple(n.replace("fx_wait", "fx_named") for n in JS))
    assert threads_of(doc) == threads_of(parked["cli_renamed"])


@pytest.mark.parametrize("host", ["gdb", "lldb"])
def test_plugin_unreadable_perf_map_is_the_clis_warning(parked, host):
    """A --perf-map that does not exist: the CLI's warning in the document, and JIT frames
    still told (by the mappings) but unnamed."""
    doc, cli = parked[host + "_absent"], parked["cli_absent"]
    assert doc["warnings"] == cli["warnings"]
    assert [w for w in doc["warnings"] if w["path"] == parked["absent"]], doc["warnings"]
    assert threads_of(doc) == threads_of(cli)
    jit = [f for f in main_thread(doc, parked["pid"]) if f.get("jit")]
    assert jit and all(f["symbol"] is None for f in jit), jit
