# SPDX-License-Identifier: Apache-2.0
"""A live process under GDB and under LLDB is walked within its stack's mapping, as `ehbt` is
(issue #32: a scan never reads beyond the stack region it started in). The debuggers' memory
callbacks say nothing of mappings; the plugins hand the engine the process's mappings
(Unwinder.unwind's `regions`: GDB a local process's /proc/PID/maps, LLDB its memory regions).

The program: cores/programs/coroutine.c (a makecontext coroutine on a .bss stack, faulting in
fx_co_crash), built here and run under each debugger to its SIGSEGV (both debuggers turn address
randomisation off, so the two runs have the same addresses).

- With libc's tables hidden from the engine, the walk from makecontext's planted return
  address has only the stack scan left, which reads up the coroutine's stack: through the
  plugin's memory and mappings it ends at the end of that mapping, as the engine's own core
  walk does; through the same memory without the mappings no bound is known.
- The plugin's `ehbt --json` equals the CLI's `ehbt core` on a core GDB wrote at that stop
  (gcore): the same frames, stop reason and detail.
"""
import json
import os
import shutil
import subprocess

import pytest

import ehbt_py as h

PROGRAMS = h.ROOT / "cores" / "programs"

# Sourced into the debugger, to walk at the stop with libc hidden (hidden_libc_walks).
HIDE = h.ROOT / "tests" / "integration" / "hide_modules.py"


@pytest.fixture(scope="module")
def coroutine(tmp_path_factory):
    d = tmp_path_factory.mktemp("coroutine")
    exe = d / "coroutine"
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-I", str(PROGRAMS), "-o",
                    str(exe), str(PROGRAMS / "coroutine.c")], check=True)
    return exe


@pytest.fixture(scope="module")
def gdb_run(build_dir, coroutine, tmp_path_factory):
    """(plugin document, hidden-libc walks, gcore core) of one GDB run to the SIGSEGV."""
    h.import_ehbt(build_dir)
    h.need_gdb()
    d = tmp_path_factory.mktemp("gdb")
    doc, walks, core = d / "ehbt.json", d / "walks.json", d / "at-stop.core"
    out = h.run_gdb(build_dir, [coroutine], [
        "run",
        "python open(%r, 'w').write(gdb.execute('ehbt --json', to_string=True))" % str(doc),
        "source %s" % HIDE,
        "python inf = gdb.selected_inferior(); arch, regs = _thread_registers(_NO_OPTIONS); "
        "hidden_libc_walks(_modules.get(inf), regs, _memory_reader(inf), "
        "_modules.regions(inf), %r)" % str(walks),
        "gcore %s" % core,
        "kill"])
    assert doc.exists() and walks.exists() and core.exists(), out[-3000:]
    line = [t for t in doc.read_text().splitlines() if t.startswith("{")]
    return json.loads(line[0]), json.loads(walks.read_text()), core


def crashing(doc):
    [t] = [t for t in doc["threads"] if t["crashing"]]
    return [f["pc"] for f in t["frames"]], t["stop_reason"], t["stop_detail"]


def check_hidden_walks(walks):
    assert walks["regions"] > 5, walks
    bounded, unbounded = walks["bounded"], walks["unbounded"]
    # The scan from __start_context's planted return address ends at the end of the
    # coroutine stack's mapping, never outermost (the core test's walk, live).
    assert bounded["stop"] == "no_module", bounded
    assert "and the end of its stack mapping at" in bounded["detail"], bounded["detail"]
    assert "the end of its stack mapping" not in unbounded["detail"], unbounded["detail"]


def test_gdb_live_walk_is_bounded_by_the_process_mappings(gdb_run):
    check_hidden_walks(gdb_run[1])


def test_gdb_live_plugin_equals_the_cli(gdb_run, ehbt_bin):
    doc, walks, core = gdb_run
    p = subprocess.run([str(ehbt_bin), "core", str(core), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    want = crashing(json.loads(p.stdout))
    assert crashing(doc) == want
    # The hidden-libc walk is the full walk up to makecontext's planted return address.
    assert walks["bounded"]["pcs"] == [int(pc, 16) for pc in want[0][:3]], (walks, want)


def test_lldb_live_walk_is_bounded_and_equals_the_cli(build_dir, coroutine, gdb_run, ehbt_bin,
                                                      tmp_path):
    from test_lldb_plugin import DUMP_SCRIPT, LLDB, PLUGIN, lldb_env

    if shutil.which(LLDB) is None:
        pytest.skip("%s not installed" % LLDB)
    helpers = tmp_path / "ehbt_test_helpers.py"
    helpers.write_text(DUMP_SCRIPT)
    doc, walks = tmp_path / "ehbt.json", tmp_path / "walks.json"
    plugin = "ehbt_lldb"
    # lldb -b stops reading -o commands when the process crashes: the commands at the
    # SIGSEGV are -k ones (run after a crash).
    at_crash = [
        "ehbt_test_capture %s ehbt --json" % doc,
        "script import %s, hide_modules; p = lldb.process; t = p.GetSelectedThread(); "
        "c = %s._context(p); arch = %s._engine_arch(p.GetTarget()); "
        "hide_modules.hidden_libc_walks(c.module_set(lldb.debugger, p.GetTarget(), p), "
        "%s._thread_registers(t, arch), %s._memory_reader(p), c.regions(p), %r)"
        % (plugin, plugin, plugin, plugin, plugin, str(walks)),
        "process kill"]
    cmd = [LLDB, "-b", "--no-lldbinit", "-o", "settings set auto-confirm true",
           "-o", "target create %s" % coroutine, "-o", "command script import %s" % PLUGIN,
           "-o", "command script import %s" % helpers, "-o", "command script import %s" % HIDE,
           "-o", "process launch"]
    for c in at_crash:
        cmd += ["-k", c]
    proc = subprocess.run(cmd, env=lldb_env(build_dir), capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert doc.exists() and walks.exists(), out[-3000:]
    check_hidden_walks(json.loads(walks.read_text()))
    captured = doc.read_text()
    got = json.loads(captured[captured.find("{"):])
    # GDB's run had the same addresses (no randomisation in either debugger): the CLI on the
    # core GDB wrote at the same stop.
    p = subprocess.run([str(ehbt_bin), "core", str(gdb_run[2]), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert crashing(got) == crashing(json.loads(p.stdout))
    assert os.path.exists(str(gdb_run[2]))
