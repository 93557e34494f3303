# SPDX-License-Identifier: Apache-2.0
"""`ehbt cfi`: every unwind row of the system's libraries evaluates, and the rows agree with
binutils' own interpretation (`readelf --debug-dump=frames-interp`)."""
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess

import pytest

LIBDIR = pathlib.Path("/usr/lib/x86_64-linux-gnu")
BIG_BINARIES = ["/usr/bin/gdb", "/usr/bin/python3.11", "/usr/bin/cmake"]
EM_X86_64 = 62
TIMEOUT = 300


def run_ehbt(ehbt_bin, *args):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT)


def run_readelf(*args):
    # readelf's exit status is 1 on this file set even when it printed everything; judge the
    # output instead.
    out = subprocess.run(["readelf", *map(str, args)], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    assert "Contents of the .eh_frame section" in out, f"readelf {args} printed no .eh_frame"
    return out


def is_x86_64_elf(path):
    with open(path, "rb") as f:
        head = f.read(20)
    # e_ident: magic, ELFCLASS64 (2), ELFDATA2LSB (1); e_machine at offset 18.
    return (len(head) == 20 and head[:4] == b"\x7fELF" and head[4] == 2 and head[5] == 1
            and int.from_bytes(head[18:20], "little") == EM_X86_64)


def system_libraries():
    """Every regular *.so* file under LIBDIR, each inode once; symlinks are never followed."""
    seen = set()
    found = []
    for dirpath, _dirs, files in os.walk(LIBDIR, followlinks=False):
        for name in sorted(files):
            if not re.search(r"\.so(\.|$)", name):
                continue
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            if is_x86_64_elf(path):
                found.append(path)
    return sorted(found)


def check_file(ehbt_bin, path):
    """None when `ehbt cfi --json` finds every row usable, else a description of the failure."""
    proc = run_ehbt(ehbt_bin, "cfi", "--json", path)
    if proc.returncode == 2:
        return f"{path}: unusable (exit 2): {proc.stderr.strip()}"
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        return f"{path}: invalid JSON ({e}), exit {proc.returncode}"
    # A file with neither section exits 1 too: nothing to unwind its code with.
    no_tables = not doc["sections"]["eh_frame"] and not doc["sections"]["debug_frame"]
    expected_rc = 0 if doc["unsupported"] == 0 and doc["malformed"] == 0 and not no_tables else 1
    if proc.returncode != expected_rc:
        return f"{path}: exit {proc.returncode} does not match the counts {doc}"
    if expected_rc == 0:
        return None
    details = "\n    ".join(json.dumps(d) for d in doc["details"][:20])
    return (f"{path}: {doc['unsupported']} unsupported, {doc['malformed']} malformed of "
            f"{doc['rows']} rows in {doc['fdes']} FDEs\n    {details}")


def check_all(ehbt_bin, paths):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: check_file(ehbt_bin, p), paths))
    return [r for r in results if r]


def test_every_system_library_has_only_usable_rows(ehbt_bin):
    libs = system_libraries()
    assert len(libs) > 100, f"only {len(libs)} libraries found under {LIBDIR}"
    failures = check_all(ehbt_bin, libs)
    assert not failures, (f"{len(failures)} of {len(libs)} libraries have unusable rows:\n"
                          + "\n".join(failures))


def test_big_binaries_have_only_usable_rows(ehbt_bin):
    paths = [p for p in BIG_BINARIES if os.path.exists(p)]
    if not paths:
        pytest.skip("none of the big binaries is installed")
    failures = check_all(ehbt_bin, paths)
    assert not failures, "\n".join(failures)


def test_counts_are_plausible_for_libc(ehbt_bin):
    """The FDE count must match readelf's (an independent parser), rows at least one each."""
    libc = LIBDIR / "libc.so.6"
    proc = run_ehbt(ehbt_bin, "cfi", "--json", libc)
    doc = json.loads(proc.stdout)
    readelf = run_readelf("--debug-dump=frames", libc)
    fdes = len(re.findall(r"^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE ", readelf, re.M))
    assert doc["fdes"] == fdes
    assert doc["rows"] >= doc["fdes"]
    assert doc["file"] == str(libc)


# --- agreement with readelf --debug-dump=frames-interp -----------------------------------

FDE_LINE = re.compile(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ "
                      r"pc=([0-9a-f]+)\.\.([0-9a-f]+)$")
ROW_LINE = re.compile(r"^([0-9a-f]{8,16}) (.*)$")


def readelf_fdes(path):
    """The .eh_frame FDEs readelf shows a table for: [{offset, begin, end, rows{loc: (cfa, ra)}}]."""
    out = run_readelf("--wide", "--debug-dump=frames-interp", path)
    fdes = []
    section = None
    current = None
    columns = None
    for line in out.splitlines():
        if line.startswith("Contents of the "):
            section = line.split()[3]
            current = None
            continue
        m = FDE_LINE.match(line)
        if m and section == ".eh_frame":
            current = {"offset": int(m[1], 16), "begin": int(m[2], 16), "end": int(m[3], 16),
                       "rows": {}}
            fdes.append(current)
            columns = None
            continue
        if not line.strip():
            current = None
            continue
        if current is None:
            continue
        if line.strip().startswith("LOC"):
            columns = line.split()
            continue
        m = ROW_LINE.match(line)
        if m and columns:
            # A register rule prints as "r1 (rdx)": one cell, compared by its name.
            values = [re.sub(r"^r\d+ \((.*)\)$", r"\1", cell)
                      for cell in re.findall(r"r\d+ \([^)]*\)|\S+", m[2])]
            row = dict(zip(columns[1:], values))
            # The same LOC twice: the later row is the one in force.
            current["rows"][int(m[1], 16)] = (row.get("CFA"), row.get("ra"))
    return [f for f in fdes if f["rows"]]


def rule_as_readelf(rule):
    kind = rule["rule"]
    if kind in ("undefined", "unspecified"):
        return "u"
    return {
        "same_value": lambda: "s",
        "offset": lambda: f"c{rule['offset']:+d}",
        "val_offset": lambda: f"v{rule['offset']:+d}",
        "register": lambda: rule["reg"],
        "expression": lambda: "exp",
        "val_expression": lambda: "vexp",
    }[kind]()


def cfa_as_readelf(cfa):
    if cfa["rule"] == "reg_offset":
        return f"{cfa['reg']}{cfa['offset']:+d}"
    return {"expression": "exp", "undefined": "u"}[cfa["rule"]]


# x86-64 libraries, and the cross toolchains' C libraries for the other two architectures
# (register names, big-endian s390x).
SAMPLE_LIBS = [str(LIBDIR / lib) for lib in
               ["libc.so.6", "libstdc++.so.6", "libm.so.6", "libz.so.1", "ld-linux-x86-64.so.2"]]
SAMPLE_LIBS += ["/usr/aarch64-linux-gnu/lib/libc.so.6", "/usr/s390x-linux-gnu/lib/libc.so.6"]


@pytest.mark.parametrize("lib", SAMPLE_LIBS)
def test_rows_agree_with_readelf(ehbt_bin, lib):
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) not installed")
    path = pathlib.Path(lib).resolve()
    if not path.exists():
        pytest.skip(f"{lib} not installed")
    fdes = readelf_fdes(path)
    assert len(fdes) > 20, f"readelf shows only {len(fdes)} FDE tables for {path}"
    # A deterministic sample of about 200 FDEs spread over the section.
    sample = fdes[::max(1, len(fdes) // 200)][:200]
    expected = {}
    for fde in sample:
        for loc, cols in fde["rows"].items():
            if fde["begin"] <= loc < fde["end"]:
                expected[loc] = (fde["offset"], cols)
    assert len(expected) >= 200
    pcs = sorted(expected)
    mismatches = []
    for i in range(0, len(pcs), 400):
        batch = pcs[i:i + 400]
        proc = run_ehbt(ehbt_bin, "cfi", path, "--json", "--pc", ",".join(f"{p:x}" for p in batch))
        assert proc.returncode in (0, 1), proc.stderr
        lookups = json.loads(proc.stdout)["lookups"]
        assert [int(x["pc"], 16) for x in lookups] == batch
        for got in lookups:
            pc = int(got["pc"], 16)
            fde_offset, (cfa, ra) = expected[pc]
            if got["error"] is not None:
                mismatches.append(f"{pc:#x}: ehbt found no row ({got['error']})")
                continue
            mine = (int(got["fde_offset"], 16), int(got["loc"], 16),
                    cfa_as_readelf(got["cfa"]), rule_as_readelf(got["registers"]["ra"]))
            theirs = (fde_offset, pc, cfa, ra if ra is not None else "u")
            if mine != theirs:
                mismatches.append(f"{pc:#x}: ehbt (fde, loc, cfa, ra) = {mine}, "
                                  f"readelf {theirs}")
    assert not mismatches, (f"{len(mismatches)} of {len(pcs)} rows of {path} differ:\n"
                            + "\n".join(mismatches[:40]))


# --- what the counts mean, on CFI written by hand ----------------------------------------

# Two functions whose CFI the engine must refuse: DW_CFA_def_cfa_expression with DW_OP_fbreg
# (0x91, valid DWARF that needs a debugger's frame base: unsupported) from f_unsup+1 on, and
# the undefined CFA opcode 0x3e in f_bad (malformed). f_good is ordinary.
HAND_CFI = r"""
    .text
    .globl f_good, f_unsup, f_bad
f_good:
    .cfi_startproc
    push %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    pop %rbp
    .cfi_def_cfa_offset 8
    ret
    .cfi_endproc
f_unsup:
    .cfi_startproc
    nop
    .cfi_escape 0x0f, 0x02, 0x91, 0x00
    nop
    ret
    .cfi_endproc
f_bad:
    .cfi_startproc
    nop
    .cfi_escape 0x3e
    nop
    ret
    .cfi_endproc
"""


@pytest.fixture(scope="module")
def hand_cfi_lib(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("cfi")
    (d / "hand.s").write_text(HAND_CFI)
    lib = d / "libhand.so"
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", lib, d / "hand.s"], check=True)
    nm = subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout
    syms = {parts[2]: int(parts[0], 16) for parts in (l.split() for l in nm.splitlines())
            if len(parts) == 3}
    return lib, syms


def test_hand_written_cfi_is_counted(ehbt_bin, hand_cfi_lib):
    lib, syms = hand_cfi_lib
    proc = run_ehbt(ehbt_bin, "cfi", "--json", lib)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["fdes"] == 3
    assert doc["unsupported"] == 1
    assert doc["malformed"] == 1
    by_kind = {d["kind"]: d for d in doc["details"]}
    assert set(by_kind) == {"unsupported", "malformed"}
    assert int(by_kind["unsupported"]["pc"], 16) == syms["f_unsup"] + 1
    assert by_kind["unsupported"]["what"] == "cfa"
    assert by_kind["unsupported"]["section"] == "eh_frame"
    assert by_kind["malformed"]["fde_offset"] is not None
    assert int(by_kind["malformed"]["pc"], 16) == syms["f_bad"] + 1
    assert by_kind["malformed"]["what"] == "row"


def test_text_summary_and_pc_lookup(ehbt_bin, hand_cfi_lib):
    lib, syms = hand_cfi_lib
    proc = run_ehbt(ehbt_bin, "cfi", lib)
    assert proc.returncode == 1
    assert f"FDEs: 3  rows:" in proc.stdout
    assert "unsupported: 1  malformed: 1" in proc.stdout

    good = syms["f_good"]
    proc = run_ehbt(ehbt_bin, "cfi", lib, "--pc", f"{good + 1:#x}")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2].split() == ["LOC", "CFA", "rbp", "ra"]
    assert lines[-1].split() == [f"{good + 1:016x}", "rsp+16", "c-16", "c-8"]

    proc = run_ehbt(ehbt_bin, "cfi", lib, "--json", "--pc", f"{good:x},{syms['f_unsup'] + 1:x},0")
    assert proc.returncode == 1  # pc 0 has no row
    first, second, third = json.loads(proc.stdout)["lookups"]
    assert first["cfa"] == {"rule": "reg_offset", "reg": "rsp", "offset": 8}
    assert first["registers"] == {"ra": {"rule": "offset", "offset": -8}}
    assert second["cfa"] == {"rule": "expression", "expr": "9100"}
    assert third["error"] is not None


def test_unusable_files_and_usage(ehbt_bin, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not an ELF file\n")
    for args in (["cfi", text], ["cfi", tmp_path / "missing.so"]):
        proc = run_ehbt(ehbt_bin, *args)
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1
        assert proc.stderr.startswith(f"ehbt: {args[1]}: ")
    for args in (["cfi"], ["cfi", text, "--pc", "xyz"], ["cfi", text, "--bogus"],
                 ["cfi", text, text]):
        proc = run_ehbt(ehbt_bin, *args)
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "usage: ehbt cfi" in proc.stderr
