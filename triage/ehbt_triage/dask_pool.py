# SPDX-License-Identifier: Apache-2.0
"""The dask.distributed executor: the same run() contract as workers.WorkerPool, with the
work done on an existing cluster (``--scheduler tcp://HOST:PORT``).

One task per core, on the workers (which must see the core paths under the same names): the
worker's long-lived helper process (helper.py) hashes the core (its content key) and
analyses it; this process then decides, as the local mode does, whether it is new (stored,
one transaction per core) or seen before (the analysis is dropped). A dask round trip costs
more than analysing a core, so a core is not hashed first and analysed in a second task --
except when the store already has a core of that path, size and time (likely a re-run over
the same spool): then a hash task comes first and the analysis only if the content is new.

Failures: a core the engine cannot use, crashes on, or hangs on comes back as an ordinary
result with its error (the helper contains it). A dask worker that dies mid-task makes the
scheduler run the task elsewhere; a task that kills workers again and again ends as
KilledWorker, and any task exception is retried `retries` times: both are then recorded as
that core failed, with the reason, and the run goes on.
"""

import os
import uuid

from . import helper
from .plain_core import DecompressError


def hash_core(path, key_version):
    """Runs on a worker: (sha256, size, mtime), or ("fail", reason) for an unreadable file."""
    try:
        st = os.stat(path)
        from .workers import content_key

        return content_key(path, key_version), st.st_size, st.st_mtime
    except OSError as e:
        return ("fail", "unreadable on the worker: %s" % (e.strerror or e))
    except DecompressError as e:
        return ("fail", str(e))


def _reason(exc):
    name = type(exc).__name__
    if name == "KilledWorker":
        return "dask worker died while analysing it (task given up after repeated deaths)"
    return "dask task failed: %s: %s" % (name, exc)


class DaskPool:
    def __init__(self, scheduler, options, signer, timeout, retries=1):
        from distributed import Client

        self.client = Client(scheduler, timeout=30, set_as_default=False)
        self.options = dict(options)
        self.options.setdefault("memory_limit", int(os.environ.get(
            "EHBT_TRIAGE_MEMORY_LIMIT", 4 << 30)))
        self.options["timeout"] = timeout
        self.env = {k: os.environ[k] for k in helper.FORWARDED_ENV if k in os.environ}
        self.signer = signer
        self.timeout = timeout
        self.retries = max(0, retries)
        self.run_id = uuid.uuid4().hex[:12]

    def describe(self):
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        return "dask cluster %s (%d workers, %d threads)" % (
            info.get("address", "?"), len(workers), threads)

    def _submit(self, fn, *args, kind, task, priority=0):
        return self.client.submit(fn, *args, key="ehbt-%s-%s-%d" % (kind, self.run_id, task),
                                  pure=False, retries=self.retries, priority=priority)

    def run(self, paths, on_hash, on_result, on_tick=lambda: None, likely_known=None,
            settle=None):
        """likely_known(task) -> True when the core is probably stored already (hash first);
        settle(task) -> True when the parent has dealt with it itself (as workers.WorkerPool)."""
        from distributed import as_completed

        # Blocking on completions, no polling: a poll interval would be added to every core.
        # Deadlines are the helpers' (--timeout), so nothing needs a clock tick here.
        what = {}  # future -> (kind, task)
        for task, path in enumerate(paths):
            if settle is not None and settle(task):
                continue
            if likely_known is not None and likely_known(task):
                fut = self._submit(hash_core, path, self.options["key_version"], kind="hash",
                                   task=task)
                what[fut] = ("hash", task)
            else:
                what[self._analysis(path, task, with_hash=True)] = ("both", task)
        pending = as_completed(list(what), loop=self.client.loop)
        try:
            for fut in pending:
                kind, task = what.pop(fut)
                new = self._finished(fut, kind, task, paths, on_hash, on_result)
                if new is not None:
                    what[new] = ("core", task)
                    pending.add(new)
                on_tick()
        finally:
            for fut in what:
                fut.cancel()
            self.client.close()

    def _analysis(self, path, task, with_hash):
        # Analyses of hashed cores first: they are nearer to their result.
        return self._submit(helper.analyse_on_worker, path, self.options, self.signer,
                            self.env, self.timeout, with_hash, kind="core", task=task,
                            priority=0 if with_hash else 1)

    def _finished(self, fut, kind, task, paths, on_hash, on_result):
        """Hands a finished task's outcome to the run; returns the analysis task it started."""
        if fut.status == "error":
            on_result(task, {"error": _reason(fut.exception())})
            return None
        if fut.status == "cancelled":
            on_result(task, {"error": "dask task cancelled"})
            return None
        value = fut.result()
        if kind == "hash":
            if value[0] == "fail":
                on_result(task, {"error": value[1], "unhashed": True})
            elif on_hash(task, *value):
                return self._analysis(paths[task], task, with_hash=False)
        elif kind == "both" and "hash" in value:
            # Seen before (or a copy of a core in flight): on_hash has counted it already.
            if on_hash(task, *value.pop("hash")):
                on_result(task, value)
        else:
            on_result(task, value)
        return None
