# SPDX-License-Identifier: Apache-2.0
"""How cores are fed to an executor, the same for the local workers (workers.WorkerPool) and a
dask cluster (dask_pool.DaskPool): a batch gives every core to run(); `watch` calls start()
once, then submit(path) and step() for as long as cores keep coming. The executor adds
start, step, busy, renew and close."""

import collections


class Feed:
    """A task is an integer given by submit, in submission order; `paths` maps each task not
    over yet to its path (a task over is forgotten, so that an executor that runs for weeks
    stays small); `_pending` holds the tasks not given to a worker yet, oldest first."""

    def __init__(self):
        self.paths = {}
        self._pending = collections.deque()
        self._next = 0

    def submit(self, path):
        """Queues one core; returns its task number."""
        task = self._next
        self._next += 1
        self.paths[task] = path
        self._pending.append(task)
        return task

    def waiting(self):
        """Tasks submitted and not given to a worker yet."""
        return len(self._pending)

    def run(self, paths, on_hash, on_result, on_tick=lambda: None, likely_known=None,
            settle=None, reap_later=False):
        """A batch: every path, then the executor is closed (see start for the callbacks);
        on_tick() after each step. reap_later: the caller calls reap() once it has done what
        it can do meanwhile (the workers' exit is not waited for here)."""
        self.start(on_hash, on_result, likely_known, settle)
        for path in paths:
            self.submit(path)
        try:
            while self.busy():
                self.step()
                on_tick()
        finally:
            self.close(wait=not reap_later)

    def reap(self):
        """Waits for what close(wait=False) left exiting (nothing, unless the executor says
        otherwise)."""
