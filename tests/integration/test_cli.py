# SPDX-License-Identifier: Apache-2.0
"""The `ehbt` command line: usage errors, unusable inputs, help, the text and JSON output on a
core crashed in the test itself, and a live 3-thread process."""
import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import time

import pytest

TIMEOUT = 120
HEX = re.compile(r"^0x[0-9a-f]+$")
STOP_REASONS = {"outermost", "max_frames", "no_module", "no_unwind_info", "memory_fault",
                "bad_unwind_info", "unsupported", "no_progress", "bad_pc"}
SOURCES = {"context", "eh_frame", "debug_frame", "sframe", "signal", "frame_pointer", "scan",
           "go_pclntab"}
FRAME_LINE = re.compile(r"^#(\d+) +0x([0-9a-f]{16}) in (\S+) \(\)(?: from (\S+))?"
                        r"(?: at (\S+):(\d+))?( \[\w+\])?$")
# The lines after a frame's first for the rest of its inlined calls and its physical function
# (GDB's frames without an address): "#4  outer () at a.c:20".
INLINED_LINE = re.compile(r"^#(\d+) +(\S+) \(\)(?: from (\S+))?(?: at (\S+):(\d+))?$")

CRASH_C = r"""
#include <stddef.h>
/* Each level calls the next and then does more work, so no call is a tail call. */
__attribute__((noinline)) void cli_fx_level3(volatile int *p) { *p = 42; }
__attribute__((noinline)) void cli_fx_level2(volatile int *p) {
  cli_fx_level3(p);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void cli_fx_level1(volatile int *p) {
  cli_fx_level2(p);
  __asm__ volatile("" ::: "memory");
}
int main(void) {
  cli_fx_level1((volatile int *)NULL);
  return 0;
}
"""

THREADS_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int released;
static long results[2];

__attribute__((noinline)) static void cli_wait_for_release(void) {
  struct timespec ts = {0, 1000000};
  while (!released) nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void *cli_worker(void *arg) {
  long id = (long)arg;
  cli_wait_for_release();
  long sum = 0;
  for (long i = 1; i <= 1000; ++i) sum += i * (id + 1);
  results[id] = sum;
  return NULL;
}

int main(void) {
  pthread_t t[2];
  for (long i = 0; i < 2; ++i) pthread_create(&t[i], NULL, cli_worker, (void *)i);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 3; /* blocks in read(): the main thread */
  released = 1;
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  printf("done %ld %ld\n", results[0], results[1]);
  return results[0] == 500500 && results[1] == 1001000 ? 0 : 4;
}
"""


def run_ehbt(ehbt_bin, *args):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT)


def one_line_error(proc, prefix=None):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    if prefix is not None:
        assert lines[0].startswith(prefix), lines[0]
        subject = prefix[len("ehbt: "):]
        if subject:  # the subject (a path, a pid) is named once
            assert lines[0].count(subject) == 1, lines[0]
    return lines[0]


def nm_symbols(path):
    """{name: (start, size)} of the defined functions, from binutils' nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", str(path)], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


def compile_c(src, out, *flags):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    c = out.with_suffix(".c")
    c.write_text(src)
    subprocess.run(["gcc", "-O2", "-g", *flags, "-o", str(out), str(c)], check=True)
    return out


def make_crash(d, *flags):
    """Compiles CRASH_C into d/crasher (with gcc `flags`) and crashes it there, with SIGSEGV
    in cli_fx_level3; (core, exe). Skips where the kernel writes no core into d."""
    pattern = pathlib.Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"core_pattern {pattern!r} does not write cores to the working directory")
    d.mkdir(parents=True, exist_ok=True)
    exe = compile_c(CRASH_C, d / "crasher", *flags)

    def allow_cores():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    proc = subprocess.run([str(exe)], cwd=d, preexec_fn=allow_cores, timeout=TIMEOUT)
    assert proc.returncode == -11, "the crasher did not die of SIGSEGV"
    cores = [p for p in d.iterdir() if p.name == "core" or p.name.startswith("core.")]
    if not cores:
        pytest.skip("no core was written (core dumps disabled on this machine)")
    return cores[0], exe


@pytest.fixture(scope="module")
def crash(tmp_path_factory):
    """A program crashed with SIGSEGV in cli_fx_level3; its core and its executable."""
    d = tmp_path_factory.mktemp("crash")
    core, exe = make_crash(d)
    return {"core": core, "exe": exe, "pid_core": core.name, "dir": d}


def test_usage_errors_exit_2_with_one_line(ehbt_bin, tmp_path):
    core = tmp_path / "core"
    core.write_bytes(b"x")
    cases = [
        [],
        ["bogus"],
        ["core"],
        ["core", core, core],
        ["core", core, "--bogus"],
        ["core", core, "--all-threads", "--thread", "1"],
        ["core", core, "--thread", "abc"],
        ["core", core, "--max-frames", "0"],
        ["core", core, "--max-frames"],
        ["core", core, "--source", "magic"],
        ["core", core, "--json=yes"],
        ["core", core, "--one-thread-at-a-time"],  # live processes only
        ["pid", "abc"],
        ["pid", "0"],
        ["cfi"],
    ]
    for args in cases:
        line = one_line_error(run_ehbt(ehbt_bin, *args), "ehbt")
        assert "usage: ehbt" in line, (args, line)


def test_help_and_version(ehbt_bin):
    proc = run_ehbt(ehbt_bin, "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    for command in ("ehbt core CORE", "ehbt pid PID", "ehbt cfi FILE"):
        assert command in proc.stdout
    proc = run_ehbt(ehbt_bin, "core", "--help")
    assert proc.returncode == 0
    for needle in ("--sysroot DIR", "--all-threads", "--thread TID", "--max-frames N",
                   "--source", "#0  0x", "Backtrace stopped:", "ehbt-backtrace/1",
                   "exit status", "module_offset = pc - bias"):
        assert needle in proc.stdout, needle
    assert run_ehbt(ehbt_bin, "pid", "--help").returncode == 0
    proc = run_ehbt(ehbt_bin, "cfi", "--help")
    assert proc.returncode == 0 and "unsupported" in proc.stdout and "--pc" in proc.stdout
    proc = run_ehbt(ehbt_bin, "--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"ehbt \d+\.\d+\.\d+\n", proc.stdout)


def test_unusable_inputs_exit_2_with_one_line(ehbt_bin, tmp_path, crash):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    one_line_error(run_ehbt(ehbt_bin, "core", text), f"ehbt: {text}: ")
    one_line_error(run_ehbt(ehbt_bin, "core", tmp_path / "missing"), f"ehbt: {tmp_path}/missing: ")
    one_line_error(run_ehbt(ehbt_bin, "core", tmp_path), f"ehbt: {tmp_path}: ")  # a directory
    # An ELF file that is not a core.
    one_line_error(run_ehbt(ehbt_bin, "core", crash["exe"]), f"ehbt: {crash['exe']}: ")
    # A core cut right after its ELF header: nothing left to use.
    data = crash["core"].read_bytes()
    header_only = tmp_path / "header.core"
    header_only.write_bytes(data[:64])
    one_line_error(run_ehbt(ehbt_bin, "core", header_only), f"ehbt: {header_only}: ")
    empty = tmp_path / "empty.core"
    empty.write_bytes(b"")
    one_line_error(run_ehbt(ehbt_bin, "core", empty), f"ehbt: {empty}: ")


@pytest.mark.parametrize("fraction", [0.02, 0.25, 0.5, 0.9])
def test_truncated_core_fails_cleanly_or_gives_a_partial_trace(ehbt_bin, tmp_path, crash,
                                                              fraction):
    data = crash["core"].read_bytes()
    cut = tmp_path / "cut.core"
    cut.write_bytes(data[:int(len(data) * fraction)])
    proc = run_ehbt(ehbt_bin, "core", cut, "--json")
    assert proc.returncode in (0, 1, 2), f"died: {proc.returncode} {proc.stderr}"
    if proc.returncode == 2:
        one_line_error(proc, f"ehbt: {cut}: ")
    else:
        doc = json.loads(proc.stdout)
        assert doc["format"] == "ehbt-backtrace/1"


def check_schema(doc, core_path):
    assert set(doc) == {"format", "core", "input_format", "arch", "executable", "signal",
                        "modules", "warnings", "threads"}
    assert doc["input_format"] == "elf_core"
    for w in doc["warnings"]:
        assert set(w) == {"kind", "message", "path", "option"}
    assert doc["format"] == "ehbt-backtrace/1"
    assert doc["core"] == str(core_path)
    assert doc["arch"] == "x86_64"
    assert set(doc["signal"]) == {"number", "name", "code", "address"}
    for m in doc["modules"]:
        assert set(m) == {"path", "file", "base", "bias", "build_id", "build_id_match"}
        assert HEX.match(m["base"]) and HEX.match(m["bias"])
        assert m["file"] is None or isinstance(m["file"], str)
        assert m["build_id"] is None or re.fullmatch(r"[0-9a-f]+", m["build_id"])
        # null: a build-id is unknown on either side (the vDSO has no file to compare).
        assert m["build_id_match"] in (True, False, None)
        if m["build_id"] is None or m["file"] is None:
            assert m["build_id_match"] is None, m
    biases = {m["path"]: int(m["bias"], 16) for m in doc["modules"]}
    for t in doc["threads"]:
        assert set(t) == {"tid", "crashing", "stop_reason", "stop_detail", "frames"}
        assert isinstance(t["tid"], int) and isinstance(t["crashing"], bool)
        assert t["stop_reason"] in STOP_REASONS
        assert isinstance(t["stop_detail"], str)
        for i, f in enumerate(t["frames"]):
            assert set(f) == {"index", "pc", "cfa", "source", "module", "module_offset",
                              "symbol", "symbol_offset", "location", "inlined"}
            assert f["index"] == i
            assert HEX.match(f["pc"])
            assert f["cfa"] is None or HEX.match(f["cfa"])
            assert f["source"] in SOURCES
            assert (i == 0) == (f["source"] == "context")
            if f["module"] is None:
                assert f["module_offset"] is None
            else:
                assert int(f["module_offset"], 16) == int(f["pc"], 16) - biases[f["module"]]
            if f["symbol"] is None:
                assert f["symbol_offset"] is None
            else:
                assert HEX.match(f["symbol_offset"])


def test_json_document_of_a_crash(ehbt_bin, crash):
    proc = run_ehbt(ehbt_bin, "core", crash["core"], "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    check_schema(doc, crash["core"])
    assert doc["executable"] == str(crash["exe"])
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 1, "address": "0x0"}
    exe_modules = [m for m in doc["modules"] if m["path"] == str(crash["exe"])]
    assert len(exe_modules) == 1 and exe_modules[0]["build_id_match"] is True

    assert len(doc["threads"]) == 1
    thread = doc["threads"][0]
    assert thread["crashing"] is True
    assert proc.returncode == (0 if thread["stop_reason"] in ("outermost", "max_frames") else 1)
    frames = thread["frames"]
    syms = nm_symbols(crash["exe"])

    def in_function(frame, name, caller):
        start, size = syms[name]
        offset = int(frame["module_offset"], 16)
        # A return address may sit just past its caller's last instruction.
        return start <= offset < start + size or (caller and offset == start + size)

    # Frame 0 is in the crashing function by nm's address ranges, and the callers follow in
    # the order of the source.
    expected = ["cli_fx_level3", "cli_fx_level2", "cli_fx_level1", "main"]
    for i, name in enumerate(expected):
        assert frames[i]["module"] == str(crash["exe"]), frames[i]
        assert in_function(frames[i], name, i > 0), (name, frames[i], syms[name])
        assert frames[i]["symbol"] == name
        start = syms[name][0]
        assert int(frames[i]["symbol_offset"], 16) == int(frames[i]["module_offset"], 16) - start
    assert frames[0]["pc"] == frames[0]["pc"].lower()


def test_text_output_of_a_crash(ehbt_bin, crash):
    text = run_ehbt(ehbt_bin, "core", crash["core"])
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json").stdout)
    assert text.returncode in (0, 1)
    lines = text.stdout.splitlines()
    assert lines[0] == f"Core: {crash['core']}"
    assert lines[1] == f"Executable: {crash['exe']}"
    assert lines[2] == "Arch: x86_64"
    assert lines[3] == "Signal: SIGSEGV, SEGV_MAPERR at 0x0"
    assert lines[4] == ""
    tid = doc["threads"][0]["tid"]
    assert lines[5] == f"Thread {tid} (crashed: SIGSEGV, SEGV_MAPERR at 0x0):"
    frame_lines = lines[6:]
    thread = doc["threads"][0]
    if thread["stop_reason"] != "outermost":
        assert frame_lines[-1].startswith(f"Backtrace stopped: {thread['stop_reason']}")
        frame_lines = frame_lines[:-1]
    # With debug info (crasher is -g) a frame is one line per inlined call, then its own.
    assert len(frame_lines) == sum(1 + len(f["inlined"]) for f in thread["frames"])
    at = 0
    for frame in thread["frames"]:
        names = [c["function"] for c in frame["inlined"]] + [frame["symbol"] or "??"]
        places = [c["location"] for c in frame["inlined"]] + [frame["location"]]
        for k, (name, place) in enumerate(zip(names, places)):
            line = frame_lines[at]
            m = FRAME_LINE.match(line) if k == 0 else INLINED_LINE.match(line)
            assert m, line
            assert int(m[1]) == at
            if k == 0:
                assert int(m[2], 16) == int(frame["pc"], 16)
                assert m[3] == name
                module, file, number = m[4], m[5], m[6]
            else:
                assert m[2] == name
                module, file, number = m[3], m[4], m[5]
            # "from MODULE" only on the physical function's line, and only without a position.
            physical = k == len(names) - 1
            assert module == (frame["module"] if physical and place is None else None), line
            if place is None:
                assert file is None, line
            else:
                assert (file, int(number)) == (place["file"], place["line"]), line
            at += 1
    assert FRAME_LINE.match(frame_lines[0])[3] == "cli_fx_level3"
    # The crasher's own frames have their lines: its functions are -O2 -g and not inlined.
    assert thread["frames"][0]["location"]["file"].endswith("crasher.c")


def test_thread_selection_and_max_frames(ehbt_bin, crash):
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json").stdout)
    tid = doc["threads"][0]["tid"]
    one = run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--thread", tid)
    assert json.loads(one.stdout)["threads"] == doc["threads"]
    every = run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--all-threads")
    assert [t["tid"] for t in json.loads(every.stdout)["threads"]] == [tid]
    line = one_line_error(run_ehbt(ehbt_bin, "core", crash["core"], "--thread", "999999999"),
                          f"ehbt: {crash['core']}: ")
    assert "999999999" in line

    capped = run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--max-frames", "2")
    assert capped.returncode == 0, capped.stderr
    thread = json.loads(capped.stdout)["threads"][0]
    assert len(thread["frames"]) == 2
    assert thread["stop_reason"] == "max_frames"
    assert [f["pc"] for f in thread["frames"]] == [f["pc"] for f in doc["threads"][0]["frames"][:2]]
    text = run_ehbt(ehbt_bin, "core", crash["core"], "--max-frames", "2")
    assert text.stdout.splitlines()[-1].startswith("Backtrace stopped: max_frames")
    assert text.returncode == 0


def test_sources_are_accepted(ehbt_bin, crash):
    for source in ("auto", "eh_frame", "sframe", "frame_pointer"):
        proc = run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--source", source)
        assert proc.returncode in (0, 1), (source, proc.stderr)
        doc = json.loads(proc.stdout)
        check_schema(doc, crash["core"])
        assert doc["threads"][0]["frames"][0]["symbol"] == "cli_fx_level3"
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--source",
                              "eh_frame").stdout)
    assert {f["source"] for f in doc["threads"][0]["frames"][1:]} <= {"eh_frame", "debug_frame"}


def test_live_process_with_three_threads(ehbt_bin, tmp_path):
    exe = compile_c(THREADS_C, tmp_path / "threads", "-pthread")
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        tids = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task"))
        assert len(tids) == 3
        # Let the workers reach their sleep loop.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stacks = run_ehbt(ehbt_bin, "pid", proc.pid, "--all-threads", "--json")
            doc = json.loads(stdout) if (stdout := stacks.stdout) else None
            if doc and sum(any(f["symbol"] == "cli_worker" for f in t["frames"])
                           for t in doc["threads"]) == 2:
                break
            time.sleep(0.2)
        assert stacks.returncode in (0, 1), stacks.stderr
        assert doc["pid"] == proc.pid and "core" not in doc
        assert doc["signal"] is None
        assert sorted(t["tid"] for t in doc["threads"]) == tids
        assert all(not t["crashing"] for t in doc["threads"])
        symbols = [[f["symbol"] for f in t["frames"]] for t in doc["threads"]]
        main_thread = next(t for t in doc["threads"] if t["tid"] == proc.pid)
        assert "main" in [f["symbol"] for f in main_thread["frames"]], symbols
        workers = [s for s in symbols if "cli_worker" in s]
        assert len(workers) == 2, symbols
        for s in workers:
            i = s.index("cli_worker")
            assert "cli_wait_for_release" in s[:i], s
        assert isinstance(doc["stopped_us"], int) and doc["stopped_us"] >= 0

        # One thread at a time: the same threads and the same stacks (the workers wait for
        # "go", so nothing moves between two threads' walks).
        alone = run_ehbt(ehbt_bin, "pid", proc.pid, "--all-threads", "--json",
                         "--one-thread-at-a-time")
        assert alone.returncode in (0, 1), alone.stderr
        alone_doc = json.loads(alone.stdout)
        assert sorted(t["tid"] for t in alone_doc["threads"]) == tids
        assert isinstance(alone_doc["stopped_us"], int) and alone_doc["stopped_us"] >= 0
        by_tid = {t["tid"]: [f["symbol"] for f in t["frames"]] for t in doc["threads"]}
        for t in alone_doc["threads"]:
            if "cli_worker" in by_tid[t["tid"]]:
                assert [f["symbol"] for f in t["frames"]] == by_tid[t["tid"]]

        text = run_ehbt(ehbt_bin, "pid", proc.pid, "--all-threads")
        assert text.returncode in (0, 1)
        assert text.stdout.startswith(f"Process: {proc.pid}\n")
        assert len(re.findall(r"^Thread \d+ \"threads\":$", text.stdout, re.M)) == 3
        # The default is the first thread (no thread took a signal).
        default = json.loads(run_ehbt(ehbt_bin, "pid", proc.pid, "--json").stdout)
        assert len(default["threads"]) == 1

        # Detached: the process runs on, finishes its work and exits normally.
        state = pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state in "RS", state
        out, _ = proc.communicate("go\n", timeout=TIMEOUT)
        assert out == "done 500500 1001000\n"
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_live_data_mappings_are_not_modules(ehbt_bin, tmp_path):
    """Issue 32 item 7, live: cores/programs/datamaps.c (waiting instead of crashing) maps a
    locale, gconv-modules.cache, a deleted data file, POSIX and SysV shared memory and
    /dev/zero. Only the mapped ELF files are modules; nothing is warned about."""
    programs = pathlib.Path(__file__).resolve().parents[2] / "cores" / "programs"
    exe = tmp_path / "datamaps"
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    subprocess.run(["gcc", "-O2", "-g", "-I", str(programs), "-o", str(exe),
                    str(programs / "datamaps.c")], check=True)
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=dict(os.environ, FX_DATAMAPS_WAIT="1"))
    try:
        assert proc.stdout.readline() == "ready\n"
        # /proc/PID/maps and the files' first bytes, read here: the ELF ones are the modules.
        named = set()
        for line in pathlib.Path(f"/proc/{proc.pid}/maps").read_text().splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/"):
                named.add(fields[5])
        for kind in ("/LC_CTYPE", "gconv-modules.cache", "/datamaps.data (deleted)",
                     "/dev/shm/ehbt-datamaps-", "/SYSV", "/dev/zero (deleted)"):
            assert any(kind in p for p in named), (kind, sorted(named))

        def elf(path):
            try:
                with open(path, "rb") as f:
                    return pathlib.Path(path).is_file() and f.read(4) == b"\x7fELF"
            except OSError:
                return False

        want = {p for p in named if elf(p)} | {"[vdso]"}
        text = run_ehbt(ehbt_bin, "pid", proc.pid)
        assert text.returncode == 0 and text.stderr == "", text.stderr
        out = run_ehbt(ehbt_bin, "pid", proc.pid, "--json")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["warnings"] == []
        got = {m["path"] for m in doc["modules"]}
        assert got == want, (sorted(got - want), sorted(want - got))
        symbols = [f["symbol"] for f in doc["threads"][0]["frames"]]
        i = symbols.index("fx_datamaps_level2")
        assert symbols[i:i + 3] == ["fx_datamaps_level2", "fx_datamaps_level1", "main"], symbols
        proc.communicate("go\n", timeout=TIMEOUT)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_pid_of_no_process(ehbt_bin):
    # pid_max is at most 2^22 on Linux: this pid cannot exist.
    one_line_error(run_ehbt(ehbt_bin, "pid", "99999999"), "ehbt: pid 99999999: ")


def test_sysroot_and_exe_are_passed_on(ehbt_bin, crash, tmp_path):
    plain = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json").stdout)
    # An empty sysroot: every file falls back to its path as named.
    empty = tmp_path / "empty"
    empty.mkdir()
    same = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--sysroot", empty,
                               "--sysroot", empty).stdout)
    assert same["threads"] == plain["threads"]
    # A sysroot whose libc is another file (a different build-id): not used silently.
    libc = next(m["path"] for m in plain["modules"] if "/libc.so" in m["path"])
    fake = tmp_path / "sysroot" / libc.lstrip("/")
    fake.parent.mkdir(parents=True)
    shutil.copy(crash["exe"], fake)
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--sysroot",
                              tmp_path / "sysroot").stdout)
    assert next(m for m in doc["modules"] if m["path"] == libc)["build_id_match"] is False
    # --exe names another executable: the same rule applies to the main executable.
    other = tmp_path / "other"
    shutil.copy("/bin/true", other)
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json", "--exe", other).stdout)
    exe = next(m for m in doc["modules"] if m["path"] == str(crash["exe"]))
    assert exe["build_id_match"] is False
