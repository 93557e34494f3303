# SPDX-License-Identifier: Apache-2.0
"""Source lines and inlined frames (#28) against GDB: the fixture cores of
cores/make_line_cores.py, whose expected files carry, per physical frame, GDB's `location`
and the inline frames GDB shows above it (`inlined`, innermost first).

Flattened, a thread reads as GDB numbers it: each physical frame's inlined calls, then the
frame itself. An ehbt thread matches when the flattened lists have the same length and, at
every position, the same kind (inlined or physical), the same function and the same position:
- function: for physical frames, the ELF symbol rule of cores_expect (symbol_ok); for inlined
  calls GDB's name, compared after removing what GDB's name leaves out: a C++ parameter list
  (and `const`), a template's return type, the scopes GDB does not print for a lambda's
  `operator()`; lambdas are spelled `<lambda(int)>` by GDB and `{lambda(int)#1}` by the
  demangler, the same closure type;
- position: both none, or the same line and the same file: ehbt's path is GDB's absolute
  `fullname`, or the name the debug info gives (GDB's `filename`), or either after
  os.path.normpath (GDB joins a relative name to a relative compile dir as `./csu/../x.h`).
Columns are not compared: GDB prints none.
"""

import importlib.util
import os
import re
import subprocess

import cores_expect as ce

CORES = ce.CORES
OUT = ce.OUT
MAKE_LINES = CORES / "make_line_cores.py"


def _load_make_line_cores():
    spec = importlib.util.spec_from_file_location("make_line_cores", MAKE_LINES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKE = _load_make_line_cores()
CASES = [(a, c.name) for c in MAKE.CASE_LIST for a in c.arches]
# What a case needs besides the architecture's toolchain (scripts/install-deps.sh has it).
TOOLS = {"inlinerust": [MAKE.RUSTC]}
RUST_CASES = {n for n, tools in TOOLS.items() if MAKE.RUSTC in tools}


def missing_tools(name):
    """The tools case `name` needs that this machine lacks (its test skips)."""
    return [t for t in TOOLS.get(name, []) if not os.path.exists(t)]


def ensure_line_cores(arches):
    """Runs make_line_cores.py for the cases of each architecture whose expected file is
    missing (under EHBT_CORES_OUT when set, as make_cores.py writes), those whose tools this
    machine has. Returns its output per architecture."""
    logs = {}
    for arch in arches:
        missing = [n for a, n in CASES if a == arch and not ce.expected_path(a, n).exists()
                   and not missing_tools(n)]
        if missing:
            proc = subprocess.run(["/usr/bin/python3", str(MAKE_LINES), arch, "--only",
                                   ",".join(missing)], text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=1800)
            logs[arch] = proc.stdout
    return logs


def cli_args(exp, debug_dir=True):
    """The `ehbt core` arguments a line core needs: sysroot, --exe, and the case's own debug
    directory (--debug-dir) where it has one."""
    sysroots, exe = ce.default_args(exp)
    args = []
    for s in sysroots:
        args += ["--sysroot", s]
    if exe:
        args += ["--exe", exe]
    if debug_dir and exp.get("debug_dir"):
        args += ["--debug-dir", exp["debug_dir"]]
    return args


# --- names ------------------------------------------------------------------------------------

def _strip_parameters(name):
    """`ns::f<int>(int) const` -> `ns::f<int>`: the last balanced parameter list removed."""
    name = re.sub(r"\s+const$", "", name.strip())
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                # A bare `operator()`: its `()` is the name, not a parameter list.
                return name if name[:i].endswith("operator") else name[:i]
    return name


def _strip_return_type(name):
    """`void fx_outer<short>` -> `fx_outer<short>`: a space at nesting depth 0 separates the
    return type the demangler prints for templates."""
    depth = 0
    cut = None
    for i, c in enumerate(name):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == " " and depth == 0:
            cut = i
    return name[cut + 1:] if cut is not None else name


def _canonical(name):
    name = _strip_return_type(_strip_parameters(name))
    name = re.sub(r"\{lambda\(([^)]*)\)#\d+\}", r"<lambda(\1)>", name)
    return re.sub(r"\s+>", ">", name)


# Rust (legacy mangling, rustc's default): ehbt names an inlined function by its linkage name
# demangled as every symbol is (the Itanium demangler: `core::ptr::write_volatile::h0123...`,
# `impls::_$LT$impl$u20$...$GT$::call_once::h...`, `{{closure}}` escaped as `_$u7b$...`),
# GDB by the DWARF names (`core::ptr::write_volatile<u32>`, `impls::{impl#2}::call_once<...>`,
# `lang_start_internal::{closure#2}`). The same function when, segment by segment, they agree
# after: the hash and the escapes of the mangled form read as rustc-demangle reads them; the
# generic arguments GDB prints (not in a legacy-mangled name) removed; `<impl ...>` and
# GDB's `{impl#N}` both read as an impl of that module; `{{closure}}` and `{closure#N}` as a
# closure of that function.
RUST_HASH = re.compile(r"::h[0-9a-f]{16}(?:\.llvm\.\d+)?$")
RUST_ESCAPES = {"$LT$": "<", "$GT$": ">", "$RF$": "&", "$BP$": "*", "$LP$": "(", "$RP$": ")",
                "$C$": ",", "$SP$": "@", "$u20$": " ", "$u27$": "'", "$u5b$": "[",
                "$u5d$": "]", "$u7b$": "{", "$u7d$": "}", "$u7e$": "~"}


def _rust_segments(name):
    """`a::b<T::U>::c` -> ["a", "b<T::U>", "c"]: split at `::` outside brackets."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(name):
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        elif c == ":" and depth == 0 and name[i:i + 2] == "::" and i > start:
            out.append(name[start:i])
            start = i + 2
    return out + [name[start:]]


def _rust_segment(seg):
    if seg.startswith("<impl ") or re.fullmatch(r"\{impl#\d+\}", seg):
        return "{impl}"
    if seg == "{{closure}}" or re.fullmatch(r"\{closure#\d+\}", seg):
        return "{closure}"
    if seg.endswith(">") and "<" in seg:  # GDB's generic arguments
        depth = 0
        for i in range(len(seg) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(seg[i], 0)
            if depth == 0:
                return seg[:i]
    return seg


def rust_matches(got, gdb_name, hashed=True):
    """ehbt's legacy-demangled Rust name against GDB's (see above); False for other names.
    `hashed=False`: `got` is a signature label (version 3), the hash element already dropped;
    it must then have no hash."""
    if bool(RUST_HASH.search(got)) != hashed:
        return False
    name = RUST_HASH.sub("", got)
    segs = []
    for seg in name.split("::"):
        seg = re.sub(r"^_(?=\$)", "", seg)
        for esc, c in RUST_ESCAPES.items():
            seg = seg.replace(esc, c)
        segs.append(seg.replace("..", "::"))
    mine = [_rust_segment(s) for s in _rust_segments("::".join(segs))]
    return mine == [_rust_segment(s) for s in _rust_segments(gdb_name)]


def function_matches(got, gdb_name):
    if got is None or gdb_name is None:
        return got == gdb_name
    if got == gdb_name or rust_matches(got, gdb_name):
        return True
    g, w = _canonical(got), _canonical(gdb_name)
    # GDB prints a lambda's call operator as plain `operator()`.
    return g == w or (w == "operator()" and g.endswith("::operator()"))


def position_matches(got, gdb_pos):
    """ehbt's {file, line, column} or None against GDB's {file, fullname, line} or None."""
    if got is None or gdb_pos is None:
        return got is None and gdb_pos is None
    if got.get("line") != gdb_pos["line"]:
        return False
    names = {gdb_pos["file"], gdb_pos.get("fullname")} - {None}
    names |= {os.path.normpath(n) for n in names}
    return got.get("file") in names or os.path.normpath(got.get("file") or "") in names


# --- flattening -------------------------------------------------------------------------------

def gdb_flat(exp_thread):
    """[(kind, function, position, physical expected frame)] from an expected thread."""
    out = []
    for f in exp_thread["frames"]:
        for call in f.get("inlined", []):
            out.append(("inline", call["function"], call["location"], f))
        out.append(("frame", f["function"], f.get("location"), f))
    return out


def ehbt_flat(thread):
    """The same from an ehbt-backtrace/1 thread."""
    out = []
    for f in thread["frames"]:
        for call in f.get("inlined", []):
            out.append(("inline", call["function"], call["location"], f))
        out.append(("frame", f.get("symbol"), f.get("location"), f))
    return out


def show_gdb(flat):
    return "\n".join("  %-6s %s at %s" % (k, fn, "%s:%d" % (p["fullname"] or p["file"], p["line"])
                                           if p else "-") for k, fn, p, _ in flat)


def show_ehbt(flat):
    return "\n".join("  %-6s %s at %s" % (k, fn, "%s:%d" % (p["file"], p["line"]) if p else "-")
                     for k, fn, p, _ in flat)


def compare_lines(exp, doc, where, physical_names=True):
    """Every mismatch between GDB's frames (with lines and inline frames) and ehbt's.
    physical_names=False leaves the physical frames' names out (a record without the ELF
    symbols cores_expect checks them against)."""
    errors = []
    got_threads = {t["tid"]: t for t in doc["threads"]}
    for exp_t in exp["threads"]:
        got_t = got_threads.get(exp_t["tid"])
        if got_t is None:
            errors.append("%s: no thread %d" % (where, exp_t["tid"]))
            continue
        want, got = gdb_flat(exp_t), ehbt_flat(got_t)
        bad = []
        if len(want) != len(got):
            bad.append("%d frames with inlined ones, GDB shows %d" % (len(got), len(want)))
        for i, (w, g) in enumerate(zip(want, got)):
            kind_ok = w[0] == g[0]
            if w[0] == "frame":
                fn_ok = ce.symbol_ok(w[3], g[3]) if physical_names else True
            else:
                fn_ok = function_matches(g[1], w[1])
            if not (kind_ok and fn_ok and position_matches(g[2], w[2])):
                bad.append("#%d: ehbt %s %s at %s, GDB %s %s at %s" % (
                    i, g[0], g[1], g[2], w[0], w[1], w[2]))
        if bad:
            errors.append("%s thread %d:\n  %s\nehbt:\n%s\nGDB:\n%s" % (
                where, exp_t["tid"], "\n  ".join(bad), show_ehbt(got), show_gdb(want)))
    return errors


# --- text -------------------------------------------------------------------------------------

# "#4  0x000055d4c0a01234 in inner () at /src/a.c:12" or "#5  outer () at /src/a.c:20"; the
# function may be followed by " from MODULE", " [scan]" and the like.
TEXT_FRAME = re.compile(r"^#(?P<n>\d+) +(?:(?P<pc>0x[0-9a-f]+) in )?(?P<fn>.+?) \(\)"
                        r"(?: at (?P<file>.+):(?P<line>\d+))?(?: from \S+)?(?: \[\w+\])*$")


def text_frames(text):
    """[(number, pc or None, function, position or None)] of the frame lines of one thread."""
    out = []
    for line in text.splitlines():
        if line.startswith("<signal handler called>"):
            continue
        m = TEXT_FRAME.match(line)
        if not m:
            if line.startswith("#"):
                raise AssertionError("unparsed frame line: %r" % line)
            continue
        pos = {"file": m.group("file"), "line": int(m.group("line"))} if m.group("file") \
            else None
        out.append((int(m.group("n")), m.group("pc"), m.group("fn"), pos))
    return out


def compare_text(exp_t, text, where):
    """ehbt's text of one thread against GDB's frames: numbered as GDB numbers them, the
    same function and position per line, an address only on the first line of each physical
    frame (the inlined calls and the frame share one pc: GDB prints it once)."""
    want = gdb_flat(exp_t)
    got = text_frames(text)
    errors = []
    if len(got) != len(want):
        errors.append("%s: %d text frame lines, GDB shows %d frames" % (where, len(got),
                                                                         len(want)))
    first_of_frame = []
    for f in exp_t["frames"]:
        first_of_frame += [True] + [False] * len(f.get("inlined", []))
    for i, (w, g) in enumerate(zip(want, got)):
        number, pc, fn, pos = g
        fn_ok = (ce.symbol_ok(w[3], {"symbol": None if fn == "??" else fn})
                 if w[0] == "frame" else function_matches(fn, w[1]))
        if number != i or not fn_ok or not position_matches(pos, w[2]) or \
                (pc is not None) != first_of_frame[i]:
            errors.append("%s line %d: #%d %s %s at %s; GDB #%d %s %s at %s" % (
                where, i, number, pc or "(no address)", fn, pos, i, w[0], w[1], w[2]))
    return errors
