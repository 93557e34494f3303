# SPDX-License-Identifier: Apache-2.0
"""The checks a batch run (run.py) and ``watch`` (watch.py) make of the options they share,
before any work starts, and what they open from them: the store, the engine, and with
--scheduler the dask cluster. One place, so that both commands refuse the same mistakes with
the same words (a mistyped --sysroot would only make every signature worse, silently; a
report that cannot be written should fail in the first second, not after the batch).
"""

import os

from . import engine
from .credentials import is_postgres, mask
from .outputs import check_output
from .schema import StoreError
from .signature import Signer
from .stores import default_path, describe, open_store


class UsageError(Exception):
    """An option that cannot be used: the command says it and exits with status 2."""


def not_a_directory(path):
    """Why `path` is no directory to look files up in (None when it is one)."""
    if os.path.isdir(path):
        return None
    return "not a directory" if os.path.lexists(path) else "no such directory"


def check_lookup_dirs(args):
    """--sysroot and --debug-dir name directories; made absolute (the workers, a dask worker
    too, resolve them from another working directory)."""
    for option, dirs in (("--sysroot", args.sysroot), ("--debug-dir", args.debug_dir)):
        for d in dirs:
            problem = not_a_directory(d)
            if problem:
                raise UsageError("%s %s: %s" % (option, d, problem))
    args.sysroot = [os.path.abspath(d) for d in args.sysroot]
    args.debug_dir = [os.path.abspath(d) for d in args.debug_dir]


def make_signer(args):
    """The Signer of --top and --skip (a --skip pattern the skip list cannot use is named)."""
    try:
        return Signer(args.top, args.skip)
    except Exception as e:
        raise UsageError(e) from None


def check_outputs(args):
    """--html and --jsonl can be written; returns the store's --db value (a SQLite path made
    absolute, as the HTML report names it, and checked the same way)."""
    for option, path in (("--html", args.html), ("--jsonl", args.jsonl)):
        problem = check_output(path) if path else None
        if problem:
            raise UsageError("%s %s: %s" % (option, path, problem))
    db = args.db or default_path()
    if not is_postgres(db):
        db = os.path.abspath(db)
        problem = check_output(db)
        if problem:
            raise UsageError("--db %s: %s" % (db, problem))
    return db


def open_checked_store(db, signer):
    """The store of `db`; the signer then signs as the store's buckets were made (a store
    keeps its signature version: docs/triage.md, "Signature versions")."""
    try:
        store = open_store(db)
    except StoreError as e:
        raise UsageError("cannot open the database %s" % mask(e, db)) from None
    except ImportError as e:
        raise UsageError("--db %s needs psycopg (Debian: python3-psycopg): %s"
                         % (describe(db), e)) from None
    signer.version = store.signature_version
    return store


def engine_line():
    """The engine's one-line description; imports the package here, before workers fork."""
    try:
        line = engine.describe()
    except engine.AnalysisError as e:
        raise UsageError(e) from None
    if engine.mode() == "cli" and not engine.find_cli():
        raise UsageError("no engine: the ehbt Python package is not importable and no ehbt "
                         "binary was found (set EHBT_BIN)")
    return line


def worker_options(args, store, **extra):
    """What every worker (local or on a dask cluster) is given to analyse a core.
    send_frames: the crashing thread's frames as the document has them are sent back only
    for the JSONL, which is the one place the parent uses them (the store takes the rows)."""
    return dict({"sysroots": args.sysroot, "debug_dirs": args.debug_dir,
                 "debuginfod": args.debuginfod, "key_version": store.key_version,
                 "send_frames": bool(getattr(args, "jsonl", None))}, **extra)


def make_pool(args, options, signer):
    """The executor: local worker processes (-j), or the dask cluster of --scheduler. Returns
    (pool, a description of the cluster or None)."""
    if not getattr(args, "scheduler", None):
        from .workers import WorkerPool

        return WorkerPool(args.jobs, options, signer, timeout=args.timeout), None
    try:
        from .dask_pool import DaskPool

        pool = DaskPool(args.scheduler, options, signer, timeout=args.timeout,
                        retries=args.retries)
        return pool, pool.describe()
    except ImportError as e:
        raise UsageError("--scheduler needs dask.distributed (Debian: python3-distributed): "
                         "%s" % e) from None
    except (OSError, TimeoutError) as e:
        raise UsageError("--scheduler %s: cannot connect: %s" % (args.scheduler, e)) from None


class Prepared:
    """What prepare() checked and opened."""

    def __init__(self, signer, db, store, engine_line, pool):
        self.signer, self.db, self.store = signer, db, store
        self.engine_line, self.pool = engine_line, pool


def prepare(args, **worker_extra):
    """Every check and opening a batch run and watch share, in the order that costs least
    when something is wrong: the lookup directories, the signer, the outputs, the store, the
    engine, the executor. Raises UsageError (nothing is left open then)."""
    check_lookup_dirs(args)
    signer = make_signer(args)
    db = check_outputs(args)
    store = open_checked_store(db, signer)
    try:
        line = engine_line()
        pool, cluster = make_pool(args, worker_options(args, store, **worker_extra), signer)
    except UsageError:
        store.close()
        raise
    if cluster:
        line += "; analysed on " + cluster
    return Prepared(signer, db, store, line, pool)
