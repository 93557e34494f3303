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
KilledWorker. The scheduler counts a worker's death against every task that worker held
(with one thread, the one it ran and those queued behind it), so a KilledWorker core is run
once more alone -- nothing else in flight on the cluster from this process -- and recorded
failed only when it kills workers alone too. At most one such retry per core, and at most
SOLO_CAP cores waiting for theirs (past it, a KilledWorker core is failed at once). Any
other task exception is retried `retries` times by the scheduler, then recorded as that
core failed, with the reason; the run goes on.

The connection: when it is lost (the scheduler stopped or restarted, the network), dask
cancels the tasks in flight; they are kept here and given again once connected, as are the
cores that wait meanwhile (the store decides what is new, so a core done twice is counted
once). Connecting again runs on a thread of its own (RECONNECT_TIMEOUT an attempt, then
BACKOFF_FIRST doubling up to BACKOFF_MAX between attempts), so the caller's loop is never
held by it: `watch` keeps taking cores into its bounded queue and answers its signals. A
batch run gives up after GIVE_UP_AFTER seconds without a scheduler (its remaining cores are
failed, with the reason); `watch` sets give_up_after = None and waits for as long as it
runs. Every client of the pool runs on the first one's IO loop: a dask Client made with a
loop of its own starts a thread for it, and one that fails to connect never stops it (a
thread and three descriptors per failed attempt, some 2,900 a day at BACKOFF_MAX).
"""

import collections
import os
import threading
import time
import uuid

from . import forked, helper
from .feed import Feed
from .plain_core import DecompressError

CONNECT_TIMEOUT = 30.0  # the first connection (start-up waits for it: nothing to do without)
RECONNECT_TIMEOUT = 5.0  # one attempt to connect again, on its own thread
BACKOFF_FIRST = 1.0  # seconds between two failed attempts, doubled each time ...
BACKOFF_MAX = 30.0  # ... up to this
GIVE_UP_AFTER = 60.0  # a batch run without a scheduler for this long fails what is left
RESULT_TIMEOUT = 60.0  # fetching one task's result from its worker
SOLO_CAP = 32  # cores waiting to be run alone after a KilledWorker
LOST_CHECK = 5.0  # an idle watch looks at its connection this often
MAX_UNEXPLAINED = 3  # tasks cancelled with the connection up: given again this often, no more


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


def _killed_worker(exc):
    return type(exc).__name__ == "KilledWorker"


def _reason(exc, alone=False):
    if _killed_worker(exc):
        return ("dask worker died while analysing it%s (given up by the scheduler past its "
                "allowed-failures)" % (" alone" if alone else ""))
    return "dask task failed: %s: %s" % (type(exc).__name__, exc)


def _quiet(*_args, **_fields):
    pass


class _Attempt:
    """One attempt to connect to the scheduler, on a thread: the client (with the cluster's
    thread count) or the error; a byte on the pool's wake pipe when over."""

    def __init__(self, pool):
        self.client = self.error = None
        self.threads = 0
        self.done = False
        self.started = time.monotonic()
        threading.Thread(target=self._run, args=(pool,), name="ehbt-triage-connect",
                         daemon=True).start()

    def _run(self, pool):
        try:
            from distributed import Client

            client = Client(pool.scheduler, loop=pool.loop, timeout=RECONNECT_TIMEOUT,
                            set_as_default=False)
            try:
                self.threads = _threads(client)
            except Exception:
                pass  # not known: the pool keeps its count
            with pool.lock:  # (close() looks at the attempt under the same lock)
                unused = pool.closed
                if not unused:
                    self.client = client
            if unused:  # closed while this was connecting: nobody will use it
                client.close(timeout=RECONNECT_TIMEOUT)
        except Exception as e:  # OSError, TimeoutError, a CommClosedError ...
            self.error = e
        self.done = True
        pool.wake()


def _threads(client):
    """The cluster's threads (0: no worker yet)."""
    workers = client.scheduler_info().get("workers", {})
    return sum(w.get("nthreads", 0) for w in workers.values())


def _close_later(client):
    """Closes a client that is done with on a thread (a close waits for the scheduler's
    answer, or for the end of the client's own attempts to reconnect)."""
    def close():
        try:
            client.close(timeout=RECONNECT_TIMEOUT)
        except Exception:
            pass

    threading.Thread(target=close, name="ehbt-triage-close", daemon=True).start()


class DaskPool(Feed):
    """Fed as workers.WorkerPool is (feed.Feed: run(paths, ...) for a batch, or start() once,
    then submit(path) and step() for as long as cores keep coming, for `watch`), with busy(),
    renew() and close().

    dask calls back on its own thread when a task is over: the outcome is fetched there (a
    result comes from the worker over the network), the future queued and a byte written to
    a pipe, which step() waits on along with its caller's handles (watch's inotify
    descriptor), so results are handled in the caller's thread, one at a time, and nothing
    polls. `max_inflight` bounds the tasks given to the scheduler at once (None: a batch gives
    it every core; watch gives it twice its threads, the rest waits here, bounded by watch's
    own queue). `log(event, level=..., **fields)`: where the connection's events and the
    retries of a core alone are said (watch's log; a batch says nothing)."""

    def __init__(self, scheduler, options, signer, timeout, retries=1):
        from distributed import Client

        self.scheduler = scheduler
        self.client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        self.loop = self.client.loop  # every later client's too (see the module doc)
        self.lock = threading.Lock()
        self.options = dict(options)
        self.options.setdefault("memory_limit", int(os.environ.get(
            "EHBT_TRIAGE_MEMORY_LIMIT", 4 << 30)))
        self.options["timeout"] = timeout
        self.env = {k: os.environ[k] for k in helper.FORWARDED_ENV if k in os.environ}
        self.signer = signer
        self.timeout = timeout
        self.retries = max(0, retries)
        self.run_id = uuid.uuid4().hex[:12]
        self._serial = 0  # submissions so far (each task key has its own)
        self.jobs = max(1, _threads(self.client))
        self.max_inflight = 2 * self.jobs
        self.log = _quiet
        # (EHBT_TRIAGE_TEST_GIVE_UP: a shorter wait, for the test of a scheduler that never
        # comes back.)
        self.give_up_after = float(os.environ.get("EHBT_TRIAGE_TEST_GIVE_UP", "")
                                   or GIVE_UP_AFTER)
        self.closed = False
        super().__init__()  # Feed: paths, the pending tasks
        self._what = {}  # future -> (kind, task), given to the scheduler and not handled yet
        self._done = collections.deque()  # (future, outcome) dask said are over (its thread)
        self._again = collections.deque()  # (kind, task) to give again (connection lost)
        self._solo = collections.deque()  # (kind, task) to run alone (KilledWorker)
        self._soloed = set()  # tasks run alone, or waiting to be
        self._solo_task = None  # the task being run alone
        self._unexplained = {}  # task -> times cancelled while connected
        self._attempt = None  # the connection attempt in progress (_Attempt)
        self._stale = []  # clients of lost connections, still trying on their own
        self._next_attempt = None  # monotonic time of the next attempt, None: none wanted
        self._backoff = BACKOFF_FIRST
        self._lost_since = None  # monotonic time the connection went, None: connected
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def describe(self):
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        return "dask cluster %s (%d workers, %d threads)" % (
            info.get("address", "?"), len(workers), threads)

    def wake(self):
        """Makes step() look (from any thread)."""
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # the pipe is full (step wakes anyway) or closed (the pool is closed)

    # -- feeding -------------------------------------------------------------------------------

    def start(self, on_hash, on_result, likely_known=None, settle=None):
        """likely_known(task) -> True when the core is probably stored already (hashed in a
        task of its own first); settle(task) -> True when the parent has dealt with it itself
        (as workers.WorkerPool)."""
        self._on_hash, self._on_result = on_hash, on_result
        self._likely_known, self._settle = likely_known, settle

    def busy(self):
        return bool(self._pending or self._what or self._done or self._again or self._solo
                    or self._solo_task is not None)

    def run(self, *args, **kwargs):
        """A batch (Feed.run): every core is given to the scheduler at once. Blocks on
        completions, no polling: a poll interval would be added to every core; the deadlines
        are the helpers' (--timeout), so nothing needs a clock tick here."""
        self.max_inflight = None
        super().run(*args, **kwargs)

    def connected(self):
        return self.client is not None and self.client.status == "running"

    def step(self, extra=(), timeout=None):
        """Gives the scheduler the pending cores it has room for, waits until a task is over,
        one of the `extra` handles is readable, a connection attempt is over or due, or
        `timeout` (None: no limit) passes, and handles the tasks that are over. Returns the
        readable `extra` handles."""
        self._check_connection()
        self._dispatch()
        if not self._done:
            wait = timeout
            if not (self._what or extra or self._attempt or self._next_attempt is not None):
                wait = 0  # nothing to wait for
            if self._attempt is None and self._next_attempt is not None:
                due = max(0.0, self._next_attempt - time.monotonic())
                wait = due if wait is None else min(wait, due)
            elif extra and not self._what:
                # Idle under watch: nothing would say that the connection went (no task to
                # be cancelled), so its state is looked at every LOST_CHECK seconds.
                wait = LOST_CHECK if wait is None else min(wait, LOST_CHECK)
            ready = forked.wait([self._wake_r] + list(extra), timeout=wait)
        else:
            ready = forked.wait(list(extra), timeout=0) if extra else []
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        self._check_connection()
        while self._done:
            fut, outcome = self._done.popleft()
            what = self._what.pop(fut, None)
            if what is None:
                continue  # replaced by renew() or a reconnection, or handled already
            kind, task = what
            after = self._finished(outcome, kind, task)
            if after == "over":
                if task == self._solo_task:
                    self._solo_task = None
                self._forget(task)
            elif after == "analyse":  # hashed, new: its analysis (alone still, if it was)
                if self.connected():
                    self._give("core", task)
                else:
                    self._keep("core", task)
            # "kept": given again later (once connected, or alone)
            self._dispatch()
        return [h for h in ready if any(h is e for e in extra)]

    def _dispatch(self):
        if not self.connected():
            return
        if self._solo or self._solo_task is not None:
            # A core run alone: once nothing else is in flight, and nothing else meanwhile,
            # so that a worker it kills holds it alone.
            if self._solo_task is None and not self._what:
                kind, task = self._solo.popleft()
                self._solo_task = task
                self.log("retry_alone", path=self.paths[task],
                         note="given up with a worker that died; run alone once more")
                self._give(kind, task)
            return
        room = lambda: self.max_inflight is None or len(self._what) < self.max_inflight  # noqa
        while self._again and room():
            self._give(*self._again.popleft())
        while self._pending and room():
            task = self._pending.popleft()
            if self._settle is not None and self._settle(task):
                self._forget(task)
                continue
            if self._likely_known is not None and self._likely_known(task):
                self._give("hash", task)
            else:
                self._give("both", task)

    def _give(self, kind, task):
        """Submits the task of that kind: "hash", "both" (hash and analysis in one) or
        "core" (the analysis of a hashed core)."""
        path = self.paths[task]
        if kind == "hash":
            self._track(self._hash(path, task), kind, task)
        else:
            self._track(self._analysis(path, task, with_hash=kind == "both"), kind, task)

    def _track(self, fut, kind, task):
        self._what[fut] = (kind, task)
        fut.add_done_callback(self._over)

    def _over(self, fut):
        """On dask's callback thread: the outcome fetched, queued for step(), which the pipe
        wakes. (`in` on a dict the main thread changes is atomic in CPython.)"""
        if self.closed:
            return
        try:
            if fut not in self._what:
                outcome = ("let go", None)  # given again meanwhile: no result to fetch
            elif fut.status == "finished":
                outcome = ("finished", fut.result(timeout=RESULT_TIMEOUT))
            elif fut.status == "error":
                outcome = ("error", fut.exception(timeout=RESULT_TIMEOUT))
            else:
                outcome = (fut.status, None)  # cancelled (the connection went), lost
        except Exception as e:  # the connection went while fetching, a timeout
            outcome = ("lost", e)
        self._done.append((fut, outcome))
        self.wake()

    def _forget(self, task):
        self.paths.pop(task, None)
        self._soloed.discard(task)
        self._unexplained.pop(task, None)

    def _keep(self, kind, task):
        """A task in flight that must be given again (its connection went)."""
        if task == self._solo_task:
            self._solo_task = None
            self._solo.appendleft((kind, task))
        else:
            self._again.append((kind, task))

    # -- the connection ------------------------------------------------------------------------

    def _check_connection(self):
        if self._attempt is not None and self._attempt.done:
            self._attempt_over()
        now = time.monotonic()
        if self.client is not None and not self.connected():
            # Lost, whether or not an attempt (renew's) is in progress.
            self._lost_since = now
            self.log("scheduler_lost", level="warning", scheduler=self.scheduler,
                     in_flight=len(self._what),
                     note="cores in flight and arriving are kept; connecting again")
            self._keep_in_flight()
            # Not closed now: it is trying to connect again on its own (for its timeout,
            # then closes itself), and closing it in the middle makes dask print a traceback.
            self._stale.append(self.client)
            self.client = None
            if self._attempt is None:
                self._next_attempt = now
        self._sweep_stale()
        if self._attempt is None and self._next_attempt is not None and now >= self._next_attempt:
            self._next_attempt = None
            self._attempt = _Attempt(self)

    def _sweep_stale(self):
        """Closes the clients of lost connections that connected again on their own (unused:
        their tasks were given again through the new connection), and forgets those that
        gave up and closed."""
        for client in list(self._stale):
            if client.status == "running":
                _close_later(client)
            if client.status != "connecting":
                self._stale.remove(client)

    def _keep_in_flight(self):
        """Every task in flight is to be given again; their futures are let go (a late
        outcome is ignored). Not cancelled one by one: a cancel is a round trip to the
        scheduler, which may be gone; the scheduler lets go of a client's tasks when the
        client goes (a lost connection, or the old client of a reconnection, closed)."""
        what, self._what = self._what, {}
        for kind, task in what.values():
            self._keep(kind, task)

    def _attempt_over(self):
        attempt, self._attempt = self._attempt, None
        now = time.monotonic()
        if attempt.client is not None:
            old, self.client = self.client, attempt.client
            self._keep_in_flight()  # given again through the new connection
            if old is not None:
                _close_later(old)
            if attempt.threads:  # (a scheduler just restarted may have no worker yet)
                self.jobs = attempt.threads
            if self.max_inflight is not None:
                self.max_inflight = 2 * self.jobs
            down = None if self._lost_since is None else now - self._lost_since
            self._lost_since = None
            self._backoff = BACKOFF_FIRST
            self.log("scheduler_connected", scheduler=self.scheduler, threads=self.jobs,
                     down_s=down, again=len(self._again) + len(self._solo),
                     waiting=len(self._pending))
            return
        error = attempt.error
        if self.client is not None:
            # renew()'s attempt failed with the old connection still up: it is kept (if it
            # went meanwhile, the next _check_connection says so).
            self.log("reload_failed", level="error", scheduler=self.scheduler, error=error,
                     note="keeping the old connection")
            return
        delay, self._backoff = self._backoff, min(BACKOFF_MAX, 2 * self._backoff)
        down = now - (self._lost_since or attempt.started)
        if self.give_up_after is not None and down >= self.give_up_after:
            self._give_up(error)
            return
        self._next_attempt = now + delay
        self.log("scheduler_unreachable", level="warning", scheduler=self.scheduler,
                 error=error, retry_in_s=delay, down_s=down,
                 waiting=len(self._pending) + len(self._again) + len(self._solo))

    def _give_up(self, error):
        """A batch without a scheduler for too long: what is left is failed."""
        reason = "dask scheduler %s unreachable: %s" % (self.scheduler, error)
        left = [t for _k, t in self._again] + [t for _k, t in self._solo] + list(self._pending)
        self._again.clear()
        self._solo.clear()
        self._pending.clear()
        for task in left:
            self._on_result(task, {"error": reason})
            self._forget(task)

    def renew(self, options=None, signer=None):
        """watch's SIGHUP: fresh helpers on the workers from now on (a new generation in the
        options, by which helper.py picks its helpers: new debug files and sysroot contents
        are seen), and a new connection to the scheduler (it may have been restarted), made
        on a thread: the old one, while it works, goes on meanwhile. Once connected, the tasks
        in flight are given again through the new connection (the store decides what is new,
        so a core done twice is still counted once); when the scheduler cannot be reached, the
        old connection is kept if it still works (reload_failed), else the attempts go on
        (scheduler_unreachable). Never waits for the network."""
        if options is not None:
            keep = {k: self.options[k] for k in ("memory_limit", "timeout")}
            self.options = dict(options, **keep)
        if signer is not None:
            self.signer = signer
        self.options["generation"] = self.options.get("generation", 0) + 1
        self._backoff = BACKOFF_FIRST
        if self._attempt is None:
            self._next_attempt = None
            self._attempt = _Attempt(self)

    def close(self, wait=True):
        """Lets go of what is in flight (its cores are not recorded: a later run or a
        restarted watch does them; the scheduler drops the tasks of a client that closes)
        and closes the connection, waiting RECONNECT_TIMEOUT at most (an attempt in progress
        is let go: its thread closes what it connects). `wait` is the local pool's: the
        connection is closed either way."""
        with self.lock:
            self.closed = True
            late = self._attempt.client if self._attempt is not None else None
        self._what.clear()
        for client in [self.client, late] + self._stale:
            if client is not None and client.status == "running":
                try:
                    client.close(timeout=RECONNECT_TIMEOUT)
                except Exception:
                    pass  # the scheduler went meanwhile: nothing to tell it
        # -1 before the close: a late callback (_over) must not write to a reused number.
        fds, self._wake_r, self._wake_w = (self._wake_r, self._wake_w), -1, -1
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    # -- tasks ---------------------------------------------------------------------------------

    def _submit(self, fn, *args, kind, task, priority=0):
        # A key of its own for every submission: a task given again (a reconnection, a retry
        # alone) must not meet its earlier self, which the scheduler may still hold (erred).
        self._serial += 1
        return self.client.submit(fn, *args, key="ehbt-%s-%s-%d-%d-%d" % (
            kind, self.run_id, self.options.get("generation", 0), task, self._serial),
            pure=False, retries=self.retries, priority=priority)

    def _hash(self, path, task):
        return self._submit(hash_core, path, self.options["key_version"], kind="hash",
                            task=task)

    def _analysis(self, path, task, with_hash):
        # Analyses of hashed cores first: they are nearer to their result.
        return self._submit(helper.analyse_on_worker, path, self.options, self.signer,
                            self.env, self.timeout, with_hash, kind="core", task=task,
                            priority=0 if with_hash else 1)

    def _finished(self, outcome, kind, task):
        """Hands a finished task's outcome to the run; returns "over", "analyse" (a hash
        task whose core is new) or "kept" (to be given again: _again or _solo)."""
        on_hash, on_result = self._on_hash, self._on_result
        status, value = outcome
        if status == "error":
            alone = task in self._soloed
            if _killed_worker(value) and not alone and len(self._solo) < SOLO_CAP:
                self._soloed.add(task)
                self._solo.append((kind, task))
                return "kept"
            on_result(task, {"error": _reason(value, alone)})
            return "over"
        if status != "finished":  # cancelled (the connection went), or its result lost
            if not self.connected():
                self._keep(kind, task)  # the reconnection gives it again
                return "kept"
            n = self._unexplained.get(task, 0) + 1
            self._unexplained[task] = n
            if n <= MAX_UNEXPLAINED:
                self._keep(kind, task)
                return "kept"
            on_result(task, {"error": "dask task %s%s" % (
                status, ": %s" % value if value is not None else "")})
            return "over"
        if kind == "hash":
            if value[0] == "fail":
                on_result(task, {"error": value[1], "unhashed": True})
            elif on_hash(task, *value):
                return "analyse"
        elif kind == "both" and "hash" in value:
            # Seen before (or a copy of a core in flight): on_hash has counted it already.
            if on_hash(task, *value.pop("hash")):
                on_result(task, value)
        else:
            on_result(task, value)
        return "over"

