# SPDX-License-Identifier: Apache-2.0
"""The Python packages land where /usr/bin/python3 imports them from for the prefix installed
to (Debian: /usr -> lib/python3/dist-packages, /usr/local -> lib/python3.X/dist-packages), and
the installed ehbt-triage and GDB plugin find them from their own location, without
PYTHONPATH."""
import shutil
import subprocess

import pytest

from conftest import cmake_install, env_without_package_path

PYTHON = "/usr/bin/python3"


def python_version():
    out = subprocess.run([PYTHON, "-c", "import sys; print('python%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


@pytest.fixture(scope="module")
def usr_local(build_dir, tmp_path_factory):
    """DESTDIR install with --prefix /usr/local: what `sudo cmake --install build --prefix
    /usr/local` writes, relocated under a temporary root."""
    root = tmp_path_factory.mktemp("destdir")
    cmake_install(build_dir, "/usr/local", destdir=root)
    return root


def import_under_root(root, code):
    """Runs `code` in /usr/bin/python3 whose site packages are computed by its own site module
    (Debian's rules) for `prefix` relocated under `root`: the interpreter starts without site
    (-S), its prefixes are moved under root, then site.main() adds what Debian's python3 would
    add for that prefix. No directory is named by hand."""
    program = (
        "import sys, site\n"
        f"sys.prefix = sys.exec_prefix = {str(root) + '/usr'!r}\n"
        "site.PREFIXES[:] = [sys.prefix]\n"
        "site.main()\n" + code)
    return subprocess.run([PYTHON, "-S", "-c", program], capture_output=True, text=True,
                          env=env_without_package_path(), cwd="/")


def test_usr_local_packages_are_where_debian_python_looks(usr_local):
    site = usr_local / "usr" / "local" / "lib" / python_version() / "dist-packages"
    assert (site / "ehbt" / "__init__.py").exists(), sorted(usr_local.rglob("__init__.py"))
    assert (site / "ehbt_triage" / "cli.py").exists()
    assert list((site / "ehbt").glob("_ehbt*.so"))
    # /usr/bin/python3 itself lists /usr/local/lib/python3.X/dist-packages for /usr/local.
    proc = import_under_root(
        usr_local,
        "import ehbt, ehbt_triage; print(ehbt.__file__); print(ehbt_triage.__file__);"
        " print(ehbt.__version__)")
    assert proc.returncode == 0, proc.stderr
    ehbt_file, triage_file, version = proc.stdout.split()
    assert ehbt_file.startswith(str(site)), proc.stdout
    assert triage_file.startswith(str(site)), proc.stdout
    assert version == ehbt_version_from(usr_local)


def test_usr_packages_go_to_lib_python3(build_dir, tmp_path):
    cmake_install(build_dir, "/usr", destdir=tmp_path)
    site = tmp_path / "usr" / "lib" / "python3" / "dist-packages"
    assert (site / "ehbt" / "__init__.py").exists()
    assert (site / "ehbt_triage" / "cli.py").exists()
    assert not list(tmp_path.glob("usr/lib/python3.*"))


def test_installed_triage_runs_without_pythonpath(usr_local, tmp_path):
    triage = usr_local / "usr" / "local" / "bin" / "ehbt-triage"
    env = env_without_package_path()
    proc = subprocess.run([str(triage), "--version"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ehbt-triage "), proc.stdout


def test_installed_triage_triages_a_core(usr_local, chain_case, tmp_path):
    core, _ = chain_case
    triage = usr_local / "usr" / "local" / "bin" / "ehbt-triage"
    jsonl = tmp_path / "out.jsonl"
    proc = subprocess.run([str(triage), "--db", str(tmp_path / "db.sqlite"), "--jsonl",
                           str(jsonl), "-j", "1", str(core)], capture_output=True, text=True,
                          env=env_without_package_path(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fx_level3" in jsonl.read_text()


@pytest.mark.skipif(not shutil.which("gdb"), reason="gdb not installed")
def test_installed_gdb_plugin_finds_the_usr_local_package(usr_local):
    plugin = usr_local / "usr" / "local" / "share" / "ehbt" / "gdb" / "ehbt.py"
    proc = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"source {plugin}",
                           "-ex", "python import ehbt; print('PKG', ehbt.__file__)",
                           "-ex", "help ehbt"],
                          capture_output=True, text=True, env=env_without_package_path())
    out = proc.stdout + proc.stderr
    pkg = [line.split()[1] for line in out.splitlines() if line.startswith("PKG ")]
    site = usr_local / "usr" / "local" / "lib" / python_version() / "dist-packages"
    assert pkg and pkg[0].startswith(str(site)), out
    assert "ehbt " + ehbt_version_from(usr_local) in out, out  # help names the version


def ehbt_version_from(root):
    return subprocess.run([str(root / "usr" / "local" / "bin" / "ehbt"), "--version"],
                          capture_output=True, text=True, check=True).stdout.split()[-1]
