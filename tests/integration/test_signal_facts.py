# SPDX-License-Identifier: Apache-2.0
"""Signal facts from real cores: a signal another process sent has a sender, never an address;
a gcore snapshot has no crashing thread.

The cores are made here, in tmp dirs, by the kernel (core_pattern writing `core` into the
working directory) and by GDB's gcore:

- `kill`: this test process sends SIGSEGV to a blocked program (kill(2): SI_USER); the sender
  is this process (os.getpid(), os.getuid()), known without ehbt.
- `pid1`: the init of a pid namespace (`unshare --pid --fork --mount-proc sh`, pid 1 there)
  sends SIGSEGV to its child: the kernel records si_pid 1 -- which ehbt used to read as a fault
  at 0x1, i.e. triage's null-pointer bucket `SIGSEGV@0x0`.
- `gcore`: `gcore -o FILE PID` of the running program: nothing crashed.

GDB's `p $_siginfo` on each core cross-checks what the core records.
"""
import json
import os
import pathlib
import re
import resource
import shutil
import signal
import subprocess
import time

import pytest

from ehbt_py import import_ehbt, triage_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "triage" / "ehbt-triage"
TIMEOUT = 60

VICTIM_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) void wait_for_signal(void) { for (;;) pause(); }
int main(void) {
  printf("ready\n");
  fflush(stdout);
  wait_for_signal();
  return 0;
}
"""


def _allow_cores():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _kernel_writes_core_here():
    pattern = pathlib.Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip("core_pattern %r does not write cores to the working directory" % pattern)


def _wait_sleeping(pid, proc_root="/proc"):
    """Until pid sleeps (in pause(): its stack is then the one the test expects)."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        stat = pathlib.Path(proc_root, str(pid), "stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "S":
            return
        time.sleep(0.01)
    raise AssertionError("pid %d never blocked" % pid)


def _the_core(d):
    cores = [p for p in d.iterdir() if p.name == "core" or p.name.startswith("core.")]
    assert len(cores) == 1, cores
    return cores[0]


def _start_victim(exe, cwd):
    proc = subprocess.Popen([str(exe)], cwd=cwd, stdout=subprocess.PIPE, text=True,
                            preexec_fn=_allow_cores)
    assert proc.stdout.readline().strip() == "ready"
    _wait_sleeping(proc.pid)
    return proc


@pytest.fixture(scope="module")
def victim(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("victim")
    src = d / "victim.c"
    src.write_text(VICTIM_C)
    exe = d / "victim"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(exe), str(src)], check=True)
    return exe


@pytest.fixture(scope="module")
def kill_core(victim, tmp_path_factory):
    """(core, sender pid, sender uid): SIGSEGV sent by this process."""
    _kernel_writes_core_here()
    d = tmp_path_factory.mktemp("kill")
    proc = _start_victim(victim, d)
    os.kill(proc.pid, signal.SIGSEGV)
    assert proc.wait(timeout=TIMEOUT) == -signal.SIGSEGV
    return _the_core(d), os.getpid(), os.getuid()


@pytest.fixture(scope="module")
def pid1_core(victim, tmp_path_factory):
    """(core, 1, uid): SIGSEGV sent by pid 1 of a pid namespace (the shell that is its init)."""
    _kernel_writes_core_here()
    if shutil.which("unshare") is None:
        pytest.skip("unshare not installed")
    d = tmp_path_factory.mktemp("pid1")
    script = (
        '[ "$$" = 1 ] || exit 3\n'
        '"$1" > ready.txt &\n'
        'v=$!\n'
        'while ! grep -q ready ready.txt; do sleep 0.01; done\n'
        'while [ "$(cut -d" " -f3 /proc/$v/stat)" != S ]; do sleep 0.01; done\n'
        'kill -s SEGV "$v"\n'
        'wait "$v"\n'
        'exit 0\n')
    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
                           "sh", str(victim)], cwd=d, preexec_fn=_allow_cores,
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0 and not list(d.glob("core*")):
        pytest.skip("no pid namespace here (unshare: %s)" % proc.stderr.strip())
    return _the_core(d), 1, os.getuid()


@pytest.fixture(scope="module")
def gcore_core(victim, tmp_path_factory):
    """A gcore snapshot of the running victim."""
    if shutil.which("gcore") is None:
        pytest.skip("gcore (GDB) not installed")
    d = tmp_path_factory.mktemp("gcore")
    proc = _start_victim(victim, d)
    try:
        out = subprocess.run(["gcore", "-o", str(d / "snap"), str(proc.pid)],
                             capture_output=True, text=True, timeout=TIMEOUT)
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT)
    core = d / ("snap.%d" % proc.pid)
    if not core.exists():
        pytest.skip("gcore wrote no core: %s" % out.stderr.strip())
    return core


def _gdb_siginfo(exe, core, *exprs):
    """GDB's value of each expression on the core (the oracle), as integers."""
    if shutil.which("gdb") is None:
        pytest.skip("gdb not installed")
    cmd = ["gdb", "-nx", "-batch", "-ex", "set auto-load off"]
    for e in exprs:
        cmd += ["-ex", "p (long)(%s)" % e]
    out = subprocess.run(cmd + [str(exe), str(core)], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    values = [int(v) for v in re.findall(r"^\$\d+ = (-?\d+)$", out, re.M)]
    assert len(values) == len(exprs), out
    return values


def _ehbt(ehbt_bin, *args):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT)


@pytest.fixture(params=["kill", "pid1"])
def sent(request):
    return request.getfixturevalue(request.param + "_core")


def test_gdb_agrees_the_core_records_the_sender(sent, victim):
    core, pid, uid = sent
    signo, code, si_pid, si_uid = _gdb_siginfo(
        victim, core, "$_siginfo.si_signo", "$_siginfo.si_code",
        "$_siginfo._sifields._kill.si_pid", "$_siginfo._sifields._kill.si_uid")
    assert (signo, code, si_pid, si_uid) == (signal.SIGSEGV, 0, pid, uid)


def test_cli_names_the_sender_not_an_address(sent, ehbt_bin):
    core, pid, uid = sent
    said = "SIGSEGV, SI_USER sent by pid %d (uid %d)" % (pid, uid)
    proc = _ehbt(ehbt_bin, "core", core)
    assert "Signal: %s\n" % said in proc.stdout, proc.stdout
    assert "(crashed: %s):" % said in proc.stdout, proc.stdout
    assert " at 0x" not in proc.stdout.split("\n#")[0], proc.stdout
    assert "wait_for_signal" in proc.stdout

    doc = json.loads(_ehbt(ehbt_bin, "core", core, "--json").stdout)
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 0, "address": None,
                             "sender": {"pid": pid, "uid": uid}}
    assert [t["crashing"] for t in doc["threads"]] == [True]


def test_python_target_report_names_the_sender(sent, build_dir):
    ehbt = import_ehbt(build_dir)
    core, pid, uid = sent
    target = ehbt.open_core(str(core))
    assert target.signal.address is None
    assert (target.signal.sender.pid, target.signal.sender.uid) == (pid, uid)
    assert target.snapshot_signal is None
    doc = ehbt.target_report(target).to_dict()
    assert doc["signal"]["address"] is None
    assert doc["signal"]["sender"] == {"pid": pid, "uid": uid}


def test_triage_buckets_sent_signals_by_neither_pid_nor_address(kill_core, pid1_core,
                                                                build_dir, tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    # Two copies of one program killed by two different senders.
    shutil.copy(kill_core[0], spool / "a.core")
    shutil.copy(pid1_core[0], spool / "b.core")
    proc = subprocess.run(["/usr/bin/python3", str(TRIAGE), "--db", str(tmp_path / "t.sqlite"),
                           "--jsonl", str(tmp_path / "out.jsonl"), "-j", "1", str(spool)],
                          env=triage_env(build_dir), capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = {os.path.basename(r["core"]): r
               for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    for name in ("a.core", "b.core"):
        sig = records[name]["signature"]
        assert sig.startswith("SIGSEGV sent "), sig
        assert "@0x" not in sig.split(" | ")[0], sig
        assert "wait_for_signal" in sig, sig
    assert records["a.core"]["bucket"] == records["b.core"]["bucket"]
    assert records["a.core"]["signature"] == records["b.core"]["signature"]


def test_gcore_snapshot_has_no_crashing_thread(gcore_core, victim, ehbt_bin, build_dir):
    # What the core records (GDB): every thread stopped by SIGSTOP -- no signal that the
    # kernel dumps a core for.
    (signo,) = _gdb_siginfo(victim, gcore_core, "$_siginfo.si_signo")
    assert signo == signal.SIGSTOP

    proc = _ehbt(ehbt_bin, "core", gcore_core, "--all-threads")
    assert proc.returncode in (0, 1), proc.stderr
    assert re.search(r"^Signal: none \(no thread crashed: a snapshot, e\.g\. by gcore; threads "
                     r"stopped by SIGSTOP(, \S+)?\)$", proc.stdout, re.M), proc.stdout
    assert "(crashed" not in proc.stdout, proc.stdout
    assert "wait_for_signal" in proc.stdout

    doc = json.loads(_ehbt(ehbt_bin, "core", gcore_core, "--all-threads", "--json").stdout)
    assert doc["signal"] is None
    assert doc["threads"] and not any(t["crashing"] for t in doc["threads"])

    ehbt = import_ehbt(build_dir)
    target = ehbt.open_core(str(gcore_core))
    assert target.signal is None
    assert target.snapshot_signal.number == signal.SIGSTOP
    rdoc = ehbt.target_report(target, "all").to_dict()
    assert rdoc["signal"] is None
    assert not any(t["crashing"] for t in rdoc["threads"])


def _gdb_plugin_doc(build_dir, exe, core):
    import ehbt_py as h

    out = h.run_gdb(build_dir, [exe, core], ["ehbt -json"])
    line = [t for t in out.splitlines() if t.startswith('{"format"')]
    assert line, out
    return json.loads(line[0])


def test_gdb_plugin_says_the_same(kill_core, gcore_core, victim, build_dir):
    # The debugger plugins read a core's signal from the engine, through the same report.
    core, pid, uid = kill_core
    doc = _gdb_plugin_doc(build_dir, victim, core)
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 0, "address": None,
                             "sender": {"pid": pid, "uid": uid}}
    snap = _gdb_plugin_doc(build_dir, victim, gcore_core)
    assert snap["signal"] is None
    assert not any(t["crashing"] for t in snap["threads"])


def test_signature_prefix_of_each_kind_of_signal():
    import sys

    sys.path.insert(0, str(ROOT / "triage"))
    from ehbt_triage.signature import signal_prefix

    sent = {"number": 11, "name": "SIGSEGV", "code": 0, "address": None,
            "sender": {"pid": 1, "uid": 0}}
    assert signal_prefix(sent) == "SIGSEGV sent "
    # A document written before "sender" existed: the sender's pid 1 stood in "address".
    assert signal_prefix({"number": 11, "name": "SIGSEGV", "code": 0,
                          "address": "0x1"}) == "SIGSEGV sent "
    assert signal_prefix({"number": 11, "name": "SIGSEGV", "code": -6,
                          "address": None}) == "SIGSEGV sent "
    assert signal_prefix({"number": 11, "name": "SIGSEGV", "code": 1,
                          "address": "0x0"}) == "SIGSEGV@0x0 "
    assert signal_prefix({"number": 11, "name": "SIGSEGV", "code": 128,
                          "address": None}) == "SIGSEGV "
    # No NT_SIGINFO: the code is unknown, the signal is only named.
    assert signal_prefix({"number": 11, "name": "SIGSEGV", "code": None,
                          "address": None}) == "SIGSEGV "
    assert signal_prefix({"number": 6, "name": "SIGABRT", "code": -6, "address": None,
                          "sender": {"pid": 9, "uid": 0}}) == ""
    assert signal_prefix(None) == ""


def test_lldb_plugin_says_the_same(kill_core, gcore_core, victim, build_dir, tmp_path):
    # LLDB's `ehbt --json` on the same cores: the sender, no address; a snapshot, no crash.
    from test_lldb_plugin import ehbt_json

    core, pid, uid = kill_core
    doc, _ = ehbt_json(build_dir, tmp_path, ["target create %s --core %s" % (victim, core)],
                       command="ehbt --json")
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": 0, "address": None,
                             "sender": {"pid": pid, "uid": uid}}
    (tmp_path / "snap").mkdir()
    snap, _ = ehbt_json(build_dir, tmp_path / "snap",
                        ["target create %s --core %s" % (victim, gcore_core)],
                        command="ehbt --all --json")
    assert snap["signal"] is None
    assert not any(t["crashing"] for t in snap["threads"])
