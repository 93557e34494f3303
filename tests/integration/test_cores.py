# SPDX-License-Identifier: Apache-2.0
"""`ehbt core` on the fixture cores (cores/), frame by frame against GDB's frames.

The expected frames come from cores/make-cores.sh (GDB with full debug info, or by
construction where GDB is wrong); see cores/README.md and cores_expect.py for the rules.
"""

import json
import os
import pathlib
import re
import shutil
import struct
import subprocess

import pytest

import cores_expect as ce


def expected_or_skip(fixture_cores, arch, name):
    return ce.expected_case(fixture_cores, arch, name, pytest.skip)


@pytest.mark.parametrize("arch,name", ce.ALL_CASES, ids=["%s-%s" % c for c in ce.ALL_CASES])
def test_core_matches_gdb(ehbt_bin, fixture_cores, arch, name):
    exp = expected_or_skip(fixture_cores, arch, name)
    sysroots, exe = ce.default_args(exp)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exe)
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)


RELOCATED = [c for c in ce.ALL_CASES if c[1] in ("chain", "threads", "terminate", "sighandler",
                                                 "static")]


@pytest.mark.parametrize("arch,name", RELOCATED, ids=["%s-%s" % c for c in RELOCATED])
def test_relocated_binaries(ehbt_bin, fixture_cores, arch, name, tmp_path):
    """The executable and libraries copied elsewhere, found through --exe and --sysroot: same
    frames, and the modules report the copies as their files."""
    exp = expected_or_skip(fixture_cores, arch, name)
    exe, sysroot = ce.relocate(exp, tmp_path)
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=[sysroot], exe=exe)
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    files = {m.get("file") for m in doc["modules"]}
    assert str(exe) in files, "the --exe copy is not used: %s" % sorted(map(str, files))
    for core_path in ce.modules_in_frames(exp):
        names = {os.path.basename(core_path)}
        if not exp["sysroot"]:  # NT_FILE names the realpath: libstdc++.so.6.0.30
            names.add(os.path.basename(os.path.realpath(core_path)))
        mod = [m for m in doc["modules"] if os.path.basename(m["path"]) in names]
        assert mod, "no module for %s" % core_path
        assert all(str(m.get("file") or "").startswith(str(sysroot)) for m in mod), mod
        assert all(m.get("build_id_match") is not False for m in mod), mod


BUILDID = [c for c in ce.ALL_CASES if c[1] == "buildid"]


@pytest.mark.parametrize("arch,name", BUILDID, ids=["%s-%s" % c for c in BUILDID])
def test_wrong_build_id_is_reported_and_not_used(ehbt_bin, fixture_cores, arch, name):
    """The executable at the core's path is gone; the sysroot holds a rebuilt variant (another
    build-id, a function renamed fx_level2_variant). ehbt must flag it and not use it."""
    exp = expected_or_skip(fixture_cores, arch, name)
    assert not os.path.exists(exp["exe"])
    if arch != "x86_64":
        # qemu-user dumps no contents of read-only executable mappings: the core does not hold
        # the build-id note at the executable's load address, so nothing can tell the files
        # apart (make_cores.py checks the core's bytes for it). Assert that fact, so a qemu
        # that starts recording it brings this case into the test.
        assert not exp["exe_build_id_in_core"], exp["core"]
        return
    sysroots = [exp["variant_sysroot"]] + ([exp["sysroot"]] if exp["sysroot"] else [])
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots)
    exe_mods = [m for m in doc["modules"] if m["path"] == exp["exe"]]
    assert len(exe_mods) == 1, doc["modules"]
    mod = exe_mods[0]
    assert mod["build_id_match"] is False, mod
    assert mod.get("build_id") == exp["exe_build_id"], mod
    crashing = [t for t in doc["threads"] if t["crashing"]]
    assert crashing
    for f in crashing[0]["frames"]:
        assert "variant" not in (f.get("symbol") or ""), f
        if f.get("module") == exp["exe"]:
            assert f.get("symbol") is None, "symbol from the wrong-build-id file: %s" % f
    # Frame 0's pc comes from the registers, whatever the files.
    assert int(crashing[0]["frames"][0]["pc"], 16) == int(
        [t for t in exp["threads"] if t["crashing"]][0]["frames"][0]["pc"], 16)


@pytest.mark.parametrize("arch,name", BUILDID, ids=["%s-%s" % c for c in BUILDID])
def test_right_build_id_via_exe(ehbt_bin, fixture_cores, arch, name):
    exp = expected_or_skip(fixture_cores, arch, name)
    sysroots = [exp["variant_sysroot"]] + ([exp["sysroot"]] if exp["sysroot"] else [])
    rc, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots=sysroots, exe=exp["exe_file"])
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    mod = [m for m in doc["modules"] if m["path"] == exp["exe"]]
    assert mod, doc["modules"]
    # qemu cores may not hold the executable's build-id (see above): then nothing can be
    # compared and the match is unknown (null), never claimed.
    if exp.get("exe_build_id_in_core", True):
        assert mod[0]["build_id"] == exp["exe_build_id"], mod
    if mod[0]["build_id"] is None:
        assert mod[0]["build_id_match"] is None, mod
    else:
        assert mod[0]["build_id"] == exp["exe_build_id"] and mod[0]["build_id_match"] is True, mod


DATAMAPS = [c for c in ce.ALL_CASES if c[1] == "datamaps"]
TRIAGE = ce.ROOT / "triage" / "ehbt-triage"


def nt_file_paths(core):
    """The file names of an x86-64 core's NT_FILE note, decoded here from the layout the kernel
    writes (fs/binfmt_elf.c): count, page size, count (start, end, page offset) words, then the
    names, NUL-terminated."""
    data = pathlib.Path(core).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not an ELF64 LE core"
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    names = []
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                 phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        off, end = p_offset, p_offset + p_filesz
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, off)
            name = data[off + 12:off + 12 + namesz].rstrip(b"\0")
            desc = off + 12 + (namesz + 3) // 4 * 4
            if name == b"CORE" and ntype == 0x46494C45:  # NT_FILE
                count, = struct.unpack_from("<Q", data, desc)
                strings = data[desc + 16 + 24 * count:desc + descsz]
                names += [n.decode() for n in strings.split(b"\0")[:count]]
            off = desc + (descsz + 3) // 4 * 4
    return names


def is_elf_file(path):
    try:
        if not pathlib.Path(path).is_file():
            return False
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


@pytest.mark.parametrize("arch,name", DATAMAPS, ids=["%s-%s" % c for c in DATAMAPS])
def test_data_mappings_are_not_modules(ehbt_bin, build_dir, fixture_cores, arch, name, tmp_path):
    """Issue 32 item 7: cores/programs/datamaps.c maps a locale, gconv-modules.cache, a deleted
    data file, POSIX and SysV shared memory and /dev/zero. None is a module: no warning, not in
    `modules`, GDB's frames, exit 0; and ehbt-triage finds nothing missing."""
    exp = expected_or_skip(fixture_cores, arch, name)
    core = exp["core"]
    named = nt_file_paths(core)
    # The fixture did map each kind of data file (else this test proves nothing).
    for pattern in (r"^/usr/lib/locale/C\.utf8/LC_CTYPE$", r"/gconv-modules\.cache$",
                    r"/datamaps\.data \(deleted\)$", r"^/dev/shm/ehbt-datamaps-\d+ \(deleted\)$",
                    r"^/SYSV[0-9a-f]+ \(deleted\)$", r"^/dev/zero \(deleted\)$"):
        assert any(re.search(pattern, p) for p in named), (pattern, named)

    text = subprocess.run([str(ehbt_bin), "core", core], capture_output=True, text=True,
                          timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stderr == ""

    rc, doc = ce.run_ehbt(ehbt_bin, core)
    assert rc == 0
    assert doc["warnings"] == []
    errors = ce.compare(exp, doc, rc)
    assert not errors, "\n".join(errors)
    # The modules are exactly the named files that are ELF (looked at here, byte by byte),
    # and the vDSO.
    want = {p for p in named if is_elf_file(p)} | {"[vdso]"}
    got = {m["path"] for m in doc["modules"]}
    assert got == want, (sorted(got - want), sorted(want - got))

    # ehbt-triage: exit 0, no missing modules in the record, no listing of them.
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(core, spool / "datamaps.core")
    env = dict(os.environ, PYTHONPATH=str(build_dir / "engine" / "python"),
               EHBT_BIN=str(ehbt_bin))
    proc = subprocess.run(["/usr/bin/python3", str(TRIAGE), "--db", str(tmp_path / "db"),
                           "--jsonl", str(tmp_path / "o.jsonl"), str(spool)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
    (rec,) = [json.loads(line) for line in open(tmp_path / "o.jsonl") if line.strip()]
    assert rec["missing_modules"] == [] and rec["warnings"] == [], rec
