#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Where a core's CPU time goes in ehbt-triage, stage by stage, in one process (issue #31).

    bench/triage_stages.py [--build DIR] [--triage DIR] [--rounds R] DIRECTORY

Runs, for every core of DIRECTORY in name order, what a -j1 run does for it, the worker's
part and the parent's part one after the other in this process (no fork, no pipe), and
prints the CPU time per core of each stage (the median of --rounds passes, each over a fresh
store and a fresh image store):

    key      the content key (workers.open_plain: ehbt.content_key)
    engine   ehbt.open_core + target_report + to_dict (the walk, the names and lines, the
             report's JSON text and its json.loads)
    rows     the store's rows of every thread (store.document_rows)
    sign     the signature (Signer.sign_with_trust)
    marshal  the result as the worker sends it and the parent reads it (marshal both ways)
    parent   what the parent does with it (Run.settle, on_hash, on_result: the store's
             statements, the bucket), and the batch's commits

What this leaves out is the two processes' own cost (the pipe, the wake-ups, the key on a
second thread): bench/triage_marginal.py measures the whole. --triage names the triage tree
(default: this one), so that two trees can be compared on one build's engine.
"""

import argparse
import marshal
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("key", "engine", "rows", "sign", "marshal", "parent")


def one_pass(mods, cores, db):
    workers, engine, store, signature, run = mods
    signer = signature.Signer()
    engine.set_store_caps(None, 2 << 30)  # a fresh image store, as a new worker's
    options = {"sysroots": [], "debug_dirs": [], "debuginfod": False, "key_version": 2}
    st = store.Store(db)

    class Args:
        scheduler = None

    state = run.Run(Args(), st, signer, cores, None, {})
    spent = dict.fromkeys(STAGES, 0.0)
    clock = time.process_time
    for task, path in enumerate(cores):
        t0 = clock()
        plain, digest = workers.open_plain(path, options["key_version"])
        t1 = clock()
        doc = engine.analyze_core(plain.path, options["sysroots"], name=path)
        t2 = clock()
        thread = signature.crashing_thread(doc) or {}
        build_ids = signature.module_names(doc)
        rows = store.document_rows(doc, lambda f: signature.frame_key(f, build_ids))
        t3 = clock()
        sig, unreliable = signer.sign_with_trust(doc)
        t4 = clock()
        plain.close()
        thread = {k: v for k, v in thread.items() if k != "frames"}
        doc["threads"] = [thread] if thread else []
        result = {"error": None, "doc": doc, "signature": sig, "rows": rows,
                  "unreliable": unreliable, "compression": None,
                  "stop_reason": thread.get("stop_reason")}
        result = marshal.loads(marshal.dumps(("done", task, result)))[2]
        t5 = clock()
        s = os.stat(path)
        if not state.settle(task) and state.on_hash(task, digest, s.st_size, s.st_mtime):
            state.on_result(task, result)
        st.tick()
        t6 = clock()
        for name, (a, b) in zip(STAGES, ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5),
                                         (t5, t6))):
            spent[name] += b - a
    t0 = clock()
    st.close()
    spent["parent"] += clock() - t0
    return spent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--triage", default=os.path.join(ROOT, "triage"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("directory")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.triage))
    sys.path.insert(0, os.path.join(os.path.abspath(args.build), "engine", "python"))
    os.environ["DEBUGINFOD_URLS"] = ""
    from ehbt_triage import engine, run, signature, store, workers

    if engine.mode() != "python":
        sys.exit("the ehbt Python package is not importable from %s" % args.build)
    cores = sorted(os.path.join(args.directory, f) for f in os.listdir(args.directory))
    if not cores:
        sys.exit("no cores in %s" % args.directory)
    mods = (workers, engine, store, signature, run)
    passes = []
    with tempfile.TemporaryDirectory(prefix="triage-stages.") as work:
        for r in range(args.rounds):
            passes.append(one_pass(mods, cores, os.path.join(work, "store%d.sqlite" % r)))
    n = len(cores)
    per = {k: statistics.median(p[k] for p in passes) / n * 1e3 for k in STAGES}
    print("%d cores of %s, CPU ms per core (median of %d passes):" % (n, args.directory,
                                                                      args.rounds))
    print("  " + "  ".join("%s %.3f" % (k, per[k]) for k in STAGES)
          + "  total %.3f" % statistics.median(sum(p.values()) / n * 1e3 for p in passes))


if __name__ == "__main__":
    main()
