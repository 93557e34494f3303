# SPDX-License-Identifier: Apache-2.0
"""What ehbt says when its inputs are incomplete: a deleted or moved executable, another
program given as --exe, a qemu core without --sysroot, truncated cores, a core without
NT_SIGINFO, a module without a build-id. Each must be a structured warning in the JSON, one
`warning:` line on stderr in text mode, a stop reason naming the real cause, and nothing
invented (no SI_USER for an unknown code, no build_id_match true without two build-ids).

Expected facts come from the test's own construction (what it deleted, moved or cut) and
from binutils (readelf), never from ehbt."""
import json
import os
import pathlib
import struct
import subprocess

import pytest

import cores_expect as ce
from test_cli import make_crash  # noqa: E402  (test_cli's CRASH_C, crashed in a directory)

TIMEOUT = 120


NT_SIGINFO = 0x53494749
PT_LOAD, PT_NOTE = 1, 4


def run_ehbt(ehbt_bin, *args):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT)


def warning_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]


@pytest.fixture(scope="module")
def crash(tmp_path_factory):
    core, exe = make_crash(tmp_path_factory.mktemp("honest"))
    return {"core": core, "exe": exe}


def layout(data):
    """(notes (offset, size), [PT_LOAD (offset, filesz)]) of a little-endian ELF64 core."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    notes, loads = None, []
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * 56)
        if p_type == PT_NOTE and notes is None:
            notes = (p_offset, p_filesz)
        elif p_type == PT_LOAD and p_filesz:
            loads.append((p_offset, p_filesz))
    return notes, loads


def kinds(doc):
    return [w["kind"] for w in doc["warnings"]]


def check_warning_shape(doc):
    for w in doc["warnings"]:
        assert set(w) == {"kind", "message", "path", "option"}, w
        assert w["kind"] in {"missing_file", "mismatched_file", "unreadable_file",
                             "executable_mismatch", "truncated_core", "no_signal_info",
                             "debuginfod_failed"}, w
        assert w["message"] and "\n" not in w["message"]
        assert w["path"] is None or w["path"]
        assert w["option"] in (None, "--exe", "--sysroot", "--debuginfod"), w


# ---------------------------------------------------------------- missing and wrong files

@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_missing_executable_is_said_and_named_as_the_cause(ehbt_bin, tmp_path, how):
    core, exe = make_crash(tmp_path / "run")
    moved = tmp_path / "elsewhere" / "crasher"
    if how == "deleted":
        exe.unlink()
    else:
        moved.parent.mkdir()
        exe.rename(moved)

    proc = run_ehbt(ehbt_bin, "core", core)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"Executable: {exe} (not found)\n" in proc.stdout
    lines = warning_lines(proc)
    assert lines == [f"warning: the executable {exe}, named by the core, was not found "
                     "(use --exe PATH)"], proc.stderr
    stop = [line for line in proc.stdout.splitlines() if line.startswith("Backtrace stopped:")]
    assert len(stop) == 1 and stop[0].startswith(
        "Backtrace stopped: no_module: crasher not found (named by the core)"), proc.stdout

    doc = json.loads(run_ehbt(ehbt_bin, "core", core, "--json").stdout)
    check_warning_shape(doc)
    assert doc["warnings"] == [{"kind": "missing_file", "message": lines[0][len("warning: "):-len(
        " (use --exe PATH)")], "path": str(exe), "option": "--exe"}]
    mod = next(m for m in doc["modules"] if m["path"] == str(exe))
    assert mod["file"] is None and mod["build_id_match"] is None
    assert doc["threads"][0]["stop_reason"] == "no_module"

    if how == "moved":
        # Told where it went, the same core gives the whole trace and nothing to warn about.
        fixed = run_ehbt(ehbt_bin, "core", core, "--exe", moved)
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert warning_lines(fixed) == []
        assert "(not found)" not in fixed.stdout
        assert "cli_fx_level1" in fixed.stdout


def test_another_programs_executable_is_a_mismatch(ehbt_bin, crash):
    other = "/bin/ls"
    proc = run_ehbt(ehbt_bin, "core", crash["core"], "--exe", other)
    assert proc.returncode in (0, 1)
    lines = warning_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"warning: --exe {other} is not the executable {crash['exe']}")
    assert "build-id" in lines[0] and lines[0].endswith("(use --exe PATH)")
    # The file exists and was rejected for its build-id: not called missing.
    assert f"Executable: {crash['exe']} (build-id differs, not used)\n" in proc.stdout
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--exe", other, "--json").stdout)
    check_warning_shape(doc)
    [w] = doc["warnings"]
    assert (w["kind"], w["path"], w["option"]) == ("executable_mismatch", other, "--exe")
    mod = next(m for m in doc["modules"] if m["path"] == str(crash["exe"]))
    assert mod["build_id_match"] is False and mod["file"] is None


def test_executable_rebuilt_in_place_is_another_build_not_missing(ehbt_bin, tmp_path):
    """The executable's path now holds another program (a rebuild, a deploy): the header says
    its build-id differs and that it is not used, never "(not found)"; the JSON keeps the
    file null and build_id_match false."""
    core, exe = make_crash(tmp_path / "run")
    exe.unlink()
    exe.write_bytes(pathlib.Path("/bin/true").read_bytes())  # another program's build-id
    proc = run_ehbt(ehbt_bin, "core", core)
    assert f"Executable: {exe} (build-id differs, not used)\n" in proc.stdout, proc.stdout
    assert "(not found)" not in proc.stdout
    [line] = warning_lines(proc)
    assert line.startswith(f"warning: {exe} is not the executable {exe}"), line
    doc = json.loads(run_ehbt(ehbt_bin, "core", core, "--json").stdout)
    mod = next(m for m in doc["modules"] if m["path"] == str(exe))
    assert mod["file"] is None and mod["build_id_match"] is False
    assert [w["kind"] for w in doc["warnings"]] == ["mismatched_file"]


def test_unreadable_executable_is_said(ehbt_bin, crash, tmp_path):
    text = tmp_path / "not-elf"
    text.write_text("this is not an ELF file\n")
    proc = run_ehbt(ehbt_bin, "core", crash["core"], "--exe", text)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert warning_lines(proc) == [f"warning: {text} (the executable {crash['exe']}) cannot be "
                                   "read as an ELF file"], proc.stderr
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--exe", text, "--json").stdout)
    check_warning_shape(doc)
    assert doc["warnings"][0]["kind"] == "unreadable_file"
    assert doc["warnings"][0]["path"] == str(text) and doc["warnings"][0]["option"] is None
    assert doc["threads"][0]["stop_reason"] == "no_module"
    assert "is unreadable" in doc["threads"][0]["stop_detail"]


def test_complete_inputs_give_no_warnings(ehbt_bin, crash):
    proc = run_ehbt(ehbt_bin, "core", crash["core"])
    assert proc.returncode == 0 and warning_lines(proc) == [], proc.stderr
    doc = json.loads(run_ehbt(ehbt_bin, "core", crash["core"], "--json").stdout)
    assert doc["warnings"] == []
    assert doc["signal"]["code"] == 1  # SEGV_MAPERR, from NT_SIGINFO


def test_module_without_build_id_is_not_called_a_match(ehbt_bin, tmp_path):
    core, exe = make_crash(tmp_path / "noid", "-Wl,--build-id=none")
    notes = subprocess.run(["readelf", "-n", str(exe)], capture_output=True, text=True).stdout
    assert "NT_GNU_BUILD_ID" not in notes  # the premise, checked by binutils
    doc = json.loads(run_ehbt(ehbt_bin, "core", core, "--json").stdout)
    mod = next(m for m in doc["modules"] if m["path"] == str(exe))
    assert mod["build_id"] is None
    assert mod["build_id_match"] is None
    assert mod["file"] == str(exe)  # still used: nothing says it is another build
    assert doc["warnings"] == []


# ---------------------------------------------------------------------- qemu without sysroot

def fixture_case(arch, name):
    """One fixture core (made alone when missing: not the whole architecture's set)."""
    if not ce.arch_tools_present(arch):
        pytest.skip(f"no toolchain/qemu/gdb for {arch}")
    if not ce.expected_path(arch, name).exists():
        subprocess.run(["bash", str(ce.MAKE_CORES), arch, "--only", name], cwd=ce.ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    if not ce.expected_path(arch, name).exists():
        pytest.fail(f"make-cores.sh produced no {arch}/{name}")
    return ce.load_expected(arch, name)


@pytest.mark.parametrize("arch", ["aarch64", "s390x"])
def test_qemu_core_without_sysroot(ehbt_bin, arch):
    case = fixture_case(arch, "chain")
    core = pathlib.Path(case["core"])
    proc = run_ehbt(ehbt_bin, "core", core)
    lines = warning_lines(proc)
    # qemu writes no NT_SIGINFO: the code is unknown, and not SI_USER.
    notes = subprocess.run(["readelf", "-n", str(core)], capture_output=True, text=True).stdout
    assert "NT_SIGINFO" not in notes
    assert "Signal: SIGSEGV\n" in proc.stdout and "SI_USER" not in proc.stdout
    assert any("no NT_SIGINFO" in line for line in lines), lines
    libc_lines = [line for line in lines if "/libc.so.6, named by the core, was not found" in line]
    assert len(libc_lines) == 1 and libc_lines[0].endswith("(use --sysroot DIR)"), lines
    assert len(lines) == len(set(lines)), "a warning said twice"

    doc = json.loads(run_ehbt(ehbt_bin, "core", core, "--json").stdout)
    check_warning_shape(doc)
    assert doc["signal"]["code"] is None and doc["signal"]["address"] is None
    assert doc["signal"]["number"] == 11
    missing = [w for w in doc["warnings"] if w["kind"] == "missing_file"]
    assert any(w["path"].endswith("/libc.so.6") and w["option"] == "--sysroot" for w in missing)
    libc = [m for m in doc["modules"] if m["path"].endswith("/libc.so.6")]
    assert libc and libc[0]["file"] is None and libc[0]["build_id_match"] is None
    # The walk ends for want of libc's file (GDB's frames go on into libc and _start), and the
    # stop says so, not only what failed next (aarch64: _start's table needs an sp the
    # frame-pointer steps through libc could not recover).
    crashed = [t for t in doc["threads"] if t["crashing"]][0]
    assert crashed["stop_reason"] != "outermost", crashed
    assert "libc.so.6 not found" in crashed["stop_detail"], crashed["stop_detail"]

    # With the sysroot the files are found; only the missing signal details remain.
    fixed = json.loads(run_ehbt(ehbt_bin, "core", core, "--json", "--sysroot",
                                case["sysroot"]).stdout)
    assert kinds(fixed) == ["no_signal_info"]


# ---------------------------------------------------------------------------- truncated cores

def test_core_cut_to_2000_bytes_is_refused(ehbt_bin, crash, tmp_path):
    data = crash["core"].read_bytes()
    notes, _ = layout(data)
    assert notes[0] + notes[1] > 2000  # the premise: the notes end past the cut
    cut = tmp_path / "cut.core"
    cut.write_bytes(data[:2000])
    for args in ([], ["--json"]):
        proc = run_ehbt(ehbt_bin, "core", cut, *args)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        [line] = proc.stderr.splitlines()
        assert line.startswith(f"ehbt: {cut}: truncated core: 2000 of ") and "notes" in line


def cut_points(data):
    notes, loads = layout(data)
    off, size = loads[len(loads) // 2]
    return {
        "100k": 100 * 1024,
        "just the notes": notes[0] + notes[1],
        "half a segment": off + size // 2,
    }


@pytest.mark.parametrize("where", ["100k", "just the notes", "half a segment"])
def test_truncated_core_gives_a_trace_and_says_so(ehbt_bin, crash, tmp_path, where):
    data = crash["core"].read_bytes()
    n = cut_points(data)[where]
    assert n < len(data)
    cut = tmp_path / "cut.core"
    cut.write_bytes(data[:n])
    proc = run_ehbt(ehbt_bin, "core", cut)
    assert proc.returncode in (0, 1), proc.stderr
    lines = warning_lines(proc)
    assert [line for line in lines if "truncated" in line] == [
        next(line for line in lines if line.startswith(
            f"warning: the core is truncated: {n} of {len(data)} bytes"))], lines
    assert proc.stdout.startswith(f"Core: {cut}\n")
    doc = json.loads(run_ehbt(ehbt_bin, "core", cut, "--json").stdout)
    check_warning_shape(doc)
    trunc = [w for w in doc["warnings"] if w["kind"] == "truncated_core"]
    assert len(trunc) == 1 and trunc[0]["path"] == str(cut) and trunc[0]["option"] is None
    assert len(doc["threads"][0]["frames"]) >= 1


def test_core_without_siginfo_invents_no_code(ehbt_bin, crash, tmp_path):
    """NT_SIGINFO renamed to an unknown note type: the number still comes from pr_cursig."""
    data = bytearray(crash["core"].read_bytes())
    (noff, nsize), _ = layout(data)
    off, renamed = noff, 0
    while off + 12 <= noff + nsize:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        if ntype == NT_SIGINFO:
            struct.pack_into("<I", data, off + 8, 0x7fff0001)
            renamed += 1
        off += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    assert renamed == 1
    core = tmp_path / "nosiginfo.core"
    core.write_bytes(bytes(data))
    proc = run_ehbt(ehbt_bin, "core", core)
    assert "Signal: SIGSEGV\n" in proc.stdout
    assert "SI_USER" not in proc.stdout and "SEGV_MAPERR" not in proc.stdout
    assert warning_lines(proc) == ["warning: the core has no NT_SIGINFO note: the signal's code "
                                   "and fault address are unknown"]
    doc = json.loads(run_ehbt(ehbt_bin, "core", core, "--json").stdout)
    assert doc["signal"] == {"number": 11, "name": "SIGSEGV", "code": None, "address": None}
    assert kinds(doc) == ["no_signal_info"]


# ------------------------------------------------------------------------------ Python API

def test_python_warnings(build_dir, tmp_path):
    core, exe = make_crash(tmp_path / "py")
    exe.unlink()
    env = dict(os.environ, PYTHONPATH=str(build_dir / "engine" / "python"))
    script = (
        "import ehbt, json, sys\n"
        "t = ehbt.open_core(sys.argv[1])\n"
        "ws = t.warnings\n"
        "assert all(isinstance(w, ehbt.Warning) for w in ws)\n"
        "print(json.dumps([[w.kind, w.message, w.path, w.option, str(w), w.as_dict()]"
        " for w in ws]))\n")
    out = subprocess.run(["/usr/bin/python3", "-c", script, str(core)], capture_output=True,
                         text=True, env=env, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    [[kind, message, path, option, line, as_dict]] = json.loads(out.stdout)
    assert (kind, path, option) == ("missing_file", str(exe), "--exe")
    assert line == message + " (use --exe PATH)"
    assert as_dict == {"kind": kind, "message": message, "path": path, "option": option}
