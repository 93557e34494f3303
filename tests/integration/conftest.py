# SPDX-License-Identifier: Apache-2.0
"""Shared pytest options and fixtures for the integration tests: where the build tree is, and
the fixture cores (built once per session when missing)."""
import os
import pathlib

import pytest

import cores_expect as ce

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--ehbt-build", default=os.environ.get("EHBT_BUILD", str(ROOT / "build")),
                     help="CMake build directory holding the ehbt binaries")


@pytest.fixture(scope="session")
def build_dir(request):
    return pathlib.Path(request.config.getoption("--ehbt-build")).resolve()


@pytest.fixture(scope="session")
def ehbt_bin(build_dir):
    path = build_dir / "engine" / "tools" / "ehbt"
    assert path.exists(), f"ehbt not built at {path}"
    return path


@pytest.fixture(scope="session")
def fixture_cores():
    """The architectures whose fixture cores can be made here, after making the missing ones
    (see cores_expect.expected_case)."""
    arches = [a for a in ce.ARCHES if ce.arch_tools_present(a)]
    logs = ce.ensure_cores(arches)
    return {"arches": arches, "logs": logs}


@pytest.fixture(scope="session", autouse=True)
def ehbt_cache_dir(tmp_path_factory):
    """Every ehbt the tests run (the CLI, the Python module, the plugins, ehbt-triage) keeps its
    cache (the debug cache: docs/cli.md, --no-debug-cache) in a directory of this session,
    never in the user's ~/.cache/ehbt."""
    path = tmp_path_factory.mktemp("ehbt-cache")
    old = os.environ.get("EHBT_CACHE_DIR")
    os.environ["EHBT_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("EHBT_CACHE_DIR", None)
    else:
        os.environ["EHBT_CACHE_DIR"] = old
