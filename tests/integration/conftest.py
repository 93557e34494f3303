"""Shared pytest options for the integration tests: where the build tree is."""
import os
import pathlib

import pytest

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
