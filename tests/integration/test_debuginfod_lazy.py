# SPDX-License-Identifier: Apache-2.0
"""debuginfod fetches debuginfo only for the modules frames land in (#28): a real
`debuginfod` server on 127.0.0.1, whose log names every request, and cores whose modules are
partly touched by the crash (terminate: libm, libgcc_s, ld.so and the vDSO are mapped, no frame
is in them).

The expected requests come from GDB's frames of the same core (the expected files' module of
each frame), less what needs no fetch: a module whose debug file is installed locally
(/usr/lib/debug/.build-id), and one that carries its own DWARF and symbol table (its file
answers lines and names itself). Frames and lines must be those of GDB and of a run without
any server."""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

import cores_expect as ce
import lines_expect as le

GET = re.compile(r"GET /buildid/([0-9a-f]+)/(\w+) (\d+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def sections(path):
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))


def installed_debug_file(bid):
    return os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:]))


def wanted_debuginfo(exp):
    """{build-id: module} of the modules GDB's frames are in that need a debug file and have
    none installed."""
    want = {}
    for t in exp["threads"]:
        for f in t["frames"]:
            host = f.get("module_file")
            if not host or f.get("module") == "[vdso]":
                continue
            bid = build_id(host)
            if not bid or installed_debug_file(bid):
                continue
            if {".debug_info", ".symtab"} <= sections(host):
                continue
            want[bid] = f["module_core_path"]
    return want


class Server:
    """debuginfod -F over `files`, verbose: each request is a `GET /buildid/ID/KIND CODE` line
    of its log. requests() waits until the log has as many as its /metrics counted."""

    def __init__(self, root, files):
        self.root = root
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = root / "server.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(["debuginfod", "-F", str(files), "-p", str(self.port),
                                      "-d", str(root / "index.sqlite"), "-v"],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def counted(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            text = r.read().decode()
        n = 0
        for line in text.splitlines():
            m = re.match(r'http_requests_total\{type="(debuginfo|executable|source)"\} (\d+)',
                         line)
            if m:
                n += int(m.group(2))
        return n

    def requests(self):
        want = self.counted()
        deadline = time.time() + 30
        while True:
            got = GET.findall(open(self.log_path).read())
            if len(got) >= want or time.time() > deadline:
                return got
            time.sleep(0.2)

    def wait_serving(self, kind, bid):
        env = dict(os.environ, DEBUGINFOD_URLS=self.url,
                   DEBUGINFOD_CACHE_PATH=str(self.root / "probe-cache"))
        deadline = time.time() + 120
        while True:
            probe = subprocess.run(["debuginfod-find", kind, bid], capture_output=True,
                                   text=True, env=env, timeout=60)
            shutil.rmtree(self.root / "probe-cache", ignore_errors=True)
            if probe.returncode == 0:
                return
            assert self.proc.poll() is None, open(self.log_path).read()[-2000:]
            assert time.time() < deadline, "debuginfod never served %s %s" % (kind, bid)
            time.sleep(1)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def line_cores():
    arches = [a for a in ("x86_64",) if ce.arch_tools_present(a)]
    return {"arches": arches, "logs": le.ensure_line_cores(arches)}


@pytest.fixture(scope="module")
def server(fixture_cores, line_cores, tmp_path_factory):
    """Serves inlinesplit's separate debug file (the stripped executable's lines and names)."""
    exp = ce.expected_case(line_cores, "x86_64", "inlinesplit", pytest.skip)
    root = tmp_path_factory.mktemp("debuginfod-lazy")
    files = root / "files"
    files.mkdir()
    shutil.copy2(exp["debug_file"], files / "inlinesplit.debug")
    s = Server(root, files)
    try:
        s.wait_serving("debuginfo", exp["exe_build_id"])
        yield s
    finally:
        s.close()


def run(ehbt_bin, exp, url, cache, extra=()):
    env = dict(os.environ, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=str(cache))
    sysroots, exe = ce.default_args(exp)
    cmd = [str(ehbt_bin), "core", exp["core"], "--all-threads", "--json"]
    for s in sysroots:
        cmd += ["--sysroot", s]
    if exe:
        cmd += ["--exe", exe]
    proc = subprocess.run(cmd + list(extra), capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def fetched_during(server, fn):
    before = len(server.requests())
    out = fn()
    return out, server.requests()[before:]


def test_terminate_fetches_only_the_modules_of_its_frames(ehbt_bin, fixture_cores, server,
                                                         tmp_path):
    exp = ce.expected_case(fixture_cores, "x86_64", "terminate", pytest.skip)
    want = wanted_debuginfo(exp)
    doc, got = fetched_during(server, lambda: run(ehbt_bin, exp, server.url, tmp_path / "c"))
    assert sorted(b for b, _, _ in got) == sorted(want), (got, want)
    assert all(kind == "debuginfo" for _, kind, _ in got), got
    # The test can fail: modules are mapped that no frame is in and that have no debug file
    # installed either (an eager lookup asked for them).
    untouched = {m["build_id"] for m in doc["modules"] if m["build_id"]
                 and not installed_debug_file(m["build_id"])} - set(want)
    assert untouched, doc["modules"]
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)
    # A second run answers from the client's cache (a miss is cached too): nothing asked.
    _, again = fetched_during(server, lambda: run(ehbt_bin, exp, server.url, tmp_path / "c"))
    assert again == [], again


def test_fetched_debug_file_gives_gdbs_lines(ehbt_bin, line_cores, server, tmp_path):
    """inlinesplit is stripped, its debug file only on the server: fetched (it is the one
    module of its frames without a local debug file), and its lines and inlined calls are
    GDB's, as with the debug file given locally."""
    exp = ce.expected_case(line_cores, "x86_64", "inlinesplit", pytest.skip)
    want = wanted_debuginfo(exp)
    assert exp["exe_build_id"] in want, want
    doc, got = fetched_during(server, lambda: run(ehbt_bin, exp, server.url, tmp_path / "c"))
    assert sorted((b, kind, code) for b, kind, code in got) == sorted(
        (b, "debuginfo", "200" if b == exp["exe_build_id"] else "404") for b in want), got
    errors = le.compare_lines(exp, doc, "inlinesplit via debuginfod")
    assert not errors, "\n".join(errors)
    local = run(ehbt_bin, exp, "", tmp_path / "unused", ["--debug-dir", exp["debug_dir"]])
    strip = lambda d: [t["frames"] for t in d["threads"]]  # noqa: E731
    assert strip(local) == strip(doc)


def test_no_lines_fetches_at_most_the_frames_modules(ehbt_bin, fixture_cores, server, tmp_path):
    """--no-lines: a debug file only where names or unwind tables need one (a stripped
    library's symbols): never a module no frame is in."""
    exp = ce.expected_case(fixture_cores, "x86_64", "terminate", pytest.skip)
    want = wanted_debuginfo(exp)
    doc, got = fetched_during(server, lambda: run(ehbt_bin, exp, server.url, tmp_path / "c",
                                                  ["--no-lines"]))
    assert {b for b, _, _ in got} <= set(want), (got, want)
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)


def test_failed_fetch_of_a_frames_module_is_a_warning_of_the_report(ehbt_bin, fixture_cores,
                                                                      tmp_path):
    """The lookup runs while frames are named, after the target was opened: its warning still
    lands in the document, once, naming a module a frame is in."""
    exp = ce.expected_case(fixture_cores, "x86_64", "terminate", pytest.skip)
    want = wanted_debuginfo(exp)
    url = "http://127.0.0.1:%d" % free_port()  # nobody listens there
    doc = run(ehbt_bin, exp, url, tmp_path / "c")
    failed = [w for w in doc["warnings"] if w["kind"] == "debuginfod_failed"]
    assert len(failed) == 1, doc["warnings"]
    assert any(bid in failed[0]["message"] for bid in want), (failed, want)
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)


def test_debugger_plugins_say_a_late_failed_fetch_as_the_cli_does(build_dir, ehbt_bin,
                                                                  fixture_cores, tmp_path,
                                                                  monkeypatch):
    """The plugins read the core's warnings after their frames are named and given lines: the
    debug file of a frame's module is looked up then, and a server that fails is said in the
    document, at the CLI's place among the warnings (it failed before: the plugins printed
    the warnings the core had when it was opened)."""
    import ehbt_py as h
    from test_gdb_plugin import gdb_json
    from test_lldb_plugin import run_lldb

    h.import_ehbt(build_dir)
    exp = ce.expected_case(fixture_cores, "x86_64", "terminate", pytest.skip)
    url = "http://127.0.0.1:%d" % free_port()  # nobody listens there
    cli_doc = run(ehbt_bin, exp, url, tmp_path / "cli-cache")
    want = cli_doc["warnings"]
    assert [w["kind"] for w in want].count("debuginfod_failed") == 1, want
    monkeypatch.setenv("DEBUGINFOD_URLS", url)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "plugin-cache"))
    gdb_doc, text = gdb_json(build_dir, [], pre=["file " + exp["exe_file"],
                                                 "core " + exp["core"]], tmp=tmp_path)
    assert gdb_doc["warnings"] == want, text[-3000:]
    out = tmp_path / "lldb.json"
    text = run_lldb(build_dir, tmp_path,
                    ["ehbt_test_capture %s ehbt --all --json" % out],
                    pre=["target create %s --core %s" % (exp["exe_file"], exp["core"])])
    assert out.exists(), text[-3000:]
    lldb_doc = json.loads(out.read_text()[out.read_text().find("{"):])
    assert lldb_doc["warnings"] == want, text[-3000:]
