# SPDX-License-Identifier: Apache-2.0
"""Helpers for the Python-API and GDB-plugin tests: importing the built `ehbt` package,
compiling small C programs, making core files, and GDB's own view of a stack (the oracle)."""

import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GDB_PLUGIN = ROOT / "plugins" / "gdb" / "ehbt.py"


def package_dir(build_dir):
    return pathlib.Path(build_dir) / "engine" / "python"


def import_ehbt(build_dir):
    """The ehbt package from the build tree, or a skip when it was not built."""
    path = package_dir(build_dir)
    if not (path / "ehbt" / "__init__.py").exists():
        pytest.skip("the Python module is not built (configure with -DEHBT_PYTHON=ON)")
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    try:
        import ehbt  # noqa: F401
    except ImportError as e:  # built for another interpreter than this one
        pytest.skip("ehbt does not import into %s: %s" % (sys.executable, e))
    return sys.modules["ehbt"]


def compile_c(source, out, flags=("-O0", "-g", "-fno-omit-frame-pointer"), compiler="gcc"):
    src = pathlib.Path(str(out) + ".c")
    src.write_text(source)
    subprocess.run([compiler, *flags, "-o", str(out), str(src)], check=True)
    return pathlib.Path(out)


# A chain of noinline calls for the debugger tests: main -> recurse (argc + 5 frames) ->
# level1 -> level2 -> level3 -> bottom, which calls abort() when EHBT_CRASH is set (to make a
# core) and otherwise returns (a live session stops at a breakpoint on it).
CHAIN_C = r"""
#include <stdlib.h>
__attribute__((noinline)) void bottom(int n) { if (n >= 0 && getenv("EHBT_CRASH")) abort(); }
__attribute__((noinline)) void level3(int n) { bottom(n); asm volatile(""); }
__attribute__((noinline)) void level2(int n) { level3(n + 1); asm volatile(""); }
__attribute__((noinline)) void level1(int n) { level2(n + 1); asm volatile(""); }
__attribute__((noinline)) int recurse(int n) {
  if (n == 0) { level1(0); return 0; }
  return recurse(n - 1) + 1;
}
int main(int argc, char **argv) { (void)argv; return recurse(argc + 4); }
"""


def compile_chain(out):
    """CHAIN_C built without frame pointers or inlining, with debug info."""
    return compile_c(CHAIN_C, out, flags=("-O1", "-g", "-fno-inline", "-fomit-frame-pointer"))


def install_into(build_dir, prefix, *subdirs):
    """Runs the install scripts of these directories of the build tree with `prefix` as the
    install prefix (what `cmake --install` does for them)."""
    for sub in subdirs:
        script = pathlib.Path(build_dir) / sub / "cmake_install.cmake"
        subprocess.run(["cmake", "-DCMAKE_INSTALL_PREFIX=%s" % prefix, "-P", str(script)],
                       check=True, capture_output=True)


def env_without_package_path():
    """This environment without EHBT_PYTHONPATH or PYTHONPATH, so that an installed plugin can
    find the ehbt package only through the installed layout."""
    return {k: v for k, v in os.environ.items() if k not in ("EHBT_PYTHONPATH", "PYTHONPATH")}


def _unlimited_core():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def make_core(exe, cwd, args=(), env=None):
    """Runs exe in cwd until it crashes and returns its core file (core_pattern `core`)."""
    pattern = pathlib.Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|"):
        pytest.skip("cores are piped to %s, not written to the working directory" % pattern)
    cwd = pathlib.Path(cwd)
    for old in cwd.glob("core*"):
        old.unlink()
    proc = subprocess.run([str(exe), *args], cwd=cwd, preexec_fn=_unlimited_core, env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode < 0, "the program did not crash: exit %d" % proc.returncode
    cores = [p for p in cwd.glob("core*") if p.is_file() and not p.suffix == ".c"]
    assert cores, "no core written in %s (core_pattern %r)" % (cwd, pattern)
    return cores[0]


def symbol_addresses(exe):
    """{name: link-time address} of the functions in exe, from nm (binutils)."""
    out = subprocess.run(["nm", "--defined-only", str(exe)], check=True, capture_output=True,
                         text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    return syms


def return_addresses(exe, callee):
    """Link-time addresses of the instructions after each `call <callee>`, from objdump."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], check=True,
                         capture_output=True, text=True).stdout
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if re.search(r"\scall\s+[0-9a-f]+ <%s>" % re.escape(callee), line):
            nxt = lines[i + 1].strip()
            found.append(int(nxt.split(":")[0], 16))
    return found


def triage_env(build_dir):
    """The environment ehbt-triage runs in under test: the build's package and CLI, and none of
    the fault-injection knobs a developer may have left set (EHBT_TRIAGE_ENGINE=cli, when set,
    stays: it runs the tests through the CLI fallback)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(package_dir(build_dir))
    cli = pathlib.Path(build_dir) / "engine" / "tools" / "ehbt"
    if cli.exists():
        env["EHBT_BIN"] = str(cli)
    for k in ("EHBT_TRIAGE_TEST_DELAY", "EHBT_TRIAGE_TEST_FAULT", "EHBT_TRIAGE_MEMORY_LIMIT",
              "EHBT_TRIAGE_TEST_LOSE_EVENTS"):
        env.pop(k, None)
    return env


def gdb_env(build_dir):
    env = dict(os.environ)
    env["EHBT_PYTHONPATH"] = str(package_dir(build_dir))
    env.pop("PYTHONPATH", None)
    return env


def need_gdb(name="gdb"):
    if shutil.which(name) is None:
        pytest.skip(name + " not installed")


# Defines, inside GDB, frames(marker): prints GDB's own frames of the selected thread as
# "<marker> <pc> <function>" lines. Frames GDB makes up from debug info (inlined and tail
# calls) have no stack frame of their own and are left out.
_FRAMES_DEF = """
def ehbt_test_frames(marker):
    f = gdb.newest_frame()
    while f is not None:
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            print("%s 0x%x %s" % (marker, f.pc(), f.name()))
        f = f.older()
"""
DEFINE_FRAMES = "python exec(%r)" % _FRAMES_DEF


def frames_cmd(marker="FRAME"):
    """A GDB command printing GDB's frames under `marker` (after DEFINE_FRAMES)."""
    return "python ehbt_test_frames(%r)" % marker


GDB_FRAMES_PY = frames_cmd()


def run_gdb(build_dir, args, commands, gdb="gdb", timeout=300, source_plugin=True):
    """Runs GDB in batch mode with the plugin sourced; returns its output (stdout+stderr)."""
    need_gdb(gdb)
    cmd = [gdb, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set width 0"]
    if source_plugin:
        cmd += ["-ex", "source " + str(GDB_PLUGIN)]
    cmd += ["-ex", DEFINE_FRAMES]
    for c in commands:
        cmd += ["-ex", c]
    cmd += [str(a) for a in args]
    proc = subprocess.run(cmd, env=gdb_env(build_dir), capture_output=True, text=True,
                          timeout=timeout)
    return proc.stdout + proc.stderr


def parse_frames(text, marker="FRAME"):
    """[(pc, name)] from the FRAME lines GDB_FRAMES_PY prints."""
    out = []
    for line in text.splitlines():
        if line.startswith(marker + " "):
            _, pc, name = line.split(" ", 2)
            out.append((int(pc, 16), name))
    return out


def parse_bt_text(text):
    """[(index, pc, function)] from `ehbt`'s bt-like text."""
    out = []
    for m in re.finditer(r"^#(\d+)\s+0x([0-9a-f]+) in (\S+) \(\)", text, re.M):
        out.append((int(m.group(1)), int(m.group(2), 16), m.group(3)))
    return out
