# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the packaging tests: the build tree, an install of it (`cmake --install`)
into a fresh prefix, and the x86_64 `chain` fixture core with its GDB-derived expectation."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--ehbt-build", default=os.environ.get("EHBT_BUILD", str(ROOT / "build")),
                     help="CMake build directory holding the ehbt binaries")


@pytest.fixture(scope="session")
def build_dir(request):
    path = pathlib.Path(request.config.getoption("--ehbt-build")).resolve()
    assert (path / "CMakeCache.txt").exists(), f"no CMake build at {path}"
    return path


def cmake_install(build_dir, prefix, destdir=None):
    """`cmake --install BUILD --prefix PREFIX` (under DESTDIR when given); returns its output."""
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = str(destdir)
    proc = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="session")
def prefix(build_dir, tmp_path_factory):
    """A fresh prefix with the whole build installed into it."""
    p = tmp_path_factory.mktemp("install") / "prefix"
    cmake_install(build_dir, p)
    return p


def env_without_package_path(**extra):
    """This environment without PYTHONPATH or EHBT_PYTHONPATH, so that installed scripts find
    their packages only through the installed layout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EHBT_PYTHONPATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def chain_case():
    """(core, expected document) of cores/out/x86_64/chain, made by cores/make-cores.sh when
    missing; its frames were recorded from GDB, never from ehbt."""
    import json

    out = ROOT / "cores" / "out" / "x86_64"
    core, expected = out / "chain.core", out / "chain.expected.json"
    if not expected.exists():
        if not shutil.which("gcc") or not shutil.which("gdb"):
            pytest.fail("gcc and gdb are needed to make the fixture core (scripts/install-deps.sh)")
        proc = subprocess.run(["bash", str(ROOT / "cores" / "make-cores.sh"), "x86_64",
                               "--only", "chain"], capture_output=True, text=True)
        assert expected.exists(), "make-cores.sh made no chain core:\n" + proc.stdout + proc.stderr
    with open(expected) as f:
        return core, json.load(f)
