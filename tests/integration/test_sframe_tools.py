# SPDX-License-Identifier: Apache-2.0
"""`ehbt sframe dump|check|convert` on the real-toolchain fixtures (tests/fixtures/sframe/, made
by scripts/make-sframe-fixtures.sh with Debian trixie's and sid's binutils) and on the system's
libraries.

Expected values come from outside ehbt: the text binutils' own `objdump --sframe` printed for
each fixture when it was built (committed next to it), `readelf` on the same files, the DWARF
CFI as readelf decodes it, the fixture programs' source (call structure), and hand-placed byte
corruptions."""
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "sframe"
TIMEOUT = 300

# DWARF numbers of the stack and frame pointers objdump calls "sp" and "fp".
SP_FP = {"x86_64": (7, 6), "aarch64": (31, 29), "s390x": (15, 11)}
ABI = {"x86_64": "amd64", "aarch64": "aarch64", "s390x": "s390x"}
# SFrame version each chroot's assembler and linker write.
VERSION = {"trixie": 2, "sid": 3}


def fixture_sets():
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "src")


def fixture_binaries():
    out = []
    for d in fixture_sets():
        for p in sorted((FIXTURES / d).iterdir()):
            if p.suffix == "" and p.is_file():
                out.append(f"{d}/{p.name}")
    return out


def arch_of(fixture):
    return fixture.split("/")[0].split("-", 1)[1]


def run_ehbt(ehbt_bin, *args, **kw):
    return subprocess.run([str(ehbt_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, **kw)


def test_fixture_inventory():
    # Four sets (V2 x86-64 from trixie, V3 from sid for three architectures), each with the
    # programs the build script compiles, each with its objdump text.
    assert fixture_sets() == ["sid-aarch64", "sid-s390x", "sid-x86_64", "trixie-x86_64"]
    common = {"chain", "drap", "leaf", "noreturn", "plt", "signal"}
    extra = {"sid-aarch64": {"pacret"}, "sid-s390x": {"backchain"}}
    for d in fixture_sets():
        names = {p.name for p in (FIXTURES / d).iterdir() if p.suffix == ""}
        assert names == common | extra.get(d, set()), d
        for n in names:
            assert (FIXTURES / d / f"{n}.objdump-sframe.txt").is_file()
    versions = (FIXTURES / "VERSIONS").read_text()
    assert re.search(r"^binutils\s+2\.44", versions, re.M)
    assert re.search(r"^binutils\s+2\.47\.50", versions, re.M)


# --- objdump --sframe text, parsed ---------------------------------------------------------

ROW = re.compile(r"^\s+([0-9a-f]{16})\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
FUNC = re.compile(r"^\s+func idx \[(\d+)\]: pc = 0x([0-9a-f]+), size = (\d+) bytes(.*)$")
LOCATION = re.compile(r"^(\()?(sp|fp|r\d+)([+-]\d+)(\))?$")


def parse_register(name, arch):
    sp, fp = SP_FP[arch]
    return {"sp": sp, "fp": fp}.get(name) if name in ("sp", "fp") else int(name[1:])


def parse_recovery(token, arch, is_ra, flex):
    """objdump's FP/RA column as the ehbt-sframe/1 {kind, reg, offset}."""
    none = {"kind": "untracked", "reg": 0, "offset": 0}
    if token in ("u", "f"):  # f: amd64's RA at the fixed CFA offset - nothing recorded
        return none
    if token == "U":
        # In a default FDE, `U` is the FRE without data words: the outermost frame, RA
        # undefined. In a flexible (V3 "F") FDE objdump prints `U` for an RA padding data
        # word, which the V3 format defines as "no RA tracking information" (the kernel's V3
        # reader: "a single padding data word of zero (e.g. to represent FP without RA
        # tracking information)"): the RA stays where the ABI puts it, as with `f`/`u`.
        assert is_ra
        return none if flex else {"kind": "undefined", "reg": 0, "offset": 0}
    m = re.fullmatch(r"c([+-]\d+)", token)
    if m:
        return {"kind": "at_cfa", "reg": 0, "offset": int(m.group(1))}
    m = LOCATION.match(token)
    assert m and bool(m.group(1)) == bool(m.group(4)), token
    kind = "at_register" if m.group(1) else "register"
    return {"kind": kind, "reg": parse_register(m.group(2), arch), "offset": int(m.group(3))}


def parse_objdump_sframe(text, arch):
    doc = {"version": None, "flags": [], "fixed_fp_offset": 0, "fixed_ra_offset": 0,
           "num_fdes": None, "functions": []}
    in_flags = False
    fn = None
    for line in text.splitlines():
        if m := re.match(r"^\s+Version: SFRAME_VERSION_(\d+)$", line):
            doc["version"] = int(m.group(1))
            continue
        if m := re.match(r"^\s+Flags: (.*)$", line):
            in_flags = True
            line = m.group(1)
        if in_flags:
            m = re.match(r"^\s*SFRAME_F_(\w+),?$", line)
            if m:
                doc["flags"].append(m.group(1))
                in_flags = line.endswith(",")
                continue
            in_flags = False
        if m := re.match(r"^\s+CFA fixed (FP|RA) offset: (-?\d+)$", line):
            doc[f"fixed_{m.group(1).lower()}_offset"] = int(m.group(2))
        elif m := re.match(r"^\s+Num FDEs: (\d+)$", line):
            doc["num_fdes"] = int(m.group(1))
        elif m := FUNC.match(line):
            rest = m.group(4)
            fn = {"start": int(m.group(2), 16), "size": int(m.group(3)),
                  "type": "flex" if 'attr = "F"' in rest else "default",
                  "pauth_key": "b" if "pauth = B key" in rest else "a",
                  "pc_type": "increment", "rows": []}
            doc["functions"].append(fn)
        elif "STARTPC[m]" in line:
            fn["pc_type"] = "mask"
        elif m := ROW.match(line):
            pc, cfa, fp, ra = m.groups()
            start = int(pc, 16)
            # PCMASK rows print the offset inside the repeated block.
            start = fn["start"] + start if fn["pc_type"] == "mask" else start
            c = LOCATION.match(cfa)
            assert c and bool(c.group(1)) == bool(c.group(4)), cfa
            mangled = ra.endswith("[s]")
            ra = ra.removesuffix("[s]")
            flex = fn["type"] == "flex"
            fn["rows"].append({
                "pc": start,
                "cfa": {"reg": parse_register(c.group(2), arch), "offset": int(c.group(3)),
                        "deref": bool(c.group(1))},
                "fp": parse_recovery(fp, arch, False, flex),
                "ra": parse_recovery(ra, arch, True, flex),
                "ra_mangled": mangled})
    return doc


def normalise_ehbt_function(f):
    return {"start": int(f["start"], 16), "size": f["size"], "type": f["type"],
            "pauth_key": f["pauth_key"], "pc_type": f["pc_type"],
            "rows": [dict(r, pc=int(r["pc"], 16)) for r in f["rows"]]}


@pytest.mark.parametrize("fixture", fixture_binaries())
def test_dump_equals_objdump(ehbt_bin, fixture):
    path = FIXTURES / fixture
    arch = arch_of(fixture)
    expected = parse_objdump_sframe((FIXTURES / f"{fixture}.objdump-sframe.txt").read_text(),
                                    arch)
    proc = run_ehbt(ehbt_bin, "sframe", "dump", path, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "ehbt-sframe/1" and doc["file"] == str(path)
    assert doc["errors"] == []
    assert doc["version"] == expected["version"] == VERSION[fixture.split("-")[0]]
    assert doc["flags"] == expected["flags"]
    assert doc["abi"] == ABI[arch]
    assert doc["fixed_fp_offset"] == expected["fixed_fp_offset"]
    assert doc["fixed_ra_offset"] == expected["fixed_ra_offset"]
    assert len(doc["functions"]) == expected["num_fdes"] == len(expected["functions"])
    got = [normalise_ehbt_function(f) for f in doc["functions"]]
    for g, e in zip(got, expected["functions"]):
        assert g == e, f"function at {hex(e['start'])}"
    # The section address is where readelf puts .sframe.
    sections = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    m = re.search(r"\] \.sframe\s+\S+\s+([0-9a-f]+) ", sections)
    assert m and int(doc["section_addr"], 16) == int(m.group(1), 16)


@pytest.mark.parametrize("fixture", fixture_binaries())
def test_dump_text_follows_objdump(ehbt_bin, fixture):
    # The text dump uses objdump's notation: its header lines, each function's line up to
    # the size, and every row line are objdump's, token for token. The one deliberate
    # difference: objdump prints `U` for a flexible FDE's RA padding word, ehbt the meaning
    # (no RA information: `f` on amd64, `u` elsewhere; see parse_recovery).
    proc = run_ehbt(ehbt_bin, "sframe", "dump", FIXTURES / fixture)
    assert proc.returncode == 0, proc.stderr
    objdump = (FIXTURES / f"{fixture}.objdump-sframe.txt").read_text()
    untracked_ra = "f" if arch_of(fixture) == "x86_64" else "u"

    def lines(text, ours):
        out, flex = [], False
        for line in text.splitlines():
            if m := FUNC.match(line):
                flex = 'attr = "F"' in m.group(4)
                out.append(line.split(",")[0] + "," + line.split(",")[1])
            elif ROW.match(line):
                tokens = line.split()
                if flex and not ours and tokens[3] == "U":
                    tokens[3] = untracked_ra
                out.append(tokens)
            elif re.match(r"^\s+(Version|CFA fixed|Num FDEs|Num FREs):", line):
                out.append(line.strip())
        return out

    assert lines(proc.stdout, True) == lines(objdump, False)


def test_flex_and_pac_fixtures_have_what_they_were_built_for():
    # Guards the fixtures themselves: the V3 DRAP function is a flexible FDE with a
    # dereferenced CFA, gas 2.44 (V2) had to leave it out, pac-ret set the mangled-RA bit and
    # the B-key function says so, and the x86-64 PLTs are PCMASK FDEs.
    sid = parse_objdump_sframe((FIXTURES / "sid-x86_64/drap.objdump-sframe.txt").read_text(),
                               "x86_64")
    assert any(f["type"] == "flex" and any(r["cfa"]["deref"] for r in f["rows"])
               for f in sid["functions"])
    msgs = (FIXTURES / "trixie-x86_64/compiler-messages.txt").read_text()
    assert "skipping SFrame FDE; non-SP/FP register 10 in .cfi_def_cfa" in msgs
    pac = parse_objdump_sframe((FIXTURES / "sid-aarch64/pacret.objdump-sframe.txt").read_text(),
                               "aarch64")
    assert any(r["ra_mangled"] for f in pac["functions"] for r in f["rows"])
    assert [f["pauth_key"] for f in pac["functions"]].count("b") == 1
    plt = parse_objdump_sframe((FIXTURES / "sid-x86_64/plt.objdump-sframe.txt").read_text(),
                               "x86_64")
    assert any(f["pc_type"] == "mask" for f in plt["functions"])


# --- check ---------------------------------------------------------------------------------

def section_addr(path, name):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    m = re.search(r"\] " + re.escape(name) + r"\s+\S+\s+([0-9a-f]+) ", out)
    return int(m.group(1), 16) if m else None


def eh_frame_ranges(path):
    out = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True,
                         text=True).stdout
    return [(int(a, 16), int(b, 16)) for a, b in re.findall(r"pc=([0-9a-f]+)\.\.([0-9a-f]+)", out)]


def expected_check(fixture):
    """The disagreements `ehbt sframe check` must find in a fixture, as (pc, what) pairs."""
    path = FIXTURES / fixture
    if arch_of(fixture) == "x86_64":
        # ld's SFrame for .plt.got (the 8-byte `jmp *GOT` stubs used for functions whose
        # address is taken, here __cxa_finalize) is a PCMASK FDE with the single row
        # CFA = sp+16, copied from the pltN template (which pushes the relocation index).
        # A .plt.got stub pushes nothing: on entry the return address is at sp, so the
        # CFA is sp+8, which is what ld's .eh_frame for .plt.got says (the CIE's rule,
        # no instructions). The .sframe is wrong here; the same in binutils 2.44 and
        # 2.47.50.
        plt_got = section_addr(path, ".plt.got")
        assert plt_got is not None
        return {(plt_got, "CFA: sframe sp+16, eh_frame sp+8")}
    # aarch64 and s390x: gas and ld agree with the CFI everywhere they emit SFrame.
    return set()


def plt_labels(path):
    """{address: "name@plt"}: objdump's own labels for the PLT stubs of a file."""
    out = subprocess.run(["objdump", "-d", "-j", ".plt", "-j", ".plt.got", "-j", ".plt.sec",
                          str(path)], capture_output=True, text=True).stdout
    return {int(m.group(1), 16): m.group(2)
            for m in re.finditer(r"^([0-9a-f]+) <([\w.]+@plt)>:", out, re.M)}


def sframe_starts(fixture):
    doc = parse_objdump_sframe((FIXTURES / f"{fixture}.objdump-sframe.txt").read_text(),
                               arch_of(fixture))
    return {f["start"] for f in doc["functions"]}


@pytest.mark.parametrize("fixture", fixture_binaries())
def test_check_finds_exactly_the_known_disagreements(ehbt_bin, fixture):
    path = FIXTURES / fixture
    proc = run_ehbt(ehbt_bin, "sframe", "check", path, "--json")
    doc = json.loads(proc.stdout)
    found = {(int(d["pc"], 16), d["what"]) for d in doc["disagreements"]}
    expected = expected_check(fixture)
    assert found == expected
    assert proc.returncode == (1 if expected else 0), proc.stderr
    assert doc["errors"] == []
    # Functions that have .eh_frame but no SFrame (per readelf and objdump, not ehbt):
    #  - _start (glibc's crt1.o / Scrt1.o: hand-written assembly, no --gsframe) everywhere;
    #  - aarch64: also the crtbeginS.o functions (deregister_tm_clones, register_tm_clones,
    #    __do_global_dtors_aux, frame_dummy), compiled by Debian without --gsframe (on x86-64
    #    crtstuff has no unwind tables at all);
    #  - s390x: also ld's .eh_frame for .plt (ld writes no SFrame for s390x PLTs);
    #  - trixie x86-64 drap: drap_realigned, which gas 2.44 skipped ("non-SP/FP register 10
    #    in .cfi_def_cfa", see compiler-messages.txt): V2 cannot express a DRAP CFA.
    starts = sframe_starts(fixture)
    eh_only = {a for a, _ in eh_frame_ranges(path) if a not in starts}
    assert doc["eh_frame_only"] == len(eh_only)
    # Every SFrame function has an FDE (ld's x86-64 .plt/.plt.got included).
    assert doc["sframe_only"] == 0
    assert doc["functions"] == len(starts)
    assert doc["rows"] >= sum(1 for _ in starts)

    text = run_ehbt(ehbt_bin, "sframe", "check", path)
    assert text.returncode == proc.returncode
    lines = text.stdout.splitlines()
    assert len(lines) == len(expected) + 1
    labels = plt_labels(path)
    for (pc, what), line in zip(sorted(expected), lines):
        # The disagreements lie in PLT stubs, which no symbol table names: ehbt names them
        # NAME@plt as objdump and GDB do (else the function's address would name it).
        assert line == f"{labels.get(pc, hex(pc))}+0x0 ({hex(pc)}): {what}"
    assert lines[-1] == (f"{path}: {doc['functions']} functions, {doc['rows']} rows compared, "
                         f"{len(expected)} disagreements, {doc['eh_frame_only']} eh_frame-only "
                         f"functions, 0 sframe-only functions")


def test_check_and_dump_without_sframe_exit_2(ehbt_bin, tmp_path):
    for sub in ("dump", "check"):
        proc = run_ehbt(ehbt_bin, "sframe", sub, "/bin/true")
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert proc.stderr == "ehbt: /bin/true: no .sframe section\n"
    # A file with .sframe but without .eh_frame: check cannot compare.
    stripped = tmp_path / "no-eh-frame"
    subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section",
                    ".eh_frame_hdr", FIXTURES / "sid-x86_64/leaf", stripped], check=True,
                   capture_output=True)
    proc = run_ehbt(ehbt_bin, "sframe", "check", stripped)
    assert proc.returncode == 2 and "no .eh_frame" in proc.stderr, proc.stderr


def test_usage_and_help(ehbt_bin):
    for args in (["sframe"], ["sframe", "frobnicate"], ["sframe", "dump"],
                 ["sframe", "dump", "a", "b"], ["sframe", "convert", "x", "--version", "4"],
                 ["sframe", "check", "--nope", "x"]):
        proc = run_ehbt(ehbt_bin, *args)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("ehbt sframe: ") and proc.stderr.count("\n") == 1, args
    for args in (["sframe", "--help"], ["sframe", "dump", "--help"], ["sframe", "convert", "-h"]):
        proc = run_ehbt(ehbt_bin, *args)
        assert proc.returncode == 0
        for word in ("ehbt sframe dump FILE", "ehbt sframe convert IN", "ehbt sframe check FILE",
                     "ehbt-sframe/1", "ehbt-sframe-check/1", "ehbt-sframe-convert/1",
                     "PT_GNU_SFRAME"):
            assert word in proc.stdout, word
    general = run_ehbt(ehbt_bin, "--help").stdout
    assert "ehbt sframe dump FILE" in general and "\n  sframe  " in general
    assert run_ehbt(ehbt_bin, "help", "sframe").stdout == general


# --- convert -------------------------------------------------------------------------------

LIBS = [pathlib.Path("/lib/x86_64-linux-gnu/libc.so.6"),
        pathlib.Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")]


def eh_frame_fde_count(path):
    return len(eh_frame_ranges(path))


def assert_fdes_accounted_for(lib, starts, left_out):
    """Every FDE readelf lists became SFrame (one function, or several: the .plt FDE splits
    into PLT0 and a PCMASK function for the pltN entries, as ld does it) or was reported as
    left out - never both; and every SFrame function lies inside an FDE."""
    ranges = sorted(eh_frame_ranges(lib))
    covered = set()
    for s in starts:
        fde = [a for a, b in ranges if a <= s < b]
        assert len(fde) == 1, hex(s)
        covered.add(fde[0])
    assert not covered & left_out
    assert covered | left_out == {a for a, _ in ranges}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("lib", LIBS, ids=lambda p: p.name)
def test_convert_round_trip(ehbt_bin, tmp_path, lib, version):
    out = tmp_path / "out.sframe"
    elf = tmp_path / "copy.so"
    proc = run_ehbt(ehbt_bin, "sframe", "convert", lib, "-o", out, "--version", version,
                    "--elf", elf, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["format"] == "ehbt-sframe-convert/1"
    assert summary["version"] == version and summary["abi"] == "amd64"
    assert summary["output"] == str(out) and summary["elf_output"] == str(elf)
    assert summary["section_addr"] == "0x0"
    assert out.stat().st_size == summary["section_bytes"] > 0
    left_out = {x["function"] for x in summary["left_out"]}
    assert summary["functions_left_out"] == len(left_out)
    assert sum(summary["reasons"].values()) == len(
        {(x["function"], x["why"]) for x in summary["left_out"]})
    fdes = eh_frame_fde_count(lib)
    assert summary["functions_written"] > 0.9 * fdes

    # The copy carries the section: readelf finds it, at address 0, not allocated.
    sections = subprocess.run(["readelf", "-SW", elf], capture_output=True, text=True).stdout
    m = re.search(r"\] \.sframe\s+PROGBITS\s+0+ ([0-9a-f]+) ([0-9a-f]+) ", sections)
    assert m, sections
    assert int(m.group(2), 16) == summary["section_bytes"]
    with open(elf, "rb") as f:
        f.seek(int(m.group(1), 16))
        assert f.read(summary["section_bytes"]) == out.read_bytes()

    dump = run_ehbt(ehbt_bin, "sframe", "dump", elf, "--json")
    assert dump.returncode == 0, dump.stderr
    doc = json.loads(dump.stdout)
    assert doc["version"] == version and doc["errors"] == []
    assert doc["flags"] == ["FDE_SORTED", "FDE_FUNC_START_PCREL"]
    assert len(doc["functions"]) == summary["functions_written"]
    starts = [int(f["start"], 16) for f in doc["functions"]]
    assert starts == sorted(starts)
    assert_fdes_accounted_for(lib, starts, {int(a, 16) for a in left_out})

    check = run_ehbt(ehbt_bin, "sframe", "check", elf, "--json")
    assert check.returncode == 0, check.stdout[-2000:]
    report = json.loads(check.stdout)
    assert report["disagreements"] == [] and report["errors"] == []
    assert report["functions"] == summary["functions_written"]
    assert report["eh_frame_only"] == summary["functions_left_out"]
    assert report["sframe_only"] == 0


def test_convert_text_summary_and_default_output(ehbt_bin, tmp_path):
    lib = LIBS[0]
    proc = run_ehbt(ehbt_bin, "sframe", "convert", lib, "--version", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "libc.so.6.sframe"
    assert out.is_file()
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{lib}: wrote libc.so.6.sframe ({out.stat().st_size} bytes, "
                               "SFrame V2, amd64")
    written = int(re.search(r"functions written:\s+(\d+)", proc.stdout).group(1))
    left = int(re.search(r"functions left out:\s+(\d+)", proc.stdout).group(1))
    # One more function than FDEs: the .plt FDE becomes two SFrame functions.
    assert written + left == eh_frame_fde_count(lib) + 1
    # glibc's longjmp family computes the CFA from a register other than rsp/rbp, which V2
    # cannot say. Each left-out function is listed once, with its symbol when one covers
    # its start (glibc's FDE for __restore_rt starts one byte before the symbol).
    listed = re.findall(r"^    0x[0-9a-f]+( \S+)?: ", proc.stdout, re.M)
    assert len(listed) == left and " __longjmp" in listed


def test_convert_keeps_an_existing_sframe_as_orig(ehbt_bin, tmp_path):
    src = FIXTURES / "sid-x86_64/chain"
    elf = tmp_path / "chain"
    proc = run_ehbt(ehbt_bin, "sframe", "convert", src, "-o", tmp_path / "c.sframe", "--elf",
                    elf)
    assert proc.returncode == 0, proc.stderr
    sections = subprocess.run(["readelf", "-SW", elf], capture_output=True, text=True).stdout
    assert re.search(r"\] \.sframe\.orig ", sections) and re.search(r"\] \.sframe ", sections)
    check = run_ehbt(ehbt_bin, "sframe", "check", elf)
    # The converted section agrees with .eh_frame everywhere (no .plt.got mistake), and
    # covers the functions the assembler's section missed (_start).
    assert check.returncode == 0, check.stdout
    assert " 0 disagreements, 0 eh_frame-only functions" in check.stdout


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("fixture", ["sid-aarch64/pacret", "sid-aarch64/chain",
                                     "sid-s390x/backchain", "sid-s390x/leaf"])
def test_convert_other_architectures(ehbt_bin, tmp_path, fixture, version):
    # Big-endian s390x and aarch64 with signed return addresses: the converted section (its
    # --elf copy made by the cross objcopy) agrees with .eh_frame everywhere, and covers
    # every FDE, crt files included.
    elf = tmp_path / "copy"
    proc = run_ehbt(ehbt_bin, "sframe", "convert", FIXTURES / fixture, "-o", tmp_path / "s",
                    "--version", version, "--elf", elf, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["abi"] == ABI[arch_of(fixture)] and summary["functions_left_out"] == 0
    check = run_ehbt(ehbt_bin, "sframe", "check", elf, "--json")
    assert check.returncode == 0, check.stdout
    report = json.loads(check.stdout)
    assert report["functions"] == summary["functions_written"]
    assert report["eh_frame_only"] == 0 and report["disagreements"] == []
    dump = json.loads(run_ehbt(ehbt_bin, "sframe", "dump", elf, "--json").stdout)
    assert dump["version"] == version
    if fixture == "sid-aarch64/pacret":
        # pac_bkey's CIE says 'B': the converted FDE must say so, and its rows are signed.
        bkey = [f for f in dump["functions"] if f["pauth_key"] == "b"]
        assert len(bkey) == 1 and any(r["ra_mangled"] for r in bkey[0]["rows"])


def test_convert_unusable_inputs(ehbt_bin, tmp_path):
    proc = run_ehbt(ehbt_bin, "sframe", "convert", tmp_path / "missing", "-o", tmp_path / "x")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert not (tmp_path / "x").exists()
    stripped = tmp_path / "no-eh-frame"
    subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section",
                    ".eh_frame_hdr", FIXTURES / "sid-x86_64/leaf", stripped], check=True,
                   capture_output=True)
    proc = run_ehbt(ehbt_bin, "sframe", "convert", stripped, "-o", tmp_path / "y")
    assert proc.returncode == 2 and "no .eh_frame" in proc.stderr


# --- malformed sections --------------------------------------------------------------------

def sframe_section(path):
    """(file offset, size) of .sframe from the ELF64 section headers."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2
    e = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(e + "Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x3a)

    def shdr(i):
        return struct.unpack_from(e + "IIQQQQIIQQ", data, shoff + i * shentsize)

    stroff = shdr(shstrndx)[4]
    for i in range(shnum):
        h = shdr(i)
        name = data[stroff + h[0]:data.index(b"\0", stroff + h[0])]
        if name == b".sframe":
            return h[4], h[5]
    raise AssertionError("no .sframe")


def corrupt(src, dst, edit):
    data = bytearray(src.read_bytes())
    off, size = sframe_section(src)
    section = bytearray(data[off:off + size])
    edit(section)
    data[off:off + size] = section
    dst.write_bytes(bytes(data))
    return dst


# Header layout (V2 and V3): magic u16, version u8, flags u8, abi u8, fixed fp i8, fixed ra
# i8, auxhdr_len u8, num_fdes u32 @8, num_fres u32 @12, fre_len u32 @16, fdeoff u32 @20,
# freoff u32 @24; FDEs follow the 28-byte header. A V2 FDE is 20 bytes: start i32, size
# u32, fre_off u32, num_fres u32, info, rep_size, 2 padding. A V3 index entry is 16 bytes:
# start i64, size u32, fre_off u32; its attributes (num_fres u16, info, info2, rep_size) open
# the function's FRE data.
HDR = 28


def fde_layout(section):
    version = section[2]
    return (20 if version == 2 else 16), struct.unpack_from("<I", section, 8)[0]


MALFORMED = ["trixie-x86_64/chain", "sid-x86_64/chain"]


@pytest.mark.parametrize("fixture", MALFORMED)
def test_flipped_magic_is_unusable(ehbt_bin, tmp_path, fixture):
    def edit(s):
        s[0] ^= 0xff
    bad = corrupt(FIXTURES / fixture, tmp_path / "bad", edit)
    for sub in ("dump", "check"):
        proc = run_ehbt(ehbt_bin, "sframe", sub, bad, "--json")
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == f"ehbt: {bad}: .sframe: bad_magic at section offset 0x0\n"


@pytest.mark.parametrize("fixture", MALFORMED)
def test_header_counts_beyond_the_section_are_unusable(ehbt_bin, tmp_path, fixture):
    # num_fres (header offset 0xc) claims 65536 FREs, more than fre_len bytes can hold (an
    # FRE is at least 2 bytes); or fre_len (0x10) is cut to 10 bytes, shorter than the FREs
    # the FDEs point at. Either way the header no longer describes the section: rejected
    # before any function is read, the reason on stderr.
    cases = [(12, 0x10000, ("0xc",)), (16, 10, ("0xc", "0x10"))]
    for field, value, wheres in cases:
        def edit(s):
            struct.pack_into("<I", s, field, value)
        bad = corrupt(FIXTURES / fixture, tmp_path / "bad", edit)
        for sub in ("dump", "check"):
            proc = run_ehbt(ehbt_bin, "sframe", sub, bad)
            assert proc.returncode == 2 and proc.stdout == "", (field, proc.stderr)
            assert proc.stderr in [f"ehbt: {bad}: .sframe: bad_header at section offset {w}\n"
                                   for w in wheres], proc.stderr


@pytest.mark.parametrize("fixture", MALFORMED)
def test_function_claiming_more_fres_than_the_header_counts_is_refused(ehbt_bin, tmp_path,
                                                                        fixture):
    # The last FDE (index n-1) claims 200 FREs, more than the header's num_fres leaves for it
    # (its FRE range would also run past the section). A strict reader refuses the section
    # whole at the header's num_fres field (offset 12): dump and check say so in one line and
    # exit 2, the section being unusable. (A function whose FREs run out while the header's
    # count agrees fails alone: tests/unit/sframe_malformed_test.cpp, FreStartsAndBounds.)
    def edit(s):
        size, n = fde_layout(s)
        fde = HDR + size * (n - 1)
        if s[2] == 2:
            struct.pack_into("<I", s, fde + 12, 200)
        else:
            freoff = struct.unpack_from("<I", s, 24)[0]
            fre_off = struct.unpack_from("<I", s, fde + 12)[0]
            struct.pack_into("<H", s, HDR + freoff + fre_off, 200)
    bad = corrupt(FIXTURES / fixture, tmp_path / "bad", edit)
    for args in (["dump", bad, "--json"], ["dump", bad], ["check", bad, "--json"]):
        proc = run_ehbt(ehbt_bin, "sframe", *args)
        assert proc.returncode == 2, (args, proc.returncode, proc.stdout[:300])
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and "bad_header at section offset 0xc" in lines[0], proc.stderr


@pytest.mark.parametrize("fixture", MALFORMED)
def test_unsorted_fdes_are_reported(ehbt_bin, tmp_path, fixture):
    # Swap the index entries of functions 4 and 5 (0x10a0 and 0x11e0, 0x140 apart). In
    # trixie's V2 the start fields are offsets from the section start, in V3 from the field
    # itself (so each moves by one entry size, 20 or 16 bytes): either way entry 5 now names
    # a function below entry 4's.
    def edit(s):
        size, _ = fde_layout(s)
        a, b = HDR + 4 * size, HDR + 5 * size
        s[a:a + size], s[b:b + size] = s[b:b + size], s[a:a + size]
    bad = corrupt(FIXTURES / fixture, tmp_path / "bad", edit)
    proc = run_ehbt(ehbt_bin, "sframe", "dump", bad, "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    size = 20 if doc["version"] == 2 else 16
    assert {"code": "unsorted", "where": hex(HDR + 5 * size), "function": 5} in doc["errors"]
    assert all(e["code"] == "unsorted" for e in doc["errors"]), doc["errors"]
    check = run_ehbt(ehbt_bin, "sframe", "check", bad, "--json")
    assert check.returncode == 1
    assert {"code": "unsorted", "where": hex(HDR + 5 * size)} in json.loads(check.stdout)["errors"]


# --- live ----------------------------------------------------------------------------------

def start_blocked(exe, *args):
    """Starts a fixture program and waits until it sleeps in its own pause/ppoll syscall."""
    proc = subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line == f"ready {proc.pid}\n", line
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stat = pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        syscall = pathlib.Path(f"/proc/{proc.pid}/syscall").read_text().split()
        if stat[0] == "S" and syscall[0] == "34":  # __NR_pause on x86-64
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("fixture never blocked")


def frames_of(ehbt_bin, pid, source):
    proc = run_ehbt(ehbt_bin, "pid", pid, "--source", source, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    thread = json.loads(proc.stdout)["threads"][0]
    return thread, [(f["symbol"], f["source"]) for f in thread["frames"]]


CHAIN = ["chain_block", "chain_inner", "chain_middle", "chain_outer", "main"]


@pytest.mark.parametrize("suite", ["trixie", "sid"])
def test_live_chain_unwinds_through_sframe(ehbt_bin, suite):
    exe = FIXTURES / f"{suite}-x86_64" / "chain"
    proc = start_blocked(exe)
    try:
        # --source sframe: the program's own frames come from its .sframe; the caller of main
        # (__libc_start_call_main in this host's libc) is found through main's SFrame row,
        # and the walk stops there: Debian 12's glibc has no .sframe.
        thread, frames = frames_of(ehbt_bin, proc.pid, "sframe")
        assert frames == ([("chain_block", "context")] + [(n, "sframe") for n in CHAIN[1:]] +
                          [("__libc_start_call_main", "sframe")]), frames
        assert thread["stop_reason"] == "no_unwind_info", thread
        # --source auto: .eh_frame first, the more precise table, and it covers every
        # function here; a module's own .sframe only where no CFI covers the pc
        # (test_sframe_cores.py::test_auto_takes_sframe_where_no_cfi_covers).
        thread, frames = frames_of(ehbt_bin, proc.pid, "auto")
        assert frames == ([("chain_block", "context")] + [(n, "eh_frame") for n in CHAIN[1:]] +
                          [("__libc_start_call_main", "eh_frame"),
                           ("__libc_start_main", "eh_frame"), ("_start", "eh_frame")]), frames
        assert thread["stop_reason"] == "outermost", thread
    finally:
        proc.kill()
        proc.wait()


def test_live_drap_frame_through_v3_flex_sframe(ehbt_bin):
    # The V3 DRAP function's CFA is *(rbp-16): the flexible FDE gets its caller right.
    proc = start_blocked(FIXTURES / "sid-x86_64" / "drap")
    try:
        thread, frames = frames_of(ehbt_bin, proc.pid, "sframe")
        assert frames[:3] == [("drap_realigned", "context"), ("drap_caller", "sframe"),
                              ("main", "sframe")], frames
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("suite", ["trixie", "sid"])
def test_live_signal_frame(ehbt_bin, suite):
    # sig_work <- sig_handler <- the signal frame (libc's __restore_rt, recognised by its
    # code) <- the function raise() was in when the signal arrived. The libc frames are this
    # host's glibc 2.36 (Debian 12): raise -> __pthread_kill_implementation.
    proc = start_blocked(FIXTURES / f"{suite}-x86_64" / "signal")
    try:
        thread, frames = frames_of(ehbt_bin, proc.pid, "sframe")
        # The signal frame's registers restore the interrupted libc frame; unwinding it needs
        # libc's unwind tables, and libc has no .sframe.
        assert frames == [("sig_work", "context"), ("sig_handler", "sframe"),
                          ("__restore_rt", "sframe"),
                          ("__pthread_kill_implementation", "signal")], frames
        assert thread["stop_reason"] == "no_unwind_info", thread
        thread, frames = frames_of(ehbt_bin, proc.pid, "auto")
        # .eh_frame covers every function: it is taken over the program's .sframe; the
        # interrupted frame is found through the kernel's signal frame.
        assert frames == [("sig_work", "context"), ("sig_handler", "eh_frame"),
                          ("__restore_rt", "eh_frame"),
                          ("__pthread_kill_implementation", "signal"), ("raise", "eh_frame"),
                          ("sig_raiser", "eh_frame"), ("main", "eh_frame"),
                          ("__libc_start_call_main", "eh_frame"),
                          ("__libc_start_main", "eh_frame"), ("_start", "eh_frame")], frames
        assert thread["stop_reason"] == "outermost", thread
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("suite", ["trixie", "sid"])
def test_live_return_address_past_the_function_end(ehbt_bin, suite):
    # nr_check's last instruction is the call to nr_block (noreturn), so the return address
    # in nr_block's frame is the first byte after nr_check's FDE range (readelf): its row,
    # and its name, must be looked up at pc - 1, in SFrame as in .eh_frame.
    exe = FIXTURES / f"{suite}-x86_64" / "noreturn"
    nm = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    nr_check = int(re.search(r"^([0-9a-f]+) T nr_check$", nm, re.M).group(1), 16)
    end = next(b for a, b in eh_frame_ranges(exe) if a == nr_check)
    proc = start_blocked(exe)
    try:
        for source in ("sframe", "auto"):
            proc_out = run_ehbt(ehbt_bin, "pid", proc.pid, "--source", source, "--json")
            thread = json.loads(proc_out.stdout)["threads"][0]
            frames = thread["frames"]
            table = "sframe" if source == "sframe" else "eh_frame"  # auto: CFI first
            assert [(f["symbol"], f["source"]) for f in frames[:4]] == [
                ("nr_block", "context"), ("nr_check", table), ("main", table),
                ("__libc_start_call_main", table)], frames
            assert int(frames[1]["module_offset"], 16) == end
            assert int(frames[1]["symbol_offset"], 16) == end - nr_check
    finally:
        proc.kill()
        proc.wait()
