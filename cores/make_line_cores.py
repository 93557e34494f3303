#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fixture cores for source lines and inlined frames (#28).

    make_line_cores.py [x86_64|aarch64|all]... [--only NAME,...] [-j N]

The same machinery, output layout and expected format as make_cores.py (ehbt-expected/1 in
cores/out/<arch>/, or under EHBT_CORES_OUT): GDB with full debug info records every thread,
and since #28 cores/gdb_expect.py keeps GDB's source line of each physical frame and the
inline frames GDB shows above it (`location`, `inlined`). A case whose crashing thread does
not show its inlined calls in GDB fails its check. See cores/README.md, "Source lines".

Cases (programs/inline.c + inline_lto.c + inline_steps.h, programs/inline_cxx.cc):
  inline        C, -O2 -g -flto (DWARF 5, gcc 12's default): the crash three inlined calls
                deep, a caller inlined from a header, two inlined from another file by LTO
  inline4       the same with -gdwarf-4
  inlinecxx     C++: a class template's member and a function template taking a lambda,
                inlined; demangled names
  inlinesplit   `inline`, stripped, its debug file only in a debug directory
                (<dir>/.build-id/xx/rest.debug, `debug_dir` in the expected file: --debug-dir)
                and named by .gnu_debuglink
  inlinedwz     `inline`, stripped, its debug file processed by `dwz -m` together with a twin
                build's (as Debian's -dbgsym packages are): the shared DIEs (fx_null_write's
                abstract instance among them) live in the common file its .gnu_debugaltlink
                names, installed under the debug directory by its own build-id
  inlinerust    Rust (programs/rust_inline.rs + rust_inline_steps.rs), Debian's rustc
                (/usr/bin/rustc, not a rustup one), -C opt-level=2 -C debuginfo=2: a null
                write three #[inline(always)] calls deep (the last from the other file, with
                core::ptr::write_volatile inlined into it), a caller inlined at the next level;
                std's own frames (statically linked, with Debian's debug info) inlined too.
                x86-64 only: Debian has no aarch64 Rust std without a foreign dpkg architecture
The expected frames for the split cases come from GDB on the unstripped copy.
"""

import importlib.util
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_make_cores():
    spec = importlib.util.spec_from_file_location("make_cores", os.path.join(HERE,
                                                                              "make_cores.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MC = _load_make_cores()
ARCHES = ("x86_64", "aarch64")
SOURCES = ["inline.c", "inline_lto.c"]
LTO = ["-flto"]
CHAIN = ["fx_inline_crash", "fx_inline_outer", "main"]
# GDB's frames, inlined ones included, youngest first (the source defines them). On x86-64
# GDB shows fx_null_write (fixture.h) above them too; on aarch64 gcc gives the faulting store
# fx_inline_deepest's line, so GDB starts there (the expected frames are GDB's either way).
INLINE_CHAIN = ["fx_inline_deepest", "fx_inline_middle", "fx_inline_crash",
                "fx_inline_step", "fx_inline_outer", "fx_lto_inner", "fx_lto_bridge", "main"]
CXX_CHAIN = ["fx_cxx_crash", "fx_cxx_outer<short>", "main"]
CXX_INLINE_CHAIN = ["fx_null_write", "fx::Box<long>::poke", "operator()",
                    "fx::apply<fx_cxx_crash(int)::<lambda(int)> >", "fx_cxx_crash"]
RUST_CHAIN = ["rust_inline::fx_rust_crash", "rust_inline::fx_rust_outer", "rust_inline::main"]
RUST_INLINE_CHAIN = ["core::ptr::write_volatile<u32>", "rust_inline::steps::fx_rust_store",
                     "rust_inline::fx_rust_deepest", "rust_inline::fx_rust_middle",
                     "rust_inline::fx_rust_crash", "rust_inline::steps::fx_rust_step",
                     "rust_inline::fx_rust_outer", "rust_inline::main"]
RUST_INLINED = ["fx_rust_store", "fx_rust_deepest", "fx_rust_middle", "fx_rust_step"]
RUST_NOINLINE = ["fx_rust_crash", "fx_rust_outer"]


def debug_dir_of(arch, exe):
    """The case's own debug directory (a --debug-dir): one per case, so that each case's
    lookup is tested alone."""
    return os.path.join(MC.OUT, arch, os.path.basename(exe) + ".debugdir")


def install_by_build_id(arch, root, path):
    """Copies a debug file to root/.build-id/xx/rest.debug (its own build-id); returns it."""
    bid = MC.build_id(arch, path)
    if not bid:
        raise MC.CaseError("%s has no build-id" % path)
    dest = os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(path, dest)
    return dest


def _strip_keep_unstripped(arch, exe, bins):
    unstripped = exe + ".unstripped"
    shutil.copy2(exe, unstripped)
    bins.update(unstripped=unstripped, gdb_exe=unstripped, symbol_file=unstripped)
    return unstripped


def _split(arch, exe, bins):
    """Only the debug directory has the debug info: the binary is stripped (it keeps
    .eh_frame), its debug file installed by build-id and named by .gnu_debuglink."""
    _strip_keep_unstripped(arch, exe, bins)
    root = debug_dir_of(arch, exe)
    shutil.rmtree(root, ignore_errors=True)
    dbg = exe + ".debug"
    MC.run([MC.tool(arch, "objcopy"), "--only-keep-debug", exe, dbg])
    MC.run([MC.tool(arch, "strip"), "-s", exe])
    MC.run([MC.tool(arch, "objcopy"), "--add-gnu-debuglink=" + dbg, exe])
    bins.update(debug_dir=root, debug_file=install_by_build_id(arch, root, dbg))
    os.unlink(dbg)


def _dwz(arch, exe, bins):
    """As _split, with the debug file processed by `dwz -m` together with a twin's (the same
    program linked with another build-id style: the same DIEs, so dwz moves them into the
    common file). The common file is installed by its build-id (what .gnu_debugaltlink
    carries besides a path) and at the path the link names inside the debug directory."""
    _strip_keep_unstripped(arch, exe, bins)
    root = debug_dir_of(arch, exe)
    shutil.rmtree(root, ignore_errors=True)
    twin = exe + ".twin"
    MC.compile_program(arch, CASES["inlinedwz"], twin, link_extra=["-Wl,--build-id=md5"])
    dbg, twin_dbg, common = exe + ".debug", twin + ".debug", exe + ".dwz"
    MC.run([MC.tool(arch, "objcopy"), "--only-keep-debug", exe, dbg])
    MC.run([MC.tool(arch, "objcopy"), "--only-keep-debug", twin, twin_dbg])
    altlink = "/usr/lib/debug/.dwz/%s/ehbt-inlinedwz.debug" % arch
    MC.run(["dwz", "-m", common, "-M", altlink, dbg, twin_dbg])
    MC.run([MC.tool(arch, "strip"), "-s", exe])
    MC.run([MC.tool(arch, "objcopy"), "--add-gnu-debuglink=" + dbg, exe])
    bins.update(debug_dir=root, debug_file=install_by_build_id(arch, root, dbg),
                dwz_file=install_by_build_id(arch, root, common))
    by_path = os.path.join(root, altlink[len("/usr/lib/debug/"):])
    os.makedirs(os.path.dirname(by_path), exist_ok=True)
    shutil.copy2(common, by_path)
    for leftover in (twin, dbg, twin_dbg, common):
        os.unlink(leftover)


RUSTC = "/usr/bin/rustc"  # Debian's (CI installs it); not a rustup one earlier on PATH


def _rustc(arch, case, exe):
    """Builds a Rust case: its first source is the crate root (it names the others). Run in
    cores/, whatever the caller's directory: rustc records a source below its working
    directory by its relative name (`programs/rust_inline.rs`), and the case always has
    those."""
    if arch != "x86_64":
        raise MC.CaseError("no Rust std for " + arch)
    MC.run([RUSTC, "-C", "opt-level=2", "-C", "debuginfo=2",
            os.path.join(MC.PROGRAMS, case.sources[0]), "-o", exe], cwd=HERE)


def check_rust_inlining(arch, exe, bins):
    """The #[inline(always)] functions were inlined (no symbol of their own), the others not."""
    names = {n for _, _, _, n in MC.nm_symbols(exe)}
    text = "\n".join(MC.demangle(sorted(names)))
    kept = [f for f in RUST_NOINLINE if "rust_inline::%s::" % f not in text]
    gone = [f for f in RUST_INLINED if "::%s::" % f in text]
    if kept or gone:
        raise MC.CaseError("rustc did not inline as written: missing %s, not inlined %s" % (
            kept, gone))
    return "rustc inlined %s" % ", ".join(RUST_INLINED)


def check_stripped_with_debug_dir(arch, exe, bins):
    sections = MC.run([MC.tool(arch, "readelf"), "-SW", exe]).stdout
    if ".debug_info" in sections or ".symtab" in sections or ".gnu_debuglink" not in sections:
        raise MC.CaseError("the binary keeps debug info or a .symtab, or has no debuglink")
    return "stripped; debug info only in %s" % bins["debug_file"]


def check_dwz(arch, exe, bins):
    dbg = bins["debug_file"]
    sections = MC.run([MC.tool(arch, "readelf"), "-SW", dbg]).stdout
    if ".gnu_debugaltlink" not in sections:
        raise MC.CaseError("dwz left no .gnu_debugaltlink in %s" % dbg)
    info = MC.run([MC.tool(arch, "readelf"), "--debug-dump=info", dbg], check=False).stdout
    if "DW_TAG_imported_unit" not in info:
        raise MC.CaseError("%s imports no partial unit from the common file" % dbg)
    common = MC.run([MC.tool(arch, "readelf"), "--debug-dump=info", bins["dwz_file"]],
                    check=False).stdout
    if "fx_null_write" not in common:
        raise MC.CaseError("fx_null_write's DIE is not in the dwz common file")
    return ("dwz: %s imports partial units from %s (fx_null_write's abstract instance is "
            "there)" % (dbg, bins["dwz_file"]))


def check_dwarf_version(version):
    def check(arch, exe, bins):
        path = bins.get("unstripped", exe)
        text = MC.run([MC.tool(arch, "readelf"), "--debug-dump=info", path],
                      check=False).stdout
        versions = {int(line.split(":")[1]) for line in text.splitlines()
                    if line.strip().startswith("Version:")}
        if versions != {version}:
            raise MC.CaseError("DWARF unit versions %s, expected %d" % (sorted(versions),
                                                                        version))
        return "DWARF %d units only" % version
    return check


CASE_LIST = [
    MC.Case("inline", SOURCES, CHAIN, 11, arches=ARCHES, cflags=LTO, ldflags=LTO,
            inline_chain=INLINE_CHAIN, checks=[check_dwarf_version(5)],
            note="crash three inlined calls deep; callers inlined from a header and, by LTO, "
                 "from another file (DWARF 5)"),
    MC.Case("inline4", SOURCES, CHAIN, 11, arches=ARCHES, cflags=LTO + ["-gdwarf-4"],
            ldflags=LTO + ["-gdwarf-4"], inline_chain=INLINE_CHAIN,
            checks=[check_dwarf_version(4)], note="the inline case with DWARF 4"),
    MC.Case("inlinecxx", ["inline_cxx.cc"], CXX_CHAIN, 11, arches=ARCHES,
            inline_chain=CXX_INLINE_CHAIN,
            note="C++: a class template member and a function template with a lambda, inlined"),
    MC.Case("inlinesplit", SOURCES, CHAIN, 11, arches=ARCHES, cflags=LTO, ldflags=LTO,
            inline_chain=INLINE_CHAIN, post_build=_split,
            checks=[check_stripped_with_debug_dir],
            note="the inline case stripped; its debug file only in a --debug-dir (build-id) "
                 "and by .gnu_debuglink"),
    MC.Case("inlinedwz", SOURCES, CHAIN, 11, arches=ARCHES, cflags=LTO, ldflags=LTO,
            inline_chain=INLINE_CHAIN, post_build=_dwz,
            checks=[check_stripped_with_debug_dir, check_dwz],
            note="the inline case stripped; its debug file dwz-compressed with a twin's, the "
                 "common file found through .gnu_debugaltlink"),
    MC.Case("inlinerust", ["rust_inline.rs", "rust_inline_steps.rs"], RUST_CHAIN, 11,
            arches=("x86_64",), build_with=_rustc, inline_chain=RUST_INLINE_CHAIN,
            checks=[check_rust_inlining],
            note="Rust: a null write three #[inline(always)] calls deep, a caller inlined "
                 "across files; legacy-mangled names"),
]
CASES = {c.name: c for c in CASE_LIST}


def addr2line_chain(arch, exe, link_pc):
    """binutils' addr2line -i at a link-time pc: [(function, file, line)], innermost first
    (the calls inlined there, then the function itself). Independent of GDB and of ehbt."""
    out = MC.run([MC.tool(arch, "addr2line"), "-i", "-f", "-C", "-e", exe,
                  "0x%x" % link_pc]).stdout
    lines = out.strip().splitlines()
    chain = []
    for fn, where in zip(lines[0::2], lines[1::2]):
        path, _, line = where.rpartition(":")
        line = line.split()[0]
        chain.append((fn, path, int(line) if line.isdigit() else None))
    return chain


def restore_hidden_inline_call(arch, name):
    """GDB recording a live stop (qemu's gdbstub) hides an inlined call whose first
    instruction is the stop pc (it presents the stop as "about to enter" it); a core shows it,
    and so does GDB reading a native core. Where that happened at the crash, the expected
    frame 0 gets the hidden call back, by construction: binutils' addr2line -i at the pc must
    give GDB's chain plus exactly one more call, innermost, at its own line. Returns a note."""
    path = os.path.join(MC.OUT, arch, name + ".expected.json")
    with open(path) as f:
        doc = json.load(f)
    crashing = [t for t in doc["threads"] if t["crashing"]][0]
    top = crashing["frames"][0]
    exe = doc.get("exe_unstripped") or doc["exe_file"]
    bias = int(doc["exe_bias"], 16) if doc.get("exe_bias") else None
    if bias is None or top["module_file"] not in (doc["exe"], doc["exe_file"]):
        return ""
    chain = addr2line_chain(arch, exe, int(top["pc"], 16) - bias)
    gdb_names = [c["function"] for c in top["inlined"]] + [top["function"]]
    if len(chain) == len(gdb_names):
        return ""  # nothing hidden (the names are compared by the line tests' rules)
    if len(chain) != len(gdb_names) + 1 or \
            [c[0].split("(")[0] for c in chain[1:]] != [n.split("(")[0] for n in gdb_names]:
        raise MC.CaseError("addr2line's chain at frame 0 %s is not GDB's %s plus one call" % (
            chain, gdb_names))
    fn, file, line = chain[0]
    top["inlined"].insert(0, {"function": fn, "location": {"file": file, "fullname": file,
                                                           "line": line}})
    note = ("frame 0: GDB's live stop hid %s, inlined at the pc (its first instruction); "
            "restored from addr2line -i (%s:%s)" % (fn, file, line))
    doc["note"] += "; " + note
    doc["source"] = "gdb+construction"
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return note


def make_one(arch, case):
    result = MC.do_case_twice(arch, case)
    if MC.ARCHES[arch]["qemu"]:
        note = restore_hidden_inline_call(arch, case.name)
        if note:
            result += " (%s)" % note
    return result


def main():
    arches, _, jobs, workers = MC.command_line(__doc__, CASE_LIST, ARCHES, default_workers=2)
    t0 = time.time()
    failed = MC.run_cases(jobs, make_one, workers)
    MC.remove_run_dirs(arches)
    print("make-line-cores: %d cases, %d failed, %.0fs" % (len(jobs), failed, time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
