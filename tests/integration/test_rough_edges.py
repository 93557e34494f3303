# SPDX-License-Identifier: Apache-2.0
"""The rough edges a new user hits first (issue 30): special files that used to block the
CLI forever, option paths accepted silently, ptrace failures all blamed on permissions, a
debuginfod outage said three times, SFrame version 1, files without unwind tables and
empty files. Every case runs the exact input a user would type, with a short timeout, and
the expected facts come from the construction (what the test made: a FIFO, a zombie, a
tracer) or from binutils (readelf, objdump), never from ehbt."""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

import cores_expect as ce
from test_cli import compile_c, make_crash  # noqa: E402

# Each command must answer at once: a FIFO used to block open(2) forever.
QUICK = 20
TIMEOUT = 120


def run(ehbt_bin, *args, timeout=QUICK, env=None):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def one_error_line(proc):
    """The single stderr line of a refused command (exit 2, nothing on stdout)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def crash(tmp_path_factory):
    core, exe = make_crash(tmp_path_factory.mktemp("rough"))
    return {"core": core, "exe": exe}


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# ------------------------------------------------------------------ 1. FIFOs, special files


def test_fifo_operands_are_refused_without_blocking(ehbt_bin, fifo, tmp_path):
    link = tmp_path / "link-to-fifo"
    link.symlink_to(fifo)
    for path in (fifo, link):
        for cmd in (["core", path], ["cfi", path], ["cfi", path, "--pc", "0x1000"],
                    ["sframe", "dump", path], ["sframe", "check", path],
                    ["sframe", "convert", path, "-o", tmp_path / "out.sframe"]):
            line = one_error_line(run(ehbt_bin, *cmd))
            assert line == "ehbt: %s: not a regular file" % path, (cmd, line)
    # A device is not opened either (reading /dev/zero would never end).
    line = one_error_line(run(ehbt_bin, "cfi", "/dev/zero"))
    assert line == "ehbt: /dev/zero: not a regular file", line
    # Refused like a directory, in the same words.
    line = one_error_line(run(ehbt_bin, "core", tmp_path))
    assert line == "ehbt: %s: not a regular file" % tmp_path, line


def test_fifo_options_are_usage_errors(ehbt_bin, crash, fifo):
    for option in ("--perf-map", "--exe"):
        line = one_error_line(run(ehbt_bin, "core", crash["core"], option, fifo))
        assert line.startswith("ehbt core: %s %s: not a regular file; usage: ehbt core " %
                               (option, fifo)), line


def test_fifo_as_sframe_convert_output_is_refused(ehbt_bin, crash, fifo):
    line = one_error_line(run(ehbt_bin, "sframe", "convert", crash["exe"], "-o", fifo))
    assert line.startswith("ehbt sframe: -o %s: not a regular file; usage: " % fifo), line


def test_python_module_refuses_fifos_too(build_dir, fifo):
    """The engine refuses, not only the CLI: ehbt.Image.open and ehbt.open_core raise."""
    code = ("import sys, ehbt\n"
            "for f in (ehbt.Image.open, ehbt.open_core):\n"
            "    try:\n"
            "        f(sys.argv[1])\n"
            "    except ehbt.Error as e:\n"
            "        print(e)\n")
    env = dict(os.environ, PYTHONPATH=str(build_dir / "engine" / "python"))
    proc = subprocess.run(["/usr/bin/python3", "-c", code, str(fifo)], capture_output=True,
                          text=True, env=env, timeout=QUICK)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(l.endswith("not a regular file") for l in lines), lines


def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    raise AssertionError("no build-id in %s" % path)


def test_fifos_the_engine_finds_by_itself_are_skipped(ehbt_bin, tmp_path):
    """A hostile machine: the core's executable replaced by a FIFO at the path the core names,
    the C library a FIFO inside the --sysroot, the debug file a FIFO in --debug-dir's
    build-id tree. Nothing blocks; each file is reported as unusable."""
    core, exe = make_crash(tmp_path / "hostile")
    libc = next(line.split()[-1] for line in subprocess.run(
        ["ldd", str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
        if "libc.so" in line)
    libc = os.path.realpath(libc)
    bid = build_id(exe)
    dbg = tmp_path / "dbg"
    (dbg / ".build-id" / bid[:2]).mkdir(parents=True)
    os.mkfifo(dbg / ".build-id" / bid[:2] / (bid[2:] + ".debug"))
    sysroot = tmp_path / "sysroot"
    (sysroot / os.path.dirname(libc).lstrip("/")).mkdir(parents=True)
    os.mkfifo(sysroot / libc.lstrip("/"))
    # With the executable in place: the FIFOs in the sysroot and the debug directory.
    proc = run(ehbt_bin, "core", core, "--json", "--sysroot", sysroot, "--debug-dir", dbg)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    names = [f["symbol"] for f in doc["threads"][0]["frames"]]
    assert names[:3] == ["cli_fx_level3", "cli_fx_level2", "cli_fx_level1"], names
    # The executable itself a FIFO now.
    exe.unlink()
    os.mkfifo(exe)
    proc = run(ehbt_bin, "core", core, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    exe_warnings = [w for w in doc["warnings"] if w["path"] == str(exe)]
    assert exe_warnings and exe_warnings[0]["kind"] == "unreadable_file", doc["warnings"]


# ----------------------------------------------------------- 2. option paths that do not exist


def test_nonexistent_option_paths_are_usage_errors(ehbt_bin, crash, tmp_path):
    missing = tmp_path / "missing"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        (["--exe", missing], "--exe %s: no such file" % missing),
        (["--sysroot", missing], "--sysroot %s: no such directory" % missing),
        (["--debug-dir", missing], "--debug-dir %s: no such directory" % missing),
        (["--sysroot", a_file], "--sysroot %s: not a directory" % a_file),
        (["--debug-dir", a_file], "--debug-dir %s: not a directory" % a_file),
        (["--exe", tmp_path], "--exe %s: not a regular file" % tmp_path),
        # The second of two --sysroot options is checked too.
        (["--sysroot", tmp_path, "--sysroot", missing], "--sysroot %s: no such directory" %
         missing),
    ]
    for extra, message in cases:
        line = one_error_line(run(ehbt_bin, "core", crash["core"], *extra))
        assert line.startswith("ehbt core: %s; usage: ehbt core " % message), (extra, line)


def test_nonexistent_option_paths_for_pid_are_usage_errors(ehbt_bin, tmp_path):
    missing = tmp_path / "missing"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        for option, message in (("--exe", "no such file"), ("--sysroot", "no such directory"),
                                ("--debug-dir", "no such directory")):
            line = one_error_line(run(ehbt_bin, "pid", sleeper.pid, option, missing))
            assert line.startswith("ehbt pid: %s %s: %s; usage: ehbt pid " %
                                   (option, missing, message)), line
        # Refused before any attach: the process was never stopped or traced.
        status = open("/proc/%d/status" % sleeper.pid).read()
        assert "TracerPid:\t0\n" in status
    finally:
        sleeper.kill()
        sleeper.wait()


def test_missing_perf_map_stays_a_warning(ehbt_bin, crash, tmp_path):
    proc = run(ehbt_bin, "core", crash["core"], "--perf-map", tmp_path / "absent.map")
    assert proc.returncode in (0, 1), proc.stderr
    assert any(line.startswith("warning: ") and "absent.map" in line
               for line in proc.stderr.splitlines()), proc.stderr


# ------------------------------------------------------------------- 3. ptrace attach failures


def comm(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def status_field(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return None


def wait_for(predicate, what, seconds=30):
    deadline = time.time() + seconds
    while not predicate():
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def test_attach_to_a_process_strace_holds(ehbt_bin):
    if shutil.which("strace") is None:
        pytest.skip("strace not installed")
    sleeper = subprocess.Popen(["sleep", "60"])
    tracer = subprocess.Popen(["strace", "-p", str(sleeper.pid), "-o", os.devnull],
                              stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: status_field(sleeper.pid, "TracerPid") == str(tracer.pid),
                 "strace to attach")
        line = one_error_line(run(ehbt_bin, "pid", sleeper.pid))
        assert line == ("ehbt: pid %d: cannot attach to %d (sleep): already traced by pid %d "
                        "(strace)" % (sleeper.pid, sleeper.pid, tracer.pid)), line
        assert "ptrace_scope" not in line
    finally:
        tracer.terminate()
        tracer.wait()
        sleeper.kill()
        sleeper.wait()


PTRACE_TRACEME = 0


def test_attach_to_a_child_that_asked_to_be_traced(ehbt_bin):
    """A child that called PTRACE_TRACEME before exec: its tracer is this test's process."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    pid = os.fork()
    if pid == 0:
        try:
            libc.ptrace(PTRACE_TRACEME, 0, None, None)
            os.execvp("sleep", ["sleep", "60"])
        finally:
            os._exit(127)
    try:
        # Stopped by SIGTRAP at the exec, traced by us.
        _, status = os.waitpid(pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), status
        wait_for(lambda: comm(pid) == "sleep", "the exec")
        line = one_error_line(run(ehbt_bin, "pid", pid))
        assert line == ("ehbt: pid %d: cannot attach to %d (sleep): already traced by pid %d "
                        "(%s)" % (pid, pid, os.getpid(), comm(os.getpid()))), line
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_attach_to_a_zombie(ehbt_bin):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        wait_for(lambda: status_field(pid, "State").startswith("Z"), "the child to exit")
        line = one_error_line(run(ehbt_bin, "pid", pid))
        assert line == ("ehbt: pid %d: cannot attach to %d (%s): it is a zombie: it has no "
                        "memory or registers left to unwind" % (pid, pid, comm(pid))), line
    finally:
        os.waitpid(pid, 0)


def test_attach_to_a_kernel_thread(ehbt_bin):
    # kthreadd is pid 2 on Linux (outside a pid namespace): the parent of all kernel threads.
    if not os.path.exists("/proc/2/comm") or comm(2) != "kthreadd":
        pytest.skip("pid 2 is not kthreadd here (a pid namespace?)")
    line = one_error_line(run(ehbt_bin, "pid", 2))
    assert line == ("ehbt: pid 2: cannot attach to 2 (kthreadd): it is a kernel thread: no "
                    "user-space stack"), line


def test_attach_to_no_process(ehbt_bin):
    # pid_max is at most 2^22 on Linux: this pid cannot exist.
    line = one_error_line(run(ehbt_bin, "pid", 99999999))
    assert line == "ehbt: pid 99999999: cannot attach to 99999999: no such process", line


# ------------------------------------------------------------------- 4. debuginfod, said once


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_debuginfod_down_is_one_warning(ehbt_bin, fixture_cores, tmp_path):
    """The buildid case's executable is missing, and several modules have no debug file: every
    one of them used to ask the closed port again or say so again."""
    exp = ce.expected_case(fixture_cores, "x86_64", "buildid", pytest.skip)
    assert not os.path.exists(exp["exe"])
    env = dict(os.environ, DEBUGINFOD_URLS="http://127.0.0.1:%d" % free_port(),
               DEBUGINFOD_CACHE_PATH=str(tmp_path / "cache"))
    empty = tmp_path / "empty-sysroot"
    empty.mkdir()
    proc = run(ehbt_bin, "core", exp["core"], "--debuginfod", "--sysroot", empty, "--json",
               timeout=TIMEOUT, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    failed = [w for w in doc["warnings"] if w["kind"] == "debuginfod_failed"]
    assert len(failed) == 1, failed
    # The first fetch that found the port closed is named: the vDSO's debuginfo or the
    # missing executable, whichever the core lists first.
    m = re.fullmatch(r"debuginfod: fetching the (?:executable|debuginfo of) (\S+) \(build-id "
                     r"([0-9a-f]+)\) failed: server unreachable \(Connection refused\); not "
                     r"asked again for this core", failed[0]["message"])
    assert m, failed[0]["message"]
    assert (m.group(1), m.group(2)) in {(mod["path"], mod["build_id"]) for mod in doc["modules"]}
    # Text mode: one line on stderr.
    proc = run(ehbt_bin, "core", exp["core"], "--debuginfod", "--sysroot", empty,
               timeout=TIMEOUT, env=env)
    lines = [l for l in proc.stderr.splitlines() if "debuginfod" in l]
    assert len(lines) == 1 and lines[0] == "warning: " + failed[0]["message"], proc.stderr


# ---------------------------------------------------------------------- 5. SFrame version 1

FUNC_S = """\
\t.text
\t.globl f
\t.type f, @function
f:
\t.cfi_startproc
\tpushq %rbp
\t.cfi_def_cfa_offset 16
\t.cfi_offset 6, -16
\tmovq %rsp, %rbp
\t.cfi_def_cfa_register 6
\tpopq %rbp
\t.cfi_def_cfa 7, 8
\tret
\t.cfi_endproc
\t.size f, .-f
"""


def gas_sframe_version(obj):
    """The SFrame version binutils' objdump reads from obj's .sframe (the version gas wrote)."""
    out = subprocess.run(["objdump", "--sframe=.sframe", str(obj)], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if "Version:" in line:
            return line.split("Version:")[1].strip()
    return None


@pytest.fixture(scope="module")
def sframe_v1_object(tmp_path_factory):
    """An object whose .sframe Debian 12's `as --gsframe` wrote: version 1."""
    if os.uname().machine != "x86_64":
        pytest.skip("the assembly is x86-64")
    helptext = subprocess.run(["as", "--help"], capture_output=True, text=True).stdout
    if "--gsframe" not in helptext:
        pytest.skip("this `as` cannot write SFrame")
    d = tmp_path_factory.mktemp("sframe1")
    (d / "f.s").write_text(FUNC_S)
    obj = d / "f.o"
    subprocess.run(["as", "--gsframe", "-o", str(obj), str(d / "f.s")], check=True)
    if gas_sframe_version(obj) != "SFRAME_VERSION_1":
        pytest.skip("this `as` writes %s, not version 1" % gas_sframe_version(obj))
    return obj


def test_sframe_version_1_is_named(ehbt_bin, sframe_v1_object):
    for sub in ("dump", "check"):
        for extra in ([], ["--json"]):
            line = one_error_line(run(ehbt_bin, "sframe", sub, sframe_v1_object, *extra))
            assert line == ("ehbt: %s: .sframe: SFrame version 1 is not supported (only 2 and 3)"
                            % sframe_v1_object), line


def test_sframe_version_1_in_a_walk_is_named(ehbt_bin, tmp_path):
    """A program assembled with --gsframe and linked by Debian 12's ld (which keeps version
    1), crashed; --source sframe stops in its first frame saying why."""
    helptext = subprocess.run(["as", "--help"], capture_output=True, text=True).stdout
    if "--gsframe" not in helptext:
        pytest.skip("this `as` cannot write SFrame")
    core, exe = make_crash(tmp_path / "v1", "-Wa,--gsframe")
    if gas_sframe_version(exe) != "SFRAME_VERSION_1":
        pytest.skip("the linked .sframe is %s, not version 1" % gas_sframe_version(exe))
    proc = run(ehbt_bin, "core", core, "--json", "--source", "sframe", timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    thread = json.loads(proc.stdout)["threads"][0]
    assert len(thread["frames"]) == 1, thread
    assert "its .sframe is not used: SFrame version 1 is not supported (only 2 and 3)" in \
        thread["stop_detail"], thread["stop_detail"]


# --------------------------------------------------- 6. no unwind tables; empty files


def sections(path):
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("[") and "]" in line:
            rest = line.split("]", 1)[1].split()
            if rest:
                names.add(rest[0])
    return names


def test_cfi_of_a_file_without_unwind_tables(ehbt_bin, tmp_path):
    src = tmp_path / "plain.s"
    src.write_text("\t.text\n\t.globl f\nf:\n\tret\n")  # no .cfi_* directives at all
    obj = tmp_path / "plain.o"
    subprocess.run(["as", "-o", str(obj), str(src)], check=True)
    assert not sections(obj) & {".eh_frame", ".debug_frame", ".sframe"}, sections(obj)
    proc = run(ehbt_bin, "cfi", obj)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert ("note: %s has no .eh_frame and no .debug_frame: no DWARF unwind tables "
            "(and no .sframe)\n" % obj) in proc.stdout, proc.stdout
    doc = json.loads(run(ehbt_bin, "cfi", obj, "--json").stdout)
    assert doc["fdes"] == 0
    assert doc["sections"] == {"eh_frame": False, "debug_frame": False, "sframe": False}


def test_cfi_of_a_file_with_only_sframe(ehbt_bin, sframe_v1_object, tmp_path):
    only = tmp_path / "only-sframe.o"
    subprocess.run(["objcopy", "-R", ".eh_frame", "-R", ".rela.eh_frame",
                    str(sframe_v1_object), str(only)], check=True)
    have = sections(only)
    assert ".sframe" in have and ".eh_frame" not in have, have
    proc = run(ehbt_bin, "cfi", only)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert ("note: %s has no .eh_frame and no .debug_frame: no DWARF unwind tables (it has "
            ".sframe: see `ehbt sframe dump %s`)\n" % (only, only)) in proc.stdout, proc.stdout
    doc = json.loads(run(ehbt_bin, "cfi", only, "--json").stdout)
    assert doc["sections"] == {"eh_frame": False, "debug_frame": False, "sframe": True}


def test_cfi_of_a_data_only_library(ehbt_bin, tmp_path):
    """gcc and ld make an .eh_frame holding only its zero terminator for a library without
    code: noted, but nothing in it is wrong (exit 0)."""
    src = tmp_path / "data.c"
    src.write_text("const int table[4] = {1, 2, 3, 4};\n")
    lib = tmp_path / "libdata.so"
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    frames = subprocess.run(["readelf", "--debug-dump=frames", str(lib)], capture_output=True,
                            text=True, check=True).stdout
    if ".eh_frame" not in sections(lib) or " FDE " in frames:
        pytest.skip("this toolchain made no empty .eh_frame")
    proc = run(ehbt_bin, "cfi", lib)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "note: %s: .eh_frame holds no FDE: no unwind rows\n" % lib in proc.stdout, proc.stdout


def test_cfi_of_a_file_with_tables_has_no_note(ehbt_bin, crash):
    proc = run(ehbt_bin, "cfi", crash["exe"])
    assert proc.returncode == 0, proc.stderr
    assert "note:" not in proc.stdout
    doc = json.loads(run(ehbt_bin, "cfi", crash["exe"], "--json").stdout)
    assert doc["sections"]["eh_frame"] is True


def test_empty_file_is_called_empty(ehbt_bin, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    for cmd in (["cfi", empty], ["core", empty], ["sframe", "dump", empty],
                ["sframe", "check", empty]):
        line = one_error_line(run(ehbt_bin, *cmd))
        assert line == "ehbt: %s: empty file" % empty, (cmd, line)
