# SPDX-License-Identifier: Apache-2.0
"""The engine as a library for other C++ projects: after `cmake --install`, the prefix holds
libehbt.so.0 (with that SONAME), the headers and a CMake package and pkg-config file, and a
program outside the tree builds against them either way and unwinds a fixture core to the
frames GDB recorded for it."""
import glob
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import env_without_package_path

HERE = pathlib.Path(__file__).resolve().parent


def libdir(prefix):
    found = glob.glob(str(prefix / "lib*" / "**" / "libehbt.so.0"), recursive=True)
    assert len(found) == 1, f"libehbt.so.0 installed {len(found)} times under {prefix}"
    return pathlib.Path(found[0]).parent


def check_frames(output, expected):
    """`backtrace`'s lines ("PC SYMBOL", then "stop REASON") against the expectation."""
    lines = output.strip().splitlines()
    assert lines and lines[-1].startswith("stop "), output
    stop = lines[-1].split()[1]
    frames = [line.split(" ", 1) for line in lines[:-1]]
    thread = next(t for t in expected["threads"] if t["crashing"])
    want = thread["frames"]
    assert thread["stop"] == "outermost"
    assert stop == "outermost", output
    assert len(frames) == len(want), output
    for (pc, symbol), w in zip(frames, want):
        assert int(pc, 16) == int(w["pc"], 16), (output, w)
        bare = re.sub(r"\(.*$", "", symbol.split("@")[0])
        if w["symbols"]:
            assert bare in w["symbols"] or (bare == "-" and not w["symbol_required"]), (output, w)


def test_prefix_has_the_library_headers_and_package_files(prefix):
    lib = libdir(prefix)
    assert (lib / "libehbt.so").is_symlink()
    assert (lib / "libehbt.so.0").is_symlink()
    dynamic = subprocess.run(["readelf", "-d", str(lib / "libehbt.so.0")],
                             capture_output=True, text=True, check=True).stdout
    assert re.search(r"\(SONAME\)\s+Library soname: \[libehbt\.so\.0\]", dynamic), dynamic
    for header in ("core.hpp", "unwinder.hpp", "image.hpp", "memory.hpp", "expected.hpp",
                   "report.hpp"):
        assert (prefix / "include" / "ehbt" / header).exists(), header
    assert (lib / "cmake" / "ehbt" / "ehbtConfig.cmake").exists()
    assert (lib / "cmake" / "ehbt" / "ehbtConfigVersion.cmake").exists()
    pc = (lib / "pkgconfig" / "ehbt.pc").read_text()
    assert f"prefix={prefix}\n" in pc, pc  # the prefix installed to, not the configured one


def test_cmake_consumer_unwinds_a_core(prefix, chain_case, tmp_path):
    core, expected = chain_case
    build = tmp_path / "build"
    for argv in (["cmake", "-S", str(HERE / "consumer"), "-B", str(build), "-G", "Ninja",
                  f"-DCMAKE_PREFIX_PATH={prefix}"],
                 ["cmake", "--build", str(build)]):
        proc = subprocess.run(argv, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # CMake gives the consumer an RPATH to the imported library: no LD_LIBRARY_PATH needed.
    env = env_without_package_path()
    env.pop("LD_LIBRARY_PATH", None)
    ldd = subprocess.run(["ldd", str(build / "backtrace")], capture_output=True, text=True,
                         env=env).stdout
    assert str(libdir(prefix) / "libehbt.so.0") in ldd, ldd
    proc = subprocess.run([str(build / "backtrace"), str(core)], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    check_frames(proc.stdout, expected)


@pytest.mark.skipif(not shutil.which("pkg-config"), reason="pkg-config not installed")
def test_pkg_config_consumer_unwinds_a_core(prefix, chain_case, tmp_path):
    core, expected = chain_case
    env = dict(os.environ, PKG_CONFIG_PATH=str(libdir(prefix) / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "ehbt"], env=env,
                           capture_output=True, text=True)
    assert flags.returncode == 0, flags.stderr
    assert f"-I{prefix}/include" in flags.stdout and "-lehbt" in flags.stdout, flags.stdout
    exe = tmp_path / "backtrace"
    cxx = os.environ.get("CXX", "g++")
    proc = subprocess.run([cxx, "-o", str(exe), str(HERE / "consumer" / "backtrace.cpp")]
                          + flags.stdout.split(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([str(exe), str(core)], capture_output=True, text=True,
                          env=dict(os.environ, LD_LIBRARY_PATH=str(libdir(prefix))))
    assert proc.returncode == 0, proc.stderr
    check_frames(proc.stdout, expected)
