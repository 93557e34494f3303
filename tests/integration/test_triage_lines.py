# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage and source lines (#28): the store keeps each frame's position and the calls
inlined at its pc, the reports show them, and signatures count inlined calls as frames from
signature version 2 on, while a store made before keeps version 1 (docs/triage.md).

Hand-made ehbt-backtrace/1 documents where the engine is not needed; the fixture cores of
cores/make_line_cores.py end to end, whose expected frames are GDB's."""

import json
import os
import re
import sqlite3
import subprocess

import pytest

import cores_expect as ce
import lines_expect as le
from test_triage import read_jsonl, tool_env, triage  # noqa: F401

from ehbt_triage import report_html, report_text  # noqa: E402
from ehbt_triage import signature as sigmod  # noqa: E402
from ehbt_triage import store as storemod  # noqa: E402
from ehbt_triage.schema import SCHEMA_VERSION  # noqa: E402

SEGV = {"number": 11, "name": "SIGSEGV", "code": 1, "address": "0x0"}


def _pos(file, line, column=None):
    return {"file": file, "line": line, "column": column}


def _frame(i, symbol, location=None, inlined=()):
    return {"index": i, "pc": "0x%x" % (0x1000 + 16 * i), "cfa": "0x7ff0", "source": "eh_frame",
            "module": "/opt/app", "module_offset": "0x%x" % (0x100 + 16 * i),
            "symbol": symbol, "symbol_offset": "0x4", "location": location,
            "inlined": [{"function": f, "location": at} for f, at in inlined]}


def _doc(frames):
    return {"format": "ehbt-backtrace/1", "signal": SEGV, "executable": "/opt/app",
            "arch": "x86_64", "modules": [{"path": "/opt/app", "build_id": "beef"}],
            "threads": [{"tid": 7, "crashing": True, "stop_reason": "outermost",
                         "stop_detail": "", "frames": frames}]}


# crash() has deepest() inlined, itself inlined from middle(); main calls crash() through an
# inlined step(). GDB's frames: deepest, middle, crash, step, main.
FRAMES = [
    _frame(0, "crash", _pos("/src/a.c", 25, 3),
           [("deepest", _pos("/src/a.c", 16, 7)), ("middle", _pos("/src/a.c", 20, 3))]),
    _frame(1, "main", _pos("/src/a.c", 37, 3), [("step", _pos("/src/steps.h", 12, 3))]),
    _frame(2, "__libc_start_call_main", None),
    _frame(3, "_start", None),
]


def test_signature_versions_count_inlined_calls_or_not():
    """Version 2 (and 3, the default): the inlined calls are frames, innermost first, as GDB
    shows them. Version 1: the physical frames only. Without inlined calls they are the same."""
    assert sigmod.SIGNATURE_VERSION == 3
    assert sigmod.Signer().version == 3
    v2 = sigmod.Signer(top=4, version=2)
    assert sigmod.Signer(top=4).sign(_doc(FRAMES)) == v2.sign(_doc(FRAMES))
    assert v2.sign(_doc(FRAMES)) == "SIGSEGV@0x0 deepest | middle | crash | step"
    v1 = sigmod.Signer(top=4, version=1)
    assert v1.sign(_doc(FRAMES)) == "SIGSEGV@0x0 crash | main"
    plain = [dict(f, inlined=[]) for f in FRAMES]
    assert v2.sign(_doc(plain)) == v1.sign(_doc(plain)) == "SIGSEGV@0x0 crash | main"
    with pytest.raises(ValueError):
        sigmod.Signer(version=4)
    # A skip-listed inlined call is skipped like a frame (abort inlined into a reporter).
    skip = [_frame(0, "report", None, [("abort", None)]), _frame(1, "work", None)]
    assert v2.sign(_doc(skip)) == "SIGSEGV@0x0 report | work"


def test_store_keeps_locations_and_inlined_calls(tmp_path):
    """What a document says about positions and inlined calls is what the store gives back,
    with or without the worker's rows; frames without debug info store NULL."""
    for with_rows in (False, True):
        st = storemod.Store(str(tmp_path / ("s%d.db" % with_rows)))
        doc = _doc(FRAMES)
        info = {"sha256": "%064x" % 1, "path": "c1", "size": 1, "core_time": 1.0,
                "signature_version": 2}
        rows = storemod.document_rows(doc, lambda f: "beef+" + f["module_offset"]) \
            if with_rows else None
        core_id, _ = st.record_ok(info, doc, "sig", lambda f: None, rows=rows)
        tid, stop, frames = st.crashing_frames(core_id)
        assert tid == 7 and stop == "outermost"
        assert [(f["symbol"], f["location"], f["inlined"]) for f in frames] == [
            (f["symbol"], f["location"], f["inlined"]) for f in FRAMES]
        assert st.db.execute("SELECT src_file, src_line, src_column FROM frames WHERE idx = 2"
                             ).fetchone() == (None, None, None)
        assert st.db.execute("SELECT signature_version FROM cores").fetchone() == (2,)
        st.close()


def test_old_store_keeps_signature_version_1(tmp_path):
    """A store made before signature versions (schema 4) that holds cores is migrated to
    schema 5 with signature version 1: its new cores are signed as its old ones were. An old
    store without cores, and a new store, take the current version (3)."""
    db = tmp_path / "old.db"
    st = storemod.Store(str(db))
    assert st.signature_version == 3
    st.record_ok({"sha256": "%064x" % 1, "path": "c1", "size": 1, "core_time": 1.0},
                 _doc(FRAMES), "old sig", lambda f: None)
    st.flush()
    st.close()
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")
    con.execute("DELETE FROM meta WHERE key = 'signature_version'")
    con.commit()
    con.close()
    st = storemod.Store(str(db))
    assert st.signature_version == 1
    assert dict(st.db.execute("SELECT key, value FROM meta")) == {
        "schema": str(SCHEMA_VERSION), "content_key": "2", "signature_version": "1"}
    st.close()
    empty = tmp_path / "empty.db"
    storemod.Store(str(empty)).close()
    con = sqlite3.connect(empty)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")
    con.execute("DELETE FROM meta WHERE key = 'signature_version'")
    con.commit()
    con.close()
    st = storemod.Store(str(empty))
    assert st.signature_version == 3
    st.close()
    con = sqlite3.connect(empty)
    con.execute("UPDATE meta SET value = '9' WHERE key = 'signature_version'")
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")
    con.commit()
    con.close()
    with pytest.raises(storemod.StoreError, match="signature version '9'"):
        storemod.Store(str(empty))


def test_reports_show_positions_and_inlined_calls(tmp_path):
    st = storemod.Store(str(tmp_path / "s.db"))
    core_id, _ = st.record_ok({"sha256": "%064x" % 1, "path": "c1", "size": 1,
                               "core_time": 1.0}, _doc(FRAMES), "sig", lambda f: None)
    html = report_html._stack(st, core_id, sigmod.Signer(top=4))
    rows = [r for r in html.split("<tr") if "<td>" in r or "<td></td>" in r]
    assert len(rows) == 7, html  # 4 frames, 3 inlined calls
    assert 'class="insig inlined"><td></td><td><code>deepest</code> at <code class="pos" ' \
           'title="/src/a.c">a.c:16</code>' in html, html
    assert "inlined into <code>crash</code>" in html
    assert '<code>crash+0x4</code> at <code class="pos" title="/src/a.c">a.c:25</code>' in html
    assert '<code>main+0x4</code> at <code class="pos" title="/src/a.c">a.c:37</code>' in html
    assert '<code>_start+0x4</code></td>' in html  # no position, no " at "
    # Signature version 1 marks the physical frames (with what is inlined into them).
    html1 = report_html._stack(st, core_id, sigmod.Signer(top=1, version=1))
    assert html1.count('class="insig') == 3, html1
    frames = st.crashing_frames(core_id)[2]
    assert report_text.crash_place(sigmod.Signer(top=4), frames) == \
        "deepest at /src/a.c:16 (inlined into crash)"
    assert report_text.crash_place(sigmod.Signer(top=4, version=1), frames) == \
        "crash at /src/a.c:25"
    assert report_text.crash_place(sigmod.Signer(), [dict(f, location=None, inlined=[])
                                                     for f in frames]) is None
    st.close()


# --- the fixture cores ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def line_cases():
    le.ensure_line_cores(["x86_64"])
    return {n: ce.load_expected("x86_64", n) for a, n in le.CASES
            if a == "x86_64" and not le.missing_tools(n)}


def test_triage_stores_gdbs_lines_and_signs_with_inlined_calls(tool_env, line_cases, tmp_path):
    """ehbt-triage over the x86-64 line cores (with their debug directories): every stored
    frame's position and inlined calls are GDB's, and the signature is GDB's first frames,
    inlined ones included (none of them is skip-listed)."""
    debug_dirs = sorted({e["debug_dir"] for e in line_cases.values() if e.get("debug_dir")})
    args = ["--db", tmp_path / "s.db", "--jsonl", tmp_path / "o.jsonl", "--top", "5", "-j", "2"]
    for d in debug_dirs:
        args += ["--debug-dir", d]
    proc = triage(tool_env, *(args + [e["core"] for e in line_cases.values()]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = {os.path.basename(r["core"]): r for r in read_jsonl(tmp_path / "o.jsonl")}
    con = sqlite3.connect(tmp_path / "s.db")
    assert con.execute("SELECT value FROM meta WHERE key = 'signature_version'"
                       ).fetchone() == ("3",)
    st = storemod.Store(str(tmp_path / "s.db"))
    errors = []
    for name, exp in line_cases.items():
        rec = recs[name + ".core"]
        crashing = [t for t in exp["threads"] if t["crashing"]][0]
        gdb_names = [fn for _, fn, _, _ in le.gdb_flat(crashing)][:5]
        got = [p.strip() for p in rec["signature"].split(" ", 1)[1].split("|")]
        # Signature version 3 leaves Rust's hash element out of a label (GDB's DWARF names
        # have none either); every other name as function_matches compares them.
        if len(got) != 5 or not all(le.rust_matches(g, w, hashed=False) if name in le.RUST_CASES
                                    else le.function_matches(g, w)
                                    for g, w in zip(got, gdb_names)):
            errors.append("%s: signature %r, GDB's first frames %s" % (name, rec["signature"],
                                                                       gdb_names))
        row = con.execute("SELECT id FROM cores WHERE path = ?", (exp["core"],)).fetchone()
        _, _, frames = st.crashing_frames(row[0])
        doc = {"threads": [{"tid": crashing["tid"], "frames": [
            dict(f, index=f["idx"]) for f in frames]}]}
        errors += le.compare_lines({"threads": [crashing]}, doc, "triage " + name)
    st.close()
    con.close()
    assert not errors, "\n".join(errors)
    # The text report names where the crash is: GDB's frame 0 of the inline case.
    top = [t for t in line_cases["inline"]["threads"] if t["crashing"]][0]["frames"][0]
    call = top["inlined"][0]
    place = "%s at %s:%d (inlined into %s)" % (call["function"], call["location"]["fullname"],
                                                call["location"]["line"], top["function"])
    assert place in proc.stdout, proc.stdout


def _core_document(ehbt_bin, core):
    proc = subprocess.run([str(ehbt_bin), "core", core, "--json"], capture_output=True,
                          text=True, timeout=300)
    return json.loads(proc.stdout)


def _rehashed(doc, pattern, replacement):
    """The document as the same crash of another build would read: every symbol (and inlined
    function) with `pattern` replaced."""
    text = json.dumps(doc)
    out = re.sub(pattern, replacement, text)
    assert out != text, pattern
    return json.loads(out)


def test_signature_version_3_leaves_out_what_a_build_hashes(ehbt_bin, line_cases):
    """The cgo crash's C-side wrapper is `_cgo_<12 hex>_Cfunc_cfun1` (cgo hashes the package's
    file names and contents into it; the binary's symbol table, read by nm, has exactly one
    such function),
    a Rust function ends in `::h<16 hex>` (a hash of the crate's metadata). Another build of
    the same code has other hashes: version 3 signs it the same, version 2 did not."""
    from test_go_cores import load_expected
    cgo = load_expected("x86_64", ["cgo"])["cgo"]
    nm = subprocess.run(["nm", cgo["exe"]], capture_output=True, text=True).stdout
    [wrapper] = re.findall(r" T (_cgo_[0-9a-f]{12}_Cfunc_cfun1)$", nm, re.M)
    v2, v3 = sigmod.Signer(top=8, version=2), sigmod.Signer(top=8)
    doc = _core_document(ehbt_bin, cgo["core"])
    other = _rehashed(doc, wrapper[5:17], "0123456789ab")
    assert wrapper in v2.sign(doc).split(" | "), v2.sign(doc)
    assert "_cgo_Cfunc_cfun1" in v3.sign(doc).split(" | "), v3.sign(doc)
    assert v3.sign(doc) == v3.sign(other)
    assert v2.sign(doc) != v2.sign(other)

    rust = line_cases["inlinerust"]
    doc = _core_document(ehbt_bin, rust["core"])
    other = _rehashed(doc, r"::h[0-9a-f]{16}\b", "::h0123456789abcdef")
    assert v3.sign(doc) == v3.sign(other)
    assert v2.sign(doc) != v2.sign(other)
    assert v3.sign(doc) == re.sub(r"::h[0-9a-f]{16}", "", v2.sign(doc))
