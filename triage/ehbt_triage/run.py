# SPDX-License-Identifier: Apache-2.0
"""One triage run: check the outputs, discover the cores, analyse them in workers (local
processes, or a dask cluster with --scheduler), store, report.

Only this (parent) process writes the database, each core whole as its result arrives (in
batches, see store.py; flushed when the run ends, also by Ctrl-C), so the database is
consistent whenever the run stops.
"""

import json
import os
import sys

from . import jsonl, options, report_text, spool
from .content_hash import file_identity, python_sparse_sha256
from .discover import discover
from .exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from .signature import crashing_thread, frame_key, missing_modules, module_names
from .store import SPOOL_FIELDS
from .stores import describe

_MAX_NOTES = 3


def _note_skipped(skipped):
    """One note per skipped file when there are few, else the first few and a count."""
    for path, why in skipped[:_MAX_NOTES]:
        sys.stderr.write("ehbt-triage: note: skipped %s (%s)\n" % (path, why))
    if len(skipped) > _MAX_NOTES:
        sys.stderr.write("ehbt-triage: note: skipped %d more files that are not cores\n"
                         % (len(skipped) - _MAX_NOTES))


def _signal_from_row(row):
    if not row.get("signal_number"):
        return None
    return {"number": row["signal_number"], "name": row["signal"], "code": row["signal_code"],
            "address": row["fault_addr"]}


def core_info(path, sha256, size, mtime, compression=None):
    """What the store keeps about a core besides its analysis: core_time is the time in a
    systemd-coredump file name when the name is one (a copy keeps it; the mtime changes),
    else the file's mtime; the spool fields are null for other names."""
    info = {"path": path, "sha256": sha256, "size": size, "core_time": mtime,
            "compression": compression}
    meta = spool.parse_name(os.path.basename(path))
    for key in SPOOL_FIELDS:
        if key != "compression":
            info[key] = meta[key] if meta else None
    if meta:
        info["core_time"] = meta["core_time"]
    return info


class Run:
    """The parent's side of analysing cores, whatever feeds them: the pool's callbacks (settle,
    likely_known, on_hash, on_result) and what each outcome writes (store, JSONL). A batch run
    (this class) also collects what its summary lists; `ehbt-triage watch` (watch.py) runs the
    same code for every core and overrides only the hooks that collect (_count, _note_failed,
    _note_missing, event), so that it stays small however long it runs.

    `paths` maps a pool task to its path (a list for a batch, the pool's own dict for watch)."""

    def __init__(self, args, store, signer, paths, writer, compression=None, progress=None):
        self.args = args
        self.store = store
        self.signer = signer
        self.paths = paths
        self.compression = compression if compression is not None else {}
        self.missing = []  # (path, [module paths]) of ok cores analysed without some files
        self.writer = writer
        self.info = {}  # task being analysed -> {path, sha256, size, core_time, ...}
        self.inflight = {}  # sha256 -> task being analysed
        self.duplicates = {}  # sha256 -> [(path, info)] of copies of a core being analysed
        self.core_ids = []  # ok cores of this run (analysed or seen before)
        self.bucket_run_counts = {}
        self.failed = []  # (path, reason)
        self.stats = {"ok": 0, "seen": 0, "failed": 0}
        self.worker_rss_kib = 0  # the largest peak RSS a worker reported
        self.progress = progress or report_text.Progress(len(paths))
        self.likely = {}  # task -> likely_known's answer, found by settle on the way

    # -- worker callbacks ----------------------------------------------------------------------

    def likely_known(self, task):
        """Whether the store has an ok core of this path, size and time (a re-run over the
        same spool): the core is then hashed before it is analysed (else both at once)."""
        if task in self.likely:
            return self.likely.pop(task)
        path = self.paths[task]
        try:
            st = os.stat(path)
        except OSError:
            return False
        info = core_info(path, None, st.st_size, st.st_mtime)
        return self.store.known_file(path, st.st_size, info["core_time"])

    def settle(self, task):
        """Counts the core as seen before, without a worker, when the store has it from this
        path with the file's identity unchanged (content_hash.file_identity says why that
        proves the content unchanged). True when it did. Otherwise likely_known's answer
        comes from the same stat and query (the pool asks it next)."""
        path = self.paths[task]
        try:
            st = os.stat(path)
        except OSError:
            return False  # the worker says why
        file_id = file_identity(st)
        rows = self.store.ok_cores_at(path)
        row = next((r for r in rows if file_id and r.get("file_id") == file_id), None)
        if row is None:
            core_time = core_info(path, None, st.st_size, st.st_mtime)["core_time"]
            self.likely[task] = any(r["size"] == st.st_size and r["core_time"] == core_time
                                    for r in rows)
            return False
        self._seen_before(path, row)
        self.progress.update()
        return True

    def on_hash(self, task, sha256, size, mtime, file_id=None):
        path = self.paths[task]
        self.likely.pop(task, None)  # not asked for when the pool does not speculate
        info = core_info(path, sha256, size, mtime, self.compression.get(path))
        info["file_id"] = file_id
        row = self.store.core_by_hash(sha256)
        if row is not None and row["status"] == "ok":
            if file_id and row["path"] == path and row.get("file_id") != file_id:
                self.store.set_file_id(row["id"], path, file_id)  # the next run skips the hash
            self._forget_stale(path, sha256)
            self._seen_before(path, row)
            return False
        if sha256 in self.inflight:
            self.duplicates.setdefault(sha256, []).append((path, info))
            return False
        self.inflight[sha256] = task
        self.info[task] = info
        return True

    def on_result(self, task, result):
        path = self.paths[task]
        info = self.info.pop(task, None)
        self.likely.pop(task, None)
        self.worker_rss_kib = max(self.worker_rss_kib, result.get("worker_rss_kib") or 0)
        if result.get("error"):
            self._failed(path, info, result["error"])
        else:
            self._ok(info, result)
        if info is not None:
            self.inflight.pop(info["sha256"], None)
            self._resolve(info["sha256"])
        self.progress.update()

    # -- outcomes ------------------------------------------------------------------------------

    def _count(self, core_id, bucket_id):
        self.core_ids.append(core_id)
        self.bucket_run_counts[bucket_id] = self.bucket_run_counts.get(bucket_id, 0) + 1
        self.progress.done += 1

    def _note_missing(self, path, missing):
        self.missing.append((path, missing))

    def _note_failed(self, path, reason):
        self.failed.append((path, reason))

    def event(self, kind, path, **fields):
        """One core's outcome (ok, seen_before, failed): a batch says it in its summary."""

    def _ok(self, info, result):
        doc = result["doc"]
        rows = result.get("rows")
        build_ids = module_names(doc) if rows is None else None
        missing = missing_modules(doc)
        info = dict(info, unreliable=bool(result.get("unreliable")), missing_modules=missing,
                    warnings=doc.get("warnings") or [], signature_version=self.signer.version)
        self._forget_truncated(info["path"], info["sha256"])
        core_id, bucket_id = self.store.record_ok(info, doc, result["signature"],
                                                  lambda f: frame_key(f, build_ids), rows=rows)
        self.stats["ok"] += 1
        self._count(core_id, bucket_id)
        if missing:
            self._note_missing(info["path"], missing)
        if self.writer:
            thread = crashing_thread(doc) or {}
            self.writer.write(jsonl.record(
                info["path"], info["sha256"], "ok", doc.get("executable"), doc.get("signal"),
                result["signature"], bucket_id, thread.get("tid"), thread.get("frames", []),
                result.get("stop_reason"), info=info, unreliable=info["unreliable"],
                missing_modules=missing, warnings=info["warnings"]))
        self.event("ok", info["path"], bucket=bucket_id, signature=result["signature"],
                   sha256=info["sha256"], missing=len(missing) or None)

    def _seen_before(self, path, row):
        self.stats["seen"] += 1
        self.progress.seen += 1
        self._count(row["id"], row["bucket_id"])
        missing = _json_list(row.get("missing_modules"))
        if missing:
            self._note_missing(path, missing)
        if self.writer:
            tid, stop, frames = self.store.crashing_frames(row["id"])
            for f in frames:
                f["index"] = f.pop("idx")
            # This file's own name and format (a .zst copy of a plain core keeps its own).
            info = core_info(path, row["sha256"], None, row["core_time"],
                             self.compression.get(path))
            self.writer.write(jsonl.record(
                path, row["sha256"], "seen_before", row["executable"], _signal_from_row(row),
                row["signature"], row["bucket_id"], tid, frames, stop, info=info,
                unreliable=row.get("unreliable"), missing_modules=missing,
                warnings=_json_list(row.get("warnings"))))
        self.event("seen_before", path, bucket=row["bucket_id"], sha256=row["sha256"])

    def _forget_stale(self, path, sha256):
        """`path` now holds a copy of the stored core `sha256`: what the store has of the
        path's earlier content and that no longer stands for a crash goes (as record_ok
        deletes it when it stores a new core there)."""
        self.store.forget_stale_failed(path, sha256)
        self._forget_truncated(path, sha256)

    def _forget_truncated(self, path, sha256):
        """A truncated core stored from `path` whose content is the beginning of what the
        path holds now was this core, taken while it was still being written (closed
        half-written, then completed): the same crash, counted once (store.py's rules). Only
        for plain files, whose bytes can be compared; the stored core's content key is
        compared with that of the file's first bytes, as many as it had."""
        rows = self.store.truncated_cores_at(path, sha256)
        if not rows or self.compression.get(path):
            return
        for core_id, old_sha256, size, compression in rows:
            if compression or size is None:
                continue
            try:
                beginning = python_sparse_sha256(path, self.store.key_version, size)
            except OSError:
                continue
            if beginning == old_sha256:
                self.store.forget_core(core_id)

    def _failed(self, path, info, reason):
        reason = _one_line(reason)
        self._note_failed(path, reason)
        self.stats["failed"] += 1
        self.progress.failed += 1
        self.progress.done += 1
        if info is not None:
            self.store.record_failed(info, reason)
        if self.writer:
            if info is None:
                info = core_info(path, None, None, None, self.compression.get(path))
            self.writer.write(jsonl.record(path, info["sha256"], "failed", error=reason,
                                           info=info))
        self.event("failed", path, error=reason, sha256=info["sha256"] if info else None)

    def _resolve(self, sha256):
        """Copies of a core whose analysis is over: seen before now (or failed with it)."""
        for path, _info in self.duplicates.pop(sha256, ()):
            row = self.store.core_by_hash(sha256)
            if row is not None and row["status"] == "ok":
                self._forget_stale(path, sha256)
                self._seen_before(path, row)
            else:
                self._failed(path, None, "copy of a core that failed: %s"
                             % (row["error"] if row else "not analysed"))

    def resolve_duplicates(self):
        """Copies whose original never reported (none, unless the run was cut short)."""
        for sha256 in list(self.duplicates):
            self._resolve(sha256)


def _one_line(reason):
    """A failed core's reason as the store, the JSONL and the reports show it: one line (the
    first that says something), whatever produced it."""
    lines = [line.strip() for line in str(reason).splitlines() if line.strip()]
    return lines[0] if lines else "failed"


def _json_list(text):
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _note_missing(missing, out):
    """Which cores were analysed without some of the files they name, and what would help."""
    if not missing:
        return
    out.write("\nAnalysed without some of their files (%d core(s); their signatures may be "
              "less than they could be -- give --sysroot, --debug-dir or --debuginfod):\n"
              % len(missing))
    for path, modules in sorted(missing)[:20]:
        more = " (+%d more)" % (len(modules) - 3) if len(modules) > 3 else ""
        out.write("  %s: %s%s\n" % (path, ", ".join(modules[:3]), more))
    if len(missing) > 20:
        out.write("  ... and %d more cores\n" % (len(missing) - 20))


def _usage(text):
    sys.stderr.write("ehbt-triage: error: %s\n" % text)
    return EXIT_USAGE


def run(args):
    # Nothing is opened before the outputs are known to be usable: a wrong --html must not
    # cost a whole batch, and a FIFO among the inputs must not stop the run (discover.py).
    if not args.paths and not args.coredump_dir:
        args.coredump_dir = [spool.DEFAULT_DIR]
    inputs = list(args.paths) + list(args.coredump_dir)
    missing = [p for p in inputs if not os.path.lexists(p)]
    if missing:
        for p in missing:
            sys.stderr.write("ehbt-triage: error: %s: no such file or directory\n" % p)
        return EXIT_USAGE
    # Absolute from here on: the store, the JSONL and the HTML name each core by a path that
    # still resolves when they are read from another directory (or by a dask worker).
    inputs = [os.path.abspath(p) for p in inputs]
    try:
        ready = options.prepare(args)
    except options.UsageError as e:
        return _usage(e)
    signer, db_path, store = ready.signer, ready.db, ready.store
    engine_line, pool = ready.engine_line, ready.pool
    try:
        writer = jsonl.JsonlWriter(args.jsonl) if args.jsonl else None
    except OSError as e:
        pool.close()
        store.close()
        return _usage("--jsonl %s: %s" % (args.jsonl, e.strerror))

    found = discover(inputs)
    _note_skipped(found.skipped)

    state = Run(args, store, signer, found.cores, writer, found.compression)
    for path, why in found.rejected:
        state.failed.append((path, why))
        state.stats["failed"] += 1
        if writer:
            writer.write(jsonl.record(path, None, "failed", error=why,
                                      info=core_info(path, None, None, None)))

    def tick():
        # Local workers call this at least every 0.25 s: a batch of stored cores is committed
        # while they are slow. A dask run calls it only after each result: each is committed.
        if args.scheduler:
            store.flush()
        else:
            store.tick()
        state.progress.update()

    try:
        try:
            pool.run(found.cores, state.on_hash, state.on_result, tick,
                     likely_known=state.likely_known, settle=state.settle, reap_later=True)
            state.resolve_duplicates()
        finally:
            store.flush()  # every core reported so far, also after Ctrl-C
            state.progress.finish()
            if writer:
                writer.close()
        return _report(args, state, store, signer, found, db_path, engine_line)
    finally:
        pool.reap()  # the workers exit while the reports are written


def _report(args, state, store, signer, found, db_path, engine_line):
    """The text report (and the HTML one) of a batch that is over; the exit code."""
    out = sys.stdout
    buckets = store.buckets_with_cores(state.core_ids)
    places = {b["id"]: report_text.crash_place(signer, store.crashing_frames(
        b["example_core_id"])[2]) for b in buckets if b.get("example_core_id")}
    report_text.bucket_table(buckets, state.bucket_run_counts, len(state.core_ids), out,
                             places)
    report_text.failures(sorted(state.failed), [], out)
    _note_missing(state.missing, out)
    total = len(found.cores) + len(found.rejected)
    stats = dict(state.stats, total=total, rate=state.progress.rate(),
                 worker_rss_mib=state.worker_rss_kib / 1024.0)
    report_text.summary(stats, out, describe(db_path), engine_line)
    if args.html:
        from . import report_html  # only here: its imports cost every run start-up time

        try:
            report_html.write(args.html, store, state.bucket_run_counts, state.failed,
                              engine_line, signer)
            out.write("HTML report: %s\n" % os.path.abspath(args.html))
        except OSError as e:
            sys.stderr.write("ehbt-triage: error: --html %s: %s\n" % (args.html, e.strerror))
            return EXIT_FAILED
    out.flush()
    store.close()
    return EXIT_FAILED if state.failed or state.missing else EXIT_OK
