# SPDX-License-Identifier: Apache-2.0
"""`ehbt core` on the fixture cores (cores/), frame by frame against GDB's frames.

The expected frames come from cores/make-cores.sh (GDB with full debug info, or by
construction where GDB is wrong); see cores/README.md and cores_expect.py for the rules.
"""

import os

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
