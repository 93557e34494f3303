# SPDX-License-Identifier: Apache-2.0
"""The debug cache (docs/cli.md, --no-debug-cache) on fixture cores whose frames reach the
host's libc, whose Debian debug file (libc6-dbg) keeps its DWARF compressed: the document of a
run that makes the cached copy and of one that reads it are those of a run without the cache,
byte for byte."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

import cores_expect as ce

CASES = ["chain", "threads"]


def run(ehbt_bin, exp, cache_dir, *extra):
    sysroots, exe = ce.default_args(exp)
    cmd = [str(ehbt_bin), "core", exp["core"], "--json", "--all-threads"]
    for s in sysroots:
        cmd += ["--sysroot", s]
    if exe:
        cmd += ["--exe", exe]
    env = dict(os.environ, EHBT_CACHE_DIR=str(cache_dir))
    proc = subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout, proc.stderr


def compressed_debug_files(doc):
    """The build-ids of the modules frames are in whose debug files under
    /usr/lib/debug/.build-id have SHF_COMPRESSED sections."""
    out = []
    in_frames = {f["module"] for t in doc["threads"] for f in t["frames"] if f.get("module")}
    for m in doc["modules"]:
        bid = m.get("build_id")
        if not bid or m["path"] not in in_frames:
            continue
        path = pathlib.Path("/usr/lib/debug/.build-id") / bid[:2] / (bid[2:] + ".debug")
        if not path.exists():
            continue
        sections = subprocess.run(["readelf", "-SW", str(path)], capture_output=True,
                                  text=True).stdout
        if any(" C " in line for line in sections.splitlines() if ".debug_info" in line):
            out.append(bid)
    return out


@pytest.mark.parametrize("name", CASES)
def test_cached_runs_print_what_uncached_runs_print(ehbt_bin, fixture_cores, name, tmp_path):
    exp = ce.expected_case(fixture_cores, "x86_64", name, pytest.skip)
    cache = tmp_path / "cache"
    without, err = run(ehbt_bin, exp, cache, "--no-debug-cache")
    assert not (cache / "debug").exists() or not any((cache / "debug").iterdir()), \
        "--no-debug-cache writes nothing"
    cold, cold_err = run(ehbt_bin, exp, cache)
    warm, warm_err = run(ehbt_bin, exp, cache)
    assert cold == without
    assert warm == without
    assert cold_err == err and warm_err == err
    doc = json.loads(without)
    compressed = compressed_debug_files(doc)
    if not compressed:
        pytest.skip("no compressed debug file of these modules on this host (libc6-dbg)")
    assert any(f["location"] for t in doc["threads"] for f in t["frames"]), \
        "frames with lines: the debug file is read"
    # The copies (not the directory's usage ledger, .debug.usage).
    copies = sorted(p.name for p in (cache / "debug").iterdir() if p.name.endswith(".debug"))
    for bid in compressed:
        assert any(c.startswith(bid + ".") for c in copies), (bid, copies)
    # The warm run answered from the persistent line answers of the cold one (lines/, one file
    # per DWARF file, named by its build-id).
    answers = sorted(p.name for p in (cache / "lines").iterdir())
    for bid in compressed:
        assert any(a.startswith(bid + ".") and a.endswith(".lines") for a in answers), \
            (bid, answers)
    # A damaged copy (cut short) is ignored and made again: the same document. Without the
    # answers, which would spare the next run the copy.
    shutil.rmtree(cache / "lines")
    for c in copies:
        with open(cache / "debug" / c, "r+b") as f:
            f.truncate(4096)
    again, _ = run(ehbt_bin, exp, cache)
    assert again == without
    assert all((cache / "debug" / c).stat().st_size > 4096 for c in copies)


def test_python_limits_turn_the_cache_off(build_dir, fixture_cores, tmp_path, monkeypatch):
    """ehbt.Limits(max_debug_cache_bytes=0) is --no-debug-cache for the Python module (and so
    for the plugins and ehbt-triage, which report through it)."""
    import ehbt_py
    ehbt = ehbt_py.import_ehbt(build_dir)
    exp = ce.expected_case(fixture_cores, "x86_64", "chain", pytest.skip)
    sysroots, exe = ce.default_args(exp)
    monkeypatch.setenv("EHBT_CACHE_DIR", str(tmp_path))

    def report(limits):
        target = ehbt.open_core(exp["core"], sysroots=sysroots, exe=exe or "")
        try:
            return ehbt.target_report(target, threads="all", limits=limits).to_dict()
        finally:
            target.close()

    without = report(ehbt.Limits(max_debug_cache_bytes=0))
    cache = tmp_path / "debug"
    assert not cache.exists() or not any(cache.iterdir())
    with_cache = report(None)
    assert with_cache == without
    if compressed_debug_files(without):
        assert any(cache.iterdir())


def test_gdb_plugin_no_debug_cache(build_dir, ehbt_bin, fixture_cores, tmp_path, monkeypatch):
    """GDB's `ehbt -no-debug-cache` writes no copy and prints the lines the CLI prints with
    --no-debug-cache; without it the copy is made, the same lines."""
    import ehbt_py as h
    exp = ce.expected_case(fixture_cores, "x86_64", "chain", pytest.skip)
    want = json.loads(run(ehbt_bin, exp, tmp_path / "cli", "--no-debug-cache")[0])
    cache = tmp_path / "gdb"
    monkeypatch.setenv("EHBT_CACHE_DIR", str(cache))
    sysroots, exe = ce.default_args(exp)
    pre = ["set debug-file-directory /usr/lib/debug"] + (
        ["set sysroot " + sysroots[0]] if sysroots else []) + [
        "file " + (exe or exp["exe_file"]), "core " + exp["core"]]

    def lines(*flags):
        out_file = tmp_path / "gdb.json"
        out = h.run_gdb(build_dir, [], pre + [
            "python open(%r, 'w').write(gdb.execute(%r, to_string=True))" % (
                str(out_file), " ".join(("ehbt", "-all", "-json") + flags))])
        assert out_file.exists(), out[-3000:]
        text = [x for x in out_file.read_text().splitlines() if x.startswith("{")]
        doc = json.loads(text[0])
        return [[(f["pc"], f.get("location"), f.get("inlined")) for f in t["frames"]]
                for t in doc["threads"]]

    expected = [[(f["pc"], f.get("location"), f.get("inlined")) for f in t["frames"]]
                for t in want["threads"]]
    assert lines("-no-debug-cache") == expected
    assert not (cache / "debug").exists() or not any((cache / "debug").iterdir())
    assert lines() == expected
    if compressed_debug_files(want):
        assert any((cache / "debug").iterdir())
