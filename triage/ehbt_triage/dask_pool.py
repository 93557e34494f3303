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

import collections
import os
import uuid

from . import forked, helper
from .feed import Feed
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


class DaskPool(Feed):
    """Fed as workers.WorkerPool is (feed.Feed: run(paths, ...) for a batch, or start() once,
    then submit(path) and step() for as long as cores keep coming, for `watch`), with busy(),
    renew() and close().

    dask calls back on its own thread when a task is over: the future is queued and a byte
    written to a pipe, which step() waits on along with its caller's handles (watch's inotify
    descriptor), so results are handled in the caller's thread, one at a time, and nothing
    polls. `max_inflight` bounds the tasks given to the scheduler at once (None: a batch gives
    it every core; watch gives it twice its threads, the rest waits here, bounded by watch's
    own queue)."""

    def __init__(self, scheduler, options, signer, timeout, retries=1):
        self.scheduler = scheduler
        self.client = self._connect()
        self.options = dict(options)
        self.options.setdefault("memory_limit", int(os.environ.get(
            "EHBT_TRIAGE_MEMORY_LIMIT", 4 << 30)))
        self.options["timeout"] = timeout
        self.env = {k: os.environ[k] for k in helper.FORWARDED_ENV if k in os.environ}
        self.signer = signer
        self.timeout = timeout
        self.retries = max(0, retries)
        self.run_id = uuid.uuid4().hex[:12]
        self.jobs = self._threads()
        self.max_inflight = 2 * self.jobs
        super().__init__()  # Feed: paths, the pending tasks
        self._what = {}  # future -> (kind, task), given to the scheduler and not handled yet
        self._done = collections.deque()  # futures dask said are over (filled on its thread)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def _connect(self):
        from distributed import Client

        return Client(self.scheduler, timeout=30, set_as_default=False)

    def _threads(self):
        workers = self.client.scheduler_info().get("workers", {})
        return max(1, sum(w.get("nthreads", 0) for w in workers.values()))

    def describe(self):
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        return "dask cluster %s (%d workers, %d threads)" % (
            info.get("address", "?"), len(workers), threads)

    # -- feeding -------------------------------------------------------------------------------

    def start(self, on_hash, on_result, likely_known=None, settle=None):
        """likely_known(task) -> True when the core is probably stored already (hashed in a
        task of its own first); settle(task) -> True when the parent has dealt with it itself
        (as workers.WorkerPool)."""
        self._on_hash, self._on_result = on_hash, on_result
        self._likely_known, self._settle = likely_known, settle

    def busy(self):
        return bool(self._pending or self._what or self._done)

    def run(self, *args, **kwargs):
        """A batch (Feed.run): every core is given to the scheduler at once. Blocks on
        completions, no polling: a poll interval would be added to every core; the deadlines
        are the helpers' (--timeout), so nothing needs a clock tick here."""
        self.max_inflight = None
        super().run(*args, **kwargs)

    def step(self, extra=(), timeout=None):
        """Gives the scheduler the pending cores it has room for, waits until a task is over,
        one of the `extra` handles is readable or `timeout` (None: no limit) passes, and
        handles the tasks that are over. Returns the readable `extra` handles."""
        self._dispatch()
        if not self._done:
            ready = forked.wait([self._wake_r] + list(extra),
                                timeout=timeout if self._what or extra else 0)
        else:
            ready = forked.wait(list(extra), timeout=0) if extra else []
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        while self._done:
            fut = self._done.popleft()
            what = self._what.pop(fut, None)
            if what is None:
                continue  # replaced by renew(), or handled already
            kind, task = what
            new = self._finished(fut, kind, task)
            if new is None:
                self._forget(task)
            else:
                self._track(new, "core", task)
            self._dispatch()
        return [h for h in ready if any(h is e for e in extra)]

    def _dispatch(self):
        while self._pending and (self.max_inflight is None
                                 or len(self._what) < self.max_inflight):
            task = self._pending.popleft()
            if self._settle is not None and self._settle(task):
                self._forget(task)
                continue
            path = self.paths[task]
            if self._likely_known is not None and self._likely_known(task):
                self._track(self._hash(path, task), "hash", task)
            else:
                self._track(self._analysis(path, task, with_hash=True), "both", task)

    def _track(self, fut, kind, task):
        self._what[fut] = (kind, task)
        fut.add_done_callback(self._over)

    def _over(self, fut):
        """On dask's callback thread: queued for step(), which the pipe wakes."""
        self._done.append(fut)
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # the pipe is full (step wakes anyway) or closed (the pool is closed)

    def _forget(self, task):
        self.paths.pop(task, None)

    def renew(self, options=None, signer=None):
        """watch's SIGHUP: a new connection to the scheduler (it may have been restarted), and
        fresh helpers on the workers from now on (a new generation in the options, by which
        helper.py picks its helpers: new debug files and sysroot contents are seen). The tasks
        in flight are given again through the new connection (the store decides what is new,
        so a core done twice is still counted once). Raises OSError or TimeoutError when the
        scheduler cannot be reached: the old connection is kept."""
        client = self._connect()
        old, self.client = self.client, client
        if options is not None:
            keep = {k: self.options[k] for k in ("memory_limit", "timeout")}
            self.options = dict(options, **keep)
        if signer is not None:
            self.signer = signer
        self.options["generation"] = self.options.get("generation", 0) + 1
        self.jobs = self._threads()
        if self.max_inflight is not None:
            self.max_inflight = 2 * self.jobs
        again, self._what = self._what, {}
        for fut, (kind, task) in again.items():
            fut.cancel()
            if kind == "hash":
                self._track(self._hash(self.paths[task], task), kind, task)
            else:
                self._track(self._analysis(self.paths[task], task, with_hash=kind == "both"),
                            kind, task)
        old.close()

    def close(self):
        """Cancels what is in flight (its cores are not recorded: a later run or a restarted
        watch does them) and closes the connection."""
        for fut in list(self._what):
            fut.cancel()
        self._what.clear()
        self.client.close()
        # -1 before the close: a late callback (_over) must not write to a reused number.
        fds, self._wake_r, self._wake_w = (self._wake_r, self._wake_w), -1, -1
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    # -- tasks ---------------------------------------------------------------------------------

    def _submit(self, fn, *args, kind, task, priority=0):
        return self.client.submit(fn, *args, key="ehbt-%s-%s-%d-%d" % (
            kind, self.run_id, self.options.get("generation", 0), task), pure=False,
            retries=self.retries, priority=priority)

    def _hash(self, path, task):
        return self._submit(hash_core, path, self.options["key_version"], kind="hash",
                            task=task)

    def _analysis(self, path, task, with_hash):
        # Analyses of hashed cores first: they are nearer to their result.
        return self._submit(helper.analyse_on_worker, path, self.options, self.signer,
                            self.env, self.timeout, with_hash, kind="core", task=task,
                            priority=0 if with_hash else 1)

    def _finished(self, fut, kind, task):
        """Hands a finished task's outcome to the run; returns the analysis task it started."""
        on_hash, on_result = self._on_hash, self._on_result
        if fut.status == "error":
            on_result(task, {"error": _reason(fut.exception())})
            return None
        if fut.status != "finished":  # cancelled, or lost with the scheduler
            on_result(task, {"error": "dask task %s" % fut.status})
            return None
        value = fut.result()
        if kind == "hash":
            if value[0] == "fail":
                on_result(task, {"error": value[1], "unhashed": True})
            elif on_hash(task, *value):
                return self._analysis(self.paths[task], task, with_hash=False)
        elif kind == "both" and "hash" in value:
            # Seen before (or a copy of a core in flight): on_hash has counted it already.
            if on_hash(task, *value.pop("hash")):
                on_result(task, value)
        else:
            on_result(task, value)
        return None
