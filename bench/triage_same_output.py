#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A/B check that two ehbt-triage trees write the same outputs: store, JSONL and HTML.

    bench/triage_same_output.py [--build DIR] [--cores N] [-j J] [--work DIR] TRIAGE_A TRIAGE_B

TRIAGE_A/B: ehbt-triage scripts (e.g. a `git archive` of the base commit's triage/ and this
tree's). For a change that should only make the per-core path cheaper: both run on one
directory of N mixed cores (distinct copies of the small x86_64 fixture cores cycling over
every kind, a few large ones, hard-linked copies of some -- seen before, or copies of a core
in flight --, zstd- and gzip-compressed copies, a systemd-coredump name, a truncated core, an
empty file and a file that is no core), each with a fresh store: a first run (--jsonl,
--html) and a second run over the same store (every core seen before). Then the store's
tables (every row, by id; analysed_at, a time, blanked), both JSONL files, both HTML reports
(their "generated" time blanked) and the printed reports (the rate line dropped) are compared
byte for byte. Exit 0 when all are equal, 1 with a diff of the first difference otherwise.
-j1 (the default) makes the order of the cores, and so every id, the same run to run; with
-j above 1 the order of the JSONL lines and the ids depend on which worker finishes first
(lines are compared sorted, so only a store of one core a bucket compares equal).
"""

import argparse
import difflib
import gzip
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "cores", "out", "x86_64")
PY = "/usr/bin/python3"
LARGE = ("threads", "go")
TABLES = ("meta", "buckets", "cores", "threads", "frames")


def make_cores(d, n):
    """The mixed directory (see the module doc)."""
    small = sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".core")
                   and os.path.getsize(os.path.join(FIXTURES, f)) < (1 << 20))
    if not small:
        sys.exit("no fixture cores in %s" % FIXTURES)
    made = []
    for i in range(max(1, n - 12)):
        kind = small[i % len(small)]
        with open(os.path.join(FIXTURES, kind + ".core"), "rb") as f:
            data = f.read()
        dest = os.path.join(d, "%05d-%s.core" % (i, kind))
        with open(dest, "wb") as f:
            f.write(data + b"EHBT-AB-%010d" % i)
        made.append(dest)
    for kind in LARGE:
        src = os.path.join(FIXTURES, kind + ".core")
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(d, "large-%s.core" % kind))
    for k in range(0, min(len(made), 40), 8):  # copies under other names
        os.link(made[k], os.path.join(d, "copy-%05d.core" % k))
    subprocess.run(["zstd", "-q", "-k", made[1], "-o", os.path.join(d, "z-one.core.zst")],
                   check=True)
    with open(made[2], "rb") as f, gzip.open(os.path.join(d, "g-two.core.gz"), "wb") as g:
        g.write(f.read())
    shutil.copyfile(made[3], os.path.join(
        d, "core.prog.1000.3ec699180e1d4c22ade03ec681fa8798.4242.1717652311000000"))
    with open(made[4], "rb") as f:
        data = f.read()
    with open(os.path.join(d, "truncated.core"), "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    open(os.path.join(d, "empty.core"), "wb").close()
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a core\n")


def run(triage, build, cores, db, jsonl, html, jobs):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "engine", "python"),
               EHBT_BIN=os.path.join(build, "engine", "tools", "ehbt"), DEBUGINFOD_URLS="")
    for k in ("EHBT_TRIAGE_TEST_DELAY", "EHBT_TRIAGE_TEST_FAULT", "EHBT_TRIAGE_ENGINE"):
        env.pop(k, None)
    p = subprocess.run([PY, triage, "-j%d" % jobs, "--db", db, "--jsonl", jsonl, "--html", html,
                        cores], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode not in (0, 1):
        sys.exit("%s failed (%d):\n%s" % (triage, p.returncode, p.stderr[-2000:]))
    return re.sub(r"(?m)^.*(cores/s|Peak worker RSS).*\n", "", p.stdout)


def dump(db):
    con = sqlite3.connect(db)
    lines = []
    for table in TABLES:
        cur = con.execute("SELECT * FROM %s ORDER BY %s" % (table, "key" if table == "meta"
                                                             else "id"))
        names = [c[0] for c in cur.description]
        for row in cur:
            row = dict(zip(names, row))
            if "analysed_at" in row:
                row["analysed_at"] = 0
            lines.append("%s %r\n" % (table, sorted(row.items())))
    con.close()
    return lines


def text(path, generated=False):
    with open(path, encoding="utf-8") as f:
        data = f.read()
    if generated:
        data = re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated -", data)
    return data.splitlines(True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cores", type=int, default=200)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--work")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="triage-same.", dir=args.work)
    try:
        cores = os.path.join(work, "cores")
        os.makedirs(cores)
        make_cores(cores, args.cores)
        # A file changed less than content_hash.QUIET_NS before it is hashed gets no file
        # identity: let every core age past that, so that both runs record the same.
        time.sleep(2.5)
        out = {}
        w = os.path.join(work, "run")  # one path for both: the reports name the store
        for which in ("a", "b"):
            shutil.rmtree(w, ignore_errors=True)
            os.makedirs(w)
            db = os.path.join(w, "store.sqlite")
            res = []
            for n in (1, 2):
                jl, html = os.path.join(w, "%d.jsonl" % n), os.path.join(w, "%d.html" % n)
                printed = run(getattr(args, which), build, cores, db, jl, html, args.j)
                res += [("run %d printed" % n, printed.splitlines(True)),
                        ("run %d jsonl" % n, text(jl)),
                        ("run %d html" % n, text(html, generated=True))]
            res.append(("store", dump(db)))
            out[which] = res
        bad = 0
        for (name, a), (_name, b) in zip(out["a"], out["b"]):
            if args.j > 1:
                a, b = sorted(a), sorted(b)
            if a != b:
                bad += 1
                print("DIFFERENT: %s" % name)
                for line in list(difflib.unified_diff(a, b, "a", "b", n=0))[:20]:
                    print(line.rstrip("\n")[:300])
            else:
                print("same: %s (%d lines)" % (name, len(a)))
        n_cores = len(os.listdir(cores))
        print("%d inputs, -j%d: %s" % (n_cores, args.j, "IDENTICAL" if not bad
                                       else "%d outputs differ" % bad))
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
