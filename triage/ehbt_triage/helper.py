# SPDX-License-Identifier: Apache-2.0
"""The analysis helper of a dask worker: a long-lived child process that runs the local
workers' loop (workers.worker_main), so a dask task keeps the local mode's isolation.

Why a child, not the dask worker itself: an engine crash (SIGSEGV), a hang or a memory
blow-up must fail that core only. In the child, the crash kills the helper and the task
reports "worker died: SIGSEGV"; a core past --timeout gets the helper SIGKILLed; RLIMIT_AS
caps its memory. The dask worker process survives all three and starts a fresh helper.

Why long-lived: the helper keeps its ehbt.ImageStore across cores (images keyed by path and
build-id inside it), so a batch of cores from one build parses each library once per helper,
as a local worker does.

Why subprocess, not multiprocessing: dask runs tasks in daemonic worker processes, which
multiprocessing forbids to have children, and forking a process with an event loop and a
thread pool is asking for a lock held by another thread. A fresh interpreter
(``python3 -m ehbt_triage.helper FD``) talks over a socketpair with the same pickled
messages as a local worker.

A helper exits when the dask worker goes away: it watches its parent pid (PR_SET_PDEATHSIG
would fire when the *thread* that started it exits, not the process).
"""

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection, wait

from .workers import death_reason

# Passed from the ehbt-triage process to the helpers, so that the fault-injection tests and
# the memory cap behave as in the local mode.
FORWARDED_ENV = ("EHBT_TRIAGE_TEST_FAULT", "EHBT_TRIAGE_TEST_DELAY", "EHBT_TRIAGE_MEMORY_LIMIT",
                 "EHBT_TRIAGE_ENGINE")


def _package_path():
    """The sys.path entries the helper needs: where ehbt_triage and ehbt come from here."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here]
    try:
        import ehbt

        paths.append(os.path.dirname(os.path.dirname(os.path.abspath(ehbt.__file__))))
    except Exception:
        pass  # the helper then says why in its own words (engine.mode)
    return paths


class Helper:
    """One helper process, used by one task at a time."""

    def __init__(self, options, signer, env):
        self.key = pickle.dumps((options, signer, env))
        self.options, self.signer, self.env = options, signer, env
        self.proc = self.conn = None
        self.cores = 0

    def _start(self):
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(_package_path() + [env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ehbt_triage.helper", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(mine.detach())
        self.conn.send((self.options, self.signer))
        self.cores = 0

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.conn.close()
        self.proc = self.conn = None

    def analyse(self, path, timeout, with_hash=False):
        """The result dict of one core, as a local worker's ("done", task, result). With
        with_hash the helper hashes the core first (the local workers' "core" exchange) and
        the result carries "hash": (sha256, size, mtime) -- also when the analysis then
        failed, so that the failure can be stored under the core's content key."""
        if self.proc is None or self.proc.poll() is not None:
            self.kill()  # died while idle: not this core's fault
            self._start()
        deadline = time.monotonic() + timeout  # hashing and analysis, as in the local mode
        digest = None
        try:
            self.conn.send(("core" if with_hash else "analyse", 0, path))
        except OSError:
            pass  # dead: seen below
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return self._with(digest, {"error": "timed out after %gs" % timeout})
            # The socket reaches EOF when the helper dies, so waiting on it sees both.
            if not wait([self.conn], timeout=left):
                continue
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                try:
                    code = self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    code = None
                self.kill()
                return self._with(digest, {"error": death_reason(code)})
            if msg[0] == "hash":
                digest = tuple(msg[2:5])
                self.conn.send(("go",))
            elif msg[0] == "fail":
                return {"error": msg[2], "unhashed": True}
            else:
                self.cores += 1
                return self._with(digest, msg[2])

    @staticmethod
    def _with(digest, result):
        if digest is not None:
            result["hash"] = digest
        return result


_lock = threading.Lock()
_idle = []  # helpers of this dask worker process not running a task (one per task thread)


def analyse_on_worker(path, options, signer, env, timeout, with_hash=False):
    """Runs in a dask worker thread: one core through one of this process's helpers."""
    key = pickle.dumps((options, signer, env))
    with _lock:
        helper = next((h for h in _idle if h.key == key), None)
        if helper is not None:
            _idle.remove(helper)
    if helper is None:
        helper = Helper(options, signer, env)
    try:
        result = helper.analyse(path, timeout, with_hash)
    except BaseException:
        helper.kill()
        raise
    result["host"] = socket.gethostname()
    result["helper_pid"] = helper.proc.pid if helper.proc else None
    _keep_idle(helper)
    return result


def _idle_cap():
    """How many idle helpers a dask worker process keeps: two per task thread, so that two
    runs with different options sharing the cluster each keep theirs warm."""
    try:
        from distributed import get_worker

        worker = get_worker()
        state = getattr(worker, "state", None)  # dask 2022.12: worker.state.nthreads
        return 2 * max(1, int(getattr(state, "nthreads", None) or worker.nthreads))
    except Exception:  # not in a dask worker (a test calling this directly), older dask
        return 2


def _keep_idle(helper):
    """Keeps the helper for the next task of the same options, within _idle_cap(): past it,
    the idle helpers of other options go first (a watch's older SIGHUP generation, whose
    helpers will not be asked again), then the oldest. A process that lives for weeks keeps
    a bounded number of helpers whatever its clients do."""
    gone = []
    with _lock:
        _idle.append(helper)
        cap = _idle_cap()
        while len(_idle) > cap:
            other = next((h for h in _idle if h.key != helper.key), _idle[0])
            _idle.remove(other)
            gone.append(other)
    for h in gone:
        h.kill()


def _watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def main(fd):
    from .workers import worker_main

    parent = os.getppid()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    conn = Connection(fd)
    options, signer = conn.recv()
    worker_main(conn, options, signer, die_with_parent=False)


if __name__ == "__main__":
    main(int(sys.argv[1]))
