# SPDX-License-Identifier: Apache-2.0
"""Minidumps (MDMP) as `ehbt core` input: LLDB 16's minidumps of the x86-64 fixture programs
(cores/make_minidumps.py) must show the frames GDB lists on the ELF core of the same program
(cores/out/x86_64/<program>.expected.json: function by function, module by module; the
addresses differ, LLDB runs the program without ASLR), and what ehbt shows on that core; the
document says "input_format": "minidump". The PDB70 (GUID) form of a module's build-id and
the Breakpad/Crashpad exception record (si_code, si_addr) are checked on copies of a dump
rewritten as the format defines them; truncated and hostile minidumps exit 2 with one line
(or 0/1 with a document), under the robustness suite's 256 MiB ceiling."""

import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys

import pytest

import cores_expect as ce
from test_robustness import MEMORY_CEILING, run_limited

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAKE = ROOT / "cores" / "make_minidumps.py"
sys.path.insert(0, str(ROOT / "cores"))
import make_minidumps  # noqa: E402

X86 = ce.OUT / "x86_64"
CASES = [c.name for c in make_minidumps.MINIDUMP_CASES]


@pytest.fixture(scope="session")
def minidumps():
    """Makes the missing minidumps (LLDB runs the fixture programs of cores/out)."""
    if not shutil.which(make_minidumps.LLDB):
        pytest.skip("no %s" % make_minidumps.LLDB)
    missing = [n for n in CASES if not (X86 / (n + ".dmp.json")).exists()]
    log = ""
    if missing:
        bins = X86 / "bin"
        if not bins.exists():
            bins = ROOT / "cores" / "out" / "x86_64" / "bin"
        proc = subprocess.run([sys.executable, str(MAKE), "--only", ",".join(missing),
                               "--bins", str(bins)], capture_output=True, text=True,
                              timeout=1800)
        log = proc.stdout + proc.stderr
    return log


def meta(name, log=""):
    path = X86 / (name + ".dmp.json")
    if not path.exists():
        pytest.fail("make_minidumps.py made no %s:\n%s" % (path, log))
    with open(path) as f:
        return json.load(f)


def run(ehbt_bin, path, *extra):
    proc = subprocess.run([str(ehbt_bin), "core", str(path), "--json", "--all-threads"] +
                          list(extra), capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def doc_of(ehbt_bin, path, *extra):
    rc, out, err = run(ehbt_bin, path, *extra)
    assert rc in (0, 1), "exit %d: %s" % (rc, err)
    return rc, json.loads(out)


def names(frames):
    return [f.get("symbol") for f in frames]


def frames_match(exp_frames, got_frames):
    """Function by function (GDB's ELF symbol and its aliases) and module by module."""
    if len(exp_frames) != len(got_frames):
        return False
    return all(ce.symbol_ok(e, g) and ce.module_ok(e, g) for e, g in zip(exp_frames, got_frames))


def expected_threads(m):
    with open(m["core_expected"]) as f:
        exp = json.load(f)
    crashing = [t for t in exp["threads"] if t["crashing"]][0]
    others = [t for t in exp["threads"] if not t["crashing"]]
    frames = crashing["frames"]
    if m["mode"] == "live":
        # Stopped at a breakpoint in a fixture function: the core's frames from it outwards.
        start = [i for i, f in enumerate(frames) if f["function"] == m["breakpoint"]][0]
        frames = frames[start:]
        others = []  # the live stop is before any other thread exists (chain has none)
    return exp, frames, others


@pytest.mark.parametrize("name", CASES)
def test_minidump_frames_equal_the_cores(ehbt_bin, minidumps, name):
    m = meta(name, minidumps)
    exp, want, want_others = expected_threads(m)
    rc, doc = doc_of(ehbt_bin, X86 / (name + ".dmp"))
    assert doc["format"] == "ehbt-backtrace/1"
    assert doc["input_format"] == "minidump"
    assert rc == 0, "every thread reaches its outermost frame"
    threads = doc["threads"]
    assert all(t["stop_reason"] == "outermost" for t in threads)
    if m["mode"] == "crash":
        crashing = [t for t in threads if t["crashing"]]
        assert len(crashing) == 1
        got = crashing[0]
        # LLDB records the signal's number only: no code, no address, and a warning says so.
        assert doc["signal"]["number"] == exp["signal"]
        assert doc["signal"]["code"] is None and doc["signal"]["address"] is None
        assert "no_signal_info" in [w["kind"] for w in doc["warnings"]]
    else:
        assert not any(t["crashing"] for t in threads)
        assert len(threads) == 1
        got = threads[0]
        # A stop at a breakpoint is no signal (LLDB writes the breakpoint's number there).
        assert doc["signal"] is None
    assert frames_match(want, got["frames"]), "minidump:\n%s\nGDB on the core:\n%s" % (
        names(got["frames"]), [f["function"] for f in want])
    others = [t for t in threads if t is not got]
    assert len(others) == len(want_others)
    for e in want_others:
        assert any(frames_match(e["frames"], t["frames"]) for t in others), (
            "no minidump thread shows %s" % [f["function"] for f in e["frames"]])

    # And what ehbt shows on the ELF core of the same program, symbol by symbol.
    _, core_doc = doc_of(ehbt_bin, exp["core"])
    assert core_doc["input_format"] == "elf_core"
    core_crashing = [t for t in core_doc["threads"] if t["crashing"]][0]
    core_names = names(core_crashing["frames"])
    if m["mode"] == "live":
        core_names = core_names[core_names.index(m["breakpoint"]):]
    assert names(got["frames"]) == core_names


def test_compressed_minidump(ehbt_bin, minidumps, tmp_path):
    """A minidump compressed as spools store cores (zstd) is told by content too."""
    if not shutil.which("zstd"):
        pytest.skip("no zstd")
    src = X86 / "chain.dmp"
    meta("chain", minidumps)
    zst = tmp_path / "chain.dmp.zst"
    subprocess.run(["zstd", "-q", "-o", str(zst), str(src)], check=True)
    rc, plain = doc_of(ehbt_bin, src)
    rc_z, packed = doc_of(ehbt_bin, zst)
    assert (rc_z, packed["input_format"]) == (0, "minidump")
    assert packed["core"] == str(zst)
    assert [names(t["frames"]) for t in packed["threads"]] == \
        [names(t["frames"]) for t in plain["threads"]]


# ---- rewritten copies: the format's other forms --------------------------------------------

def streams(data):
    count, rva = struct.unpack_from("<II", data, 8)
    out = {}
    for i in range(count):
        t, size, at = struct.unpack_from("<III", data, rva + 12 * i)
        out.setdefault(t, (at, size, rva + 12 * i))
    return out


def modules(data):
    at, _, _ = streams(data)[4]
    (count,) = struct.unpack_from("<I", data, at)
    return [at + 4 + 108 * i for i in range(count)]


def module_name(data, rec):
    (name_rva,) = struct.unpack_from("<I", data, rec + 20)
    (n,) = struct.unpack_from("<I", data, name_rva)
    return data[name_rva + 4:name_rva + 4 + n].decode("utf-16le")


def with_pdb70(data, guid_of):
    """Every module's CodeView record replaced by a PDB70 one (RSDS, GUID, age 0, a name)
    appended at the end, its GUID guid_of(build-id bytes)."""
    out = bytearray(data)
    for rec in modules(data):
        cv_size, cv_rva = struct.unpack_from("<II", data, rec + 76)
        cv = data[cv_rva:cv_rva + cv_size]
        assert cv[:4] == b"LEpB"  # LLDB writes the BpEL form
        record = b"RSDS" + guid_of(cv[4:]) + struct.pack("<I", 0) + b"x.pdb\0"
        struct.pack_into("<II", out, rec + 76, len(record), len(out))
        out += record
    return bytes(out)


def guid(build_id):
    # Breakpad and Crashpad: the build-id's first 16 bytes as they are (zero-padded).
    return (build_id + bytes(16))[:16]


def test_pdb70_guid_build_id(ehbt_bin, minidumps, tmp_path):
    meta("chain", minidumps)
    data = (X86 / "chain.dmp").read_bytes()
    path = tmp_path / "guid.dmp"
    path.write_bytes(with_pdb70(data, guid))
    rc, doc = doc_of(ehbt_bin, path)
    _, plain = doc_of(ehbt_bin, X86 / "chain.dmp")
    assert rc == 0
    # The 16 bytes identify each file; its whole build-id is then reported. A module without
    # a file (the vDSO) has only the 16 bytes.
    assert [(m["path"], m["build_id"] if m["file"] else m["build_id"][:32],
             m["build_id_match"]) for m in plain["modules"]] == \
        [(m["path"], m["build_id"], m["build_id_match"]) for m in doc["modules"]]
    assert any(m["file"] for m in doc["modules"])
    assert names(doc["threads"][0]["frames"]) == names(plain["threads"][0]["frames"])
    assert not [w for w in doc["warnings"] if w["kind"] == "mismatched_file"]


def test_pdb70_guid_of_another_build(ehbt_bin, minidumps, tmp_path):
    meta("chain", minidumps)
    data = (X86 / "chain.dmp").read_bytes()
    path = tmp_path / "other.dmp"
    path.write_bytes(with_pdb70(data, lambda b: bytes(x ^ 0xff for x in guid(b))))
    rc, doc = doc_of(ehbt_bin, path)
    # No file is the one the dump names: each is another build, none is used.
    files = [m for m in doc["modules"] if m["path"].startswith("/")]  # not the vDSO
    assert len(files) == 3
    assert all(m["build_id_match"] is False and m["file"] is None for m in files)
    kinds = [w["kind"] for w in doc["warnings"]]
    assert kinds.count("mismatched_file") == len(files)
    assert rc == 1


def with_exception(data, code, flags, address):
    out = bytearray(data)
    at, _, _ = streams(data)[6]
    struct.pack_into("<I", out, at + 8, code)
    struct.pack_into("<I", out, at + 12, flags)
    struct.pack_into("<Q", out, at + 24, address)
    return bytes(out)


@pytest.mark.parametrize("flags,address,want", [
    # SEGV_MAPERR at address 0: a fault the kernel raised, its address is a fact.
    (1, 0, {"code": 1, "address": "0x0"}),
    # SI_USER: the word holds the sender's pid (low half) and uid (high half), no address.
    (0, 4242 | (1000 << 32), {"code": 0, "address": None, "sender": {"pid": 4242,
                                                                     "uid": 1000}}),
    # SI_TKILL (-6) likewise.
    (0xfffffffa, 77, {"code": -6, "address": None, "sender": {"pid": 77, "uid": 0}}),
])
def test_breakpad_exception_record(ehbt_bin, minidumps, tmp_path, flags, address, want):
    """Breakpad and Crashpad record si_signo, si_code and si_addr: the signal rules apply."""
    meta("chain", minidumps)
    path = tmp_path / "exc.dmp"
    path.write_bytes(with_exception((X86 / "chain.dmp").read_bytes(), 11, flags, address))
    _, doc = doc_of(ehbt_bin, path)
    sig = doc["signal"]
    assert sig["number"] == 11
    assert {k: sig.get(k) for k in want} == want
    if "sender" not in want:
        assert "sender" not in sig
    assert "no_signal_info" not in [w["kind"] for w in doc["warnings"]]


# ---- truncated and hostile ------------------------------------------------------------------

def hostile(data):
    """(name, bytes) pairs: cut at every structure, and counts and offsets that lie."""
    s = streams(data)
    cases = [("empty", b""), ("signature only", b"MDMP"), ("header only", data[:32]),
             ("no directory", data[:40])]
    for frac in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        cases.append(("cut at %d%%" % int(frac * 100), data[:int(len(data) * frac)]))
    for t, (at, size, entry) in sorted(s.items()):
        cases.append(("cut in stream 0x%x" % t, data[:at + size // 2]))
        for label, field, value in (("size", 4, 0xffffffff), ("rva", 8, 0xfffffff0),
                                    ("rva at 0", 8, 0)):
            bad = bytearray(data)
            struct.pack_into("<I", bad, entry + field, value)
            cases.append(("stream 0x%x %s" % (t, label), bytes(bad)))
        if t in (3, 4, 5, 9, 0x47670009):
            bad = bytearray(data)
            struct.pack_into("<I", bad, at, 0xffffffff)  # the list's count
            cases.append(("stream 0x%x count" % t, bytes(bad)))
    bad = bytearray(data)
    struct.pack_into("<I", bad, 8, 0xffffffff)
    cases.append(("directory count", bytes(bad)))
    bad = bytearray(data)
    struct.pack_into("<I", bad, 12, len(data) - 4)
    cases.append(("directory at the end", bytes(bad)))
    # A Memory64 list claiming 2^60 ranges of 2^63 bytes each.
    mem64 = struct.pack("<QQ", 1 << 60, 32) + struct.pack("<QQ", 0x1000, 1 << 63) * 4
    bad = bytearray(data)
    struct.pack_into("<III", bad, s[5][2], 9, len(mem64), len(bad))
    cases.append(("memory64 lies", bytes(bad + mem64)))
    return cases


def test_hostile_minidumps(ehbt_bin, minidumps, tmp_path):
    meta("chain", minidumps)
    data = (X86 / "chain.dmp").read_bytes()
    failures = []
    for label, body in hostile(data):
        path = tmp_path / "hostile.dmp"
        path.write_bytes(body)
        got = run_limited([ehbt_bin, "core", path, "--all-threads", "--json"])
        if got is None:
            failures.append("%s: hang" % label)
            continue
        rc, out, err, _rss, _ = got
        if rc == 2:
            if len(err.strip().splitlines()) != 1 or "out of memory" in err:
                failures.append("%s: exit 2 with %r" % (label, err))
        elif rc in (0, 1):
            if json.loads(out).get("input_format") != "minidump":
                failures.append("%s: no minidump document" % label)
        else:
            failures.append("%s: exit %d (%s)" % (label, rc, err.strip()[-300:]))
    assert not failures, "\n".join(failures)


def test_truncated_minidump_exit_and_warning(ehbt_bin, minidumps, tmp_path):
    meta("chain", minidumps)
    data = (X86 / "chain.dmp").read_bytes()
    short = tmp_path / "short.dmp"
    short.write_bytes(data[:20])
    rc, out, err = run(ehbt_bin, short)
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == ["ehbt: %s: too short for a minidump header" % short]
    # LLDB writes the directory last: a cut file loses it and is refused (above). A range
    # whose bytes run past the end (as when a writer died before the memory) keeps what is
    # there, and a warning says so.
    at, _, _ = streams(data)[5]
    ranges = struct.unpack_from("<I", data, at)[0]
    cut_data = bytearray(data)
    struct.pack_into("<I", cut_data, at + 4 + 16 * (ranges - 1) + 12, len(data) - 64)
    cut = tmp_path / "cut.dmp"
    cut.write_bytes(bytes(cut_data))
    rc, out, err = run(ehbt_bin, cut)
    assert rc in (0, 1)
    doc = json.loads(out)
    assert "truncated_core" in [w["kind"] for w in doc["warnings"]]


# ---- ehbt-triage ----------------------------------------------------------------------------

def test_triage_buckets_a_minidump_with_its_core(build_dir, minidumps, tmp_path):
    """A Crashpad database (completed/<uuid>.dmp beside its .meta) and the ELF cores of the
    same crashes: each minidump lands in its core's bucket. noreturn aborts (no signal part);
    chain's minidump is given the exception record Breakpad and Crashpad write (SEGV_MAPERR
    at 0x0), so its signal part is the core's too."""
    from ehbt_py import triage_env

    meta("noreturn", minidumps)
    meta("chain", minidumps)
    db = tmp_path / "crashpad" / "completed"
    db.mkdir(parents=True)
    shutil.copy(X86 / "noreturn.dmp", db / "8d6b3f3e-noreturn.dmp")
    (db / "8d6b3f3e-noreturn.meta").write_bytes(b"\x01\x00\x00\x00crashpad report metadata")
    (db / "1c0ffee0-chain.dmp").write_bytes(
        with_exception((X86 / "chain.dmp").read_bytes(), 11, 1, 0))
    cores = tmp_path / "cores"
    cores.mkdir()
    for program in ("noreturn", "chain"):
        with open(meta(program)["core_expected"]) as f:
            os.symlink(json.load(f)["core"], cores / (program + ".core"))
    out = tmp_path / "o.jsonl"
    proc = subprocess.run(["/usr/bin/python3", str(ROOT / "triage" / "ehbt-triage"),
                           "--db", str(tmp_path / "db"), "--jsonl", str(out),
                           str(tmp_path / "crashpad"), str(cores)],
                          env=triage_env(build_dir), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out) as f:
        recs = {os.path.basename(r["core"]): r for r in map(json.loads, f) if r.get("core")}
    assert set(recs) == {"8d6b3f3e-noreturn.dmp", "1c0ffee0-chain.dmp", "noreturn.core",
                         "chain.core"}, recs.keys()
    for dmp, core in (("8d6b3f3e-noreturn.dmp", "noreturn.core"),
                      ("1c0ffee0-chain.dmp", "chain.core")):
        assert recs[dmp]["signature"] == recs[core]["signature"]
        assert recs[dmp]["bucket"] == recs[core]["bucket"]
    assert recs["noreturn.core"]["bucket"] != recs["chain.core"]["bucket"]


# ---- a Crashpad minidump, written by Chromium's own handler ------------------------------------

CHROMIUM = pathlib.Path("/usr/lib/chromium/chromium")


def _children_with(marker, arg):
    """Pids of processes whose command line holds both `marker` and `arg`."""
    pids = []
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and arg in cmd:
            pids.append(int(p.name))
    return pids


def test_crashpad_minidump_from_chromium(ehbt_bin, tmp_path):
    """Debian's Chromium ships Crashpad (chrome_crashpad_handler): a utility process sent
    SIGSEGV by this test is dumped into <XDG_CONFIG_HOME>/chromium/Crash Reports. Crashpad
    names libraries by soname and records siginfo: the signal was sent by this process, so the
    report names it as the sender, with no address, and the crashing thread is walked to
    _start."""
    import signal
    import time

    if not CHROMIUM.exists() or not (CHROMIUM.parent / "chrome_crashpad_handler").exists():
        pytest.skip("no Chromium with Crashpad")
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path))
    ud = tmp_path / "ud"
    proc = subprocess.Popen([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                             "--enable-crash-reporter-for-testing", "--user-data-dir=%s" % ud,
                             "--remote-debugging-port=0", "about:blank"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        victim = []
        deadline = time.monotonic() + 90
        while not victim and time.monotonic() < deadline:
            time.sleep(0.5)
            victim = _children_with("storage.mojom.StorageService", str(ud))
        if not victim:
            pytest.skip("Chromium started no storage service process here")
        os.kill(victim[0], signal.SIGSEGV)
        reports = tmp_path / "xdg" / "chromium" / "Crash Reports"
        dumps = []
        deadline = time.monotonic() + 60
        while not dumps and time.monotonic() < deadline:
            time.sleep(0.5)
            dumps = sorted(reports.glob("*/*.dmp"))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert dumps, "Crashpad wrote no minidump under %s" % reports
    rc, doc = doc_of(ehbt_bin, dumps[0])
    assert doc["input_format"] == "minidump"
    assert doc["executable"] == str(CHROMIUM)
    sig = doc["signal"]
    assert (sig["number"], sig["code"], sig["address"]) == (11, 0, None)
    assert sig["sender"] == {"pid": os.getpid(), "uid": os.getuid()}
    (thread,) = [t for t in doc["threads"] if t["crashing"]]
    assert thread["tid"] == victim[0]
    symbols = names(thread["frames"])
    assert thread["stop_reason"] == "outermost" and symbols[-1] == "_start", symbols
    assert "ChromeMain" in symbols
    libs = {os.path.basename(m["path"]): m for m in doc["modules"]}
    assert libs["libc.so.6"]["build_id_match"] is True  # found by soname, build-id checked


def test_lldb_plugin_on_a_minidump(build_dir, ehbt_bin, minidumps, tmp_path):
    """`lldb -c x.dmp` and the plugin's `ehbt --json`: the engine opens the minidump LLDB
    has mapped (as it does a core) and its frames are the CLI's."""
    from test_lldb_plugin import run_lldb

    meta("sighandler", minidumps)
    dmp = X86 / "sighandler.dmp"
    out = run_lldb(build_dir, tmp_path, ["ehbt --json"], pre=["target create --core %s" % dmp])
    line = [ln for ln in out.splitlines() if ln.startswith('{"format":"ehbt-backtrace/1"')]
    assert line, out
    doc = json.loads(line[0])
    assert (doc["core"], doc["input_format"]) == (str(dmp), "minidump")
    _, cli = doc_of(ehbt_bin, dmp)
    assert doc["signal"]["number"] == cli["signal"]["number"] == 11
    crashing = [t for t in doc["threads"] if t["crashing"]][0]
    cli_crashing = [t for t in cli["threads"] if t["crashing"]][0]
    assert [(f["pc"], f["symbol"]) for f in crashing["frames"]] == \
        [(f["pc"], f["symbol"]) for f in cli_crashing["frames"]]


# ---- contexts of the three CPUs, built as the format lays them out ----------------------------

def synthetic_minidump(arch, pc, sp, tid=42):
    """A minidump with one thread of `arch` at (pc, sp), written from the format's layouts
    (CONTEXT_AMD64: rsp at 0x98, rip at 0xf8; CONTEXT_ARM64: sp at 0x100, pc at 0x108, x30
    at 0xf8; CONTEXT_X86: eip at 0xb8, esp at 0xc4), a SIGSEGV exception record (SEGV_MAPERR at
    0x10) and a 256-byte stack."""
    if arch == "x86_64":
        ctx = bytearray(1232)
        struct.pack_into("<IQQ", ctx, 0x30, 0x0010000b, 0, 0)
        struct.pack_into("<Q", ctx, 0x98, sp)
        struct.pack_into("<Q", ctx, 0xf8, pc)
        cpu = 9
    elif arch == "aarch64":
        ctx = bytearray(912)
        struct.pack_into("<I", ctx, 0, 0x00400003)
        struct.pack_into("<Q", ctx, 0x100, sp)
        struct.pack_into("<Q", ctx, 0x108, pc)
        cpu = 12
    else:
        ctx = bytearray(716)
        struct.pack_into("<I", ctx, 0, 0x0001000b)
        struct.pack_into("<I", ctx, 0xc4, sp)
        struct.pack_into("<I", ctx, 0xb8, pc)
        cpu = 0
    stack = bytes(256)
    n = 4
    data_at = 32 + 12 * n
    sysinfo = struct.pack("<HHHBBIIII", cpu, 0, 0, 1, 0, 0, 0, 0, 0x8201) + bytes(32)
    threads_size = 4 + 48
    exc_size = 168
    mem_size = 4 + 16
    ctx_at = data_at + len(sysinfo) + threads_size + exc_size + mem_size
    stack_at = ctx_at + len(ctx)
    threads = struct.pack("<I", 1) + struct.pack("<IIIIQQIIII", tid, 0, 0, 0, 0, sp, len(stack),
                                                 stack_at, len(ctx), ctx_at)
    exc = struct.pack("<IIIIQQII", tid, 0, 11, 1, 0, 0x10, 0, 0) + bytes(120) + \
        struct.pack("<II", len(ctx), ctx_at)
    mem = struct.pack("<I", 1) + struct.pack("<QII", sp, len(stack), stack_at)
    body = [(7, sysinfo), (3, threads), (6, exc), (5, mem)]
    out = struct.pack("<IIIIIIQ", 0x504d444d, 0xa793, n, 32, 0, 0, 0)
    at = data_at
    for t, blob in body:
        out += struct.pack("<III", t, len(blob), at)
        at += len(blob)
    out += b"".join(blob for _, blob in body) + bytes(ctx) + stack
    assert len(out) == stack_at + len(stack)
    return out


@pytest.mark.parametrize("arch,pc,sp", [("x86_64", 0x7f0000401234, 0x7ffd00001000),
                                        ("aarch64", 0xffff80401234, 0xfffff0001000),
                                        ("i386", 0x08049234, 0xbf001000)])
def test_thread_context_of_each_cpu(ehbt_bin, tmp_path, arch, pc, sp):
    path = tmp_path / (arch + ".dmp")
    path.write_bytes(synthetic_minidump(arch, pc, sp))
    rc, doc = doc_of(ehbt_bin, path)
    assert (doc["arch"], doc["input_format"]) == (arch, "minidump")
    (thread,) = doc["threads"]
    assert thread["tid"] == 42 and thread["crashing"] is True
    assert int(thread["frames"][0]["pc"], 16) == pc
    sig = doc["signal"]
    assert (sig["number"], sig["code"], sig["address"]) == (11, 1, "0x10")
    assert rc == 1  # no module covers the pc: the walk stops there
