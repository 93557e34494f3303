# SPDX-License-Identifier: Apache-2.0
"""Cores as crash spools hold them: compressed (zstd, xz, lz4, gzip, told by content), with
binaries whose unwind tables and symbols live in separate debug files (build-id directory
under a sysroot, --debug-dir, .gnu_debuglink with its CRC) or in MiniDebugInfo. Expected
frames are GDB's (cores/make-cores.sh, GDB on the unstripped build), never ehbt's.
"""

import json
import os
import shutil
import subprocess

import pytest

import cores_expect as ce

COMPRESSORS = {
    "zstd": ["zstd", "-q", "-c"],
    "xz": ["xz", "-c", "-T1"],
    "lz4": ["lz4", "-q", "-c"],
    "gzip": ["gzip", "-c"],
}


def expected(fixture_cores, arch, name):
    return ce.expected_case(fixture_cores, arch, name, pytest.skip)


def compress(src, dest, fmt):
    # Named .core on purpose: the format must be told by content, not by the name.
    with open(dest, "wb") as out:
        subprocess.run(COMPRESSORS[fmt] + [str(src)], stdout=out, check=True)
    return dest


COMPRESSED = [(a, n, f) for a, n in ce.ALL_CASES if n in ("chain", "threads")
              for f in COMPRESSORS]


@pytest.mark.parametrize("arch,name,fmt", COMPRESSED, ids=["%s-%s-%s" % c for c in COMPRESSED])
def test_compressed_core_gives_gdbs_frames(ehbt_bin, fixture_cores, arch, name, fmt, tmp_path):
    exp = expected(fixture_cores, arch, name)
    packed = compress(exp["core"], tmp_path / "spooled.core", fmt)
    assert os.path.getsize(packed) < os.path.getsize(exp["core"])
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, packed, sysroots=sysroots, exe=exe)
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    # The temporary file is gone: nothing named after the core is left in $TMPDIR.
    assert not [p for p in os.listdir(tmp_path) if p.startswith("ehbt-core-")]


@pytest.mark.parametrize("fmt", sorted(COMPRESSORS))
def test_truncated_compressed_core_is_one_line_exit_2(ehbt_bin, fixture_cores, fmt, tmp_path):
    exp = expected(fixture_cores, "x86_64", "chain")
    packed = compress(exp["core"], tmp_path / "full", fmt)
    cut = tmp_path / "cut.core"
    data = open(packed, "rb").read()
    cut.write_bytes(data[:len(data) // 2])
    proc = subprocess.run([str(ehbt_bin), "core", str(cut)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "truncated %s stream" % fmt in lines[0] and "bytes recovered" in lines[0], lines[0]


def test_compressed_core_through_python(build_dir, fixture_cores, tmp_path):
    exp = expected(fixture_cores, "x86_64", "chain")
    packed = compress(exp["core"], tmp_path / "c.zst", "zstd")
    code = ("import sys, json, ehbt; t = ehbt.open_core(sys.argv[1]); "
            "print(json.dumps([t.arch.name, sorted(th.tid for th in t.threads)]))")
    env = dict(os.environ, PYTHONPATH=str(build_dir / "engine" / "python"))
    proc = subprocess.run(["/usr/bin/python3", "-c", code, str(packed)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["X86_64", sorted(t["tid"] for t in exp["threads"])]


DEBUGFILE = [c for c in ce.ALL_CASES if c[1] == "debugfile"]


def crashing_frames(doc):
    return [t for t in doc["threads"] if t["crashing"]][0]["frames"]


@pytest.mark.parametrize("arch,name", DEBUGFILE, ids=["%s-%s" % c for c in DEBUGFILE])
def test_without_the_debug_file_the_walk_is_not_gdbs(ehbt_bin, fixture_cores, arch, name):
    """The case is honest: without its debug file ehbt cannot match GDB (no .debug_frame for
    the fx_* functions, no names for them)."""
    exp = expected(fixture_cores, arch, name)
    sysroots = [exp["sysroot"]] if exp["sysroot"] else []
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots)
    assert ce.compare(exp, doc, rc), "matched GDB without the debug file"


@pytest.mark.parametrize("arch,name", DEBUGFILE, ids=["%s-%s" % c for c in DEBUGFILE])
def test_debug_file_from_build_id_dir_gives_debug_frame(ehbt_bin, fixture_cores, arch, name):
    exp = expected(fixture_cores, arch, name)
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe)
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    fx = [f for f in crashing_frames(doc)[1:] if (f.get("symbol") or "").startswith("fx_")]
    assert fx and all(f["source"] == "debug_frame" for f in crashing_frames(doc)[1:4]), fx


def debug_layout(exp, tmp_path, where, corrupt=False):
    """The stripped binary copied to tmp/bin and its debug file placed as `where` says:
    'same' (next to it), 'dotdebug' (bin/.debug/), or 'debugdir' (a --debug-dir tree)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / os.path.basename(exp["exe"])
    shutil.copy2(exp["exe_file"], exe)
    link = os.path.basename(exp["debuglink_file"])
    dest = {"same": bindir / link, "dotdebug": bindir / ".debug" / link,
            "debugdir": tmp_path / "dbg" / os.path.dirname(exp["exe"]).lstrip("/") / link}[where]
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(exp["debuglink_file"], dest)
    if corrupt:
        with open(dest, "ab") as f:  # same contents plus one byte: the CRC no longer matches
            f.write(b"\0")
    return exe


LINKS = [(a, n, w) for a, n in DEBUGFILE for w in ("same", "dotdebug", "debugdir")]


@pytest.mark.parametrize("arch,name,where", LINKS, ids=["%s-%s-%s" % c for c in LINKS])
def test_debuglink(ehbt_bin, fixture_cores, arch, name, where, tmp_path):
    exp = expected(fixture_cores, arch, name)
    exe = debug_layout(exp, tmp_path, where)
    sysroots = [exp["sysroot"]] if exp["sysroot"] else []
    extra = ["--debug-dir", str(tmp_path / "dbg")] if where == "debugdir" else []
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe, extra=extra)
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("arch,name", DEBUGFILE, ids=["%s-%s" % c for c in DEBUGFILE])
def test_debuglink_with_wrong_crc_is_not_used(ehbt_bin, fixture_cores, arch, name, tmp_path):
    exp = expected(fixture_cores, arch, name)
    exe = debug_layout(exp, tmp_path, "same", corrupt=True)
    sysroots = [exp["sysroot"]] if exp["sysroot"] else []
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe)
    names = [f.get("symbol") for f in crashing_frames(doc)]
    assert not any((n or "").startswith("fx_") for n in names), names


@pytest.mark.parametrize("arch,name", DEBUGFILE, ids=["%s-%s" % c for c in DEBUGFILE])
def test_debug_dir_build_id_tree(ehbt_bin, fixture_cores, arch, name, tmp_path):
    """--debug-dir DIR is searched like GDB's debug-file-directory: DIR/.build-id/xx/rest."""
    exp = expected(fixture_cores, arch, name)
    src = os.path.join(exp["debug_sysroot"], "usr/lib/debug")
    shutil.copytree(src, tmp_path / "dbg", symlinks=True)
    sysroots = [exp["sysroot"]] if exp["sysroot"] else []
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots,
                          extra=["--debug-dir", str(tmp_path / "dbg")])
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)


def test_lldb_plugin_core_option_takes_a_compressed_core(build_dir, fixture_cores, tmp_path):
    """LLDB cannot open a compressed core; the plugin's --core FILE hands the spool's file to
    the engine, which can."""
    import test_lldb_plugin as lp

    exp = expected(fixture_cores, "x86_64", "chain")
    packed = compress(exp["core"], tmp_path / "spooled.core", "zstd")
    doc, text = lp.ehbt_json(build_dir, tmp_path, lp.core_setup(exp),
                             command="ehbt --all --json --core %s" % packed)
    assert doc["core"] == str(packed), text[-2000:]
    errors = ce.compare(exp, doc)
    assert not errors, "\n".join(errors)
