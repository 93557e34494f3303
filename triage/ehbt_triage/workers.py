# SPDX-License-Identifier: Apache-2.0
"""Worker processes: each core is analysed in a child the parent can kill.

Why not multiprocessing.Pool: a pool dies (or hangs) when one of its children segfaults, and
it cannot stop one task at a deadline. Here every worker is a forked child (forked.Child: what
multiprocessing's fork Process does, without its imports) with its own pipes; the parent waits
on the pipes and on the children's sentinels at once, so

- a worker killed by a signal (an engine crash: SIGSEGV, SIGABRT ...) is seen at once, its
  core recorded as failed with the signal's name, and a fresh worker takes its place;
- a core still running when its --timeout expires gets its worker SIGKILLed and is recorded
  as failed ("timed out");
- memory is capped per worker with RLIMIT_AS, so a runaway allocation becomes a MemoryError
  (recorded as "out of memory") or, at worst, a dead worker -- never a dead machine.

Workers are forked. They never touch the parent's SQLite connection (only the parent
writes), ignore SIGINT (the parent decides when to stop), and die with the parent
(PR_SET_PDEATHSIG), so a SIGKILLed run leaves no orphans behind.

Protocol over each Pipe (parent -> worker / worker -> parent):
    ("core", task, path)     ->  ("hash", task, sha256, size, mtime, file_id)  or
                                 ("fail", task, reason)   (file_id: content_hash.file_identity)
    ("go",) | ("skip",)      ->  ("done", task, result)                (after "go" only)
    ("spec", task, path)     ->  ("done", task, result, (sha256, size, mtime, file_id)) once
                                 the analysis (run while the key was computed on a second
                                 thread, or after it) is over, the key left meanwhile on the
                                 worker's KeyBoard for a parent that has to stop it first; or
                                 ("fail", ...) as for "core" and then ("idle", task). (A
                                 worker without a board sends ("hash", ...) first, then
                                 ("done", task, result).)
    ("analyse", task, path)  ->  ("done", task, result)   (hashed elsewhere: the dask helper)
    None                     ->  the worker exits

Speculation: a fresh core needs its key and its analysis, and the analysis need not wait for
the parent's verdict on the key. The parent sends "spec" for a core the store does not already
know by its path, size and time (a re-run over the same spool hashes first and analyses
nothing twice). Both run mostly in C++ with the GIL released, so when the workers leave a CPU
free (-j below the CPUs this process may run on) the key is computed on a thread while the
analysis runs, and one worker uses two CPUs (-j1 on a 2-CPU machine: per core the longer of
the two instead of their sum). With every CPU taken by a worker, two threads would only take
turns, and the contention costs CPU (60 CPython cores, -j2 on 2 CPUs: 1.23 s CPU and 0.73 s
wall with a thread, 1.14 s and 0.69 s without), so the worker computes the key first and then
analyses at once: no wait for the parent's answer, which with the parent busy storing the core
before cost each core a wake-up and a turn of the CPU (the same 60 cores, -j2, median of 15
interleaved runs: 0.48 s wall waiting for "go", 0.44 s without). Nor does the key travel alone:
it comes with the result, one message and one wake-up of the parent per core (KeyBoard). The
result of a
speculative analysis of a core the parent skips (seen before, a copy in flight) is dropped by
the parent when it arrives, never stored; until then the worker counts as busy with it, and
if that analysis crashes or hangs the worker is replaced without a failure. A worker that
dies or is killed at its deadline has its key read from its board; one that dies before it had
its key is given that core once more with "core", so a core that crashes the engine is still
recorded as failed under its content key.

The same worker_main also runs as the long-lived helper of a dask worker (helper.py): one
analysis function, two executors.
"""

import ctypes
import gc
import marshal
import mmap
import os
import resource
import signal
import struct
import time

from . import engine, forked
from .content_hash import file_identity, sparse_sha256, start_key_job
from .feed import Feed
from .plain_core import DecompressError, PlainCore
from .signature import crashing_thread, frame_key, module_names
from .store import document_rows

DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_LIMIT = 4 << 30  # RLIMIT_AS per worker
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not fatal: the worker also exits when its pipe to the parent closes


_M_TRIM_THRESHOLD = -1  # mallopt parameters (glibc <malloc.h>)
_M_TOP_PAD = -2
_HEAP_KEEP = 64 << 20


def _keep_heap():
    """Stops glibc from handing freed heap back to the kernel after every core.

    Each walk reserves room for its frames (~110 KB) and frees it again; with the default
    trim threshold (128 KiB) the heap top is returned with brk() and taken back on the next
    core, and every shrink flushes the TLB of each CPU the process ran on -- on a VM that IPI
    cost more than the unwinding itself (perf: 60% of a worker in flush_tlb_mm_range under
    __brk). Up to 64 MiB of freed heap is kept instead; RLIMIT_AS still bounds the worker."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TRIM_THRESHOLD, _HEAP_KEEP)
        libc.mallopt(_M_TOP_PAD, 1 << 20)
    except (OSError, AttributeError):
        pass  # not glibc: only slower


def _limit_memory(limit):
    if limit and limit > 0:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):
            pass


def _test_fault(path, stage="analysis"):
    """EHBT_TRIAGE_TEST_FAULT=segv:TEXT|hang:TEXT|oom:TEXT makes this worker crash, hang or
    exhaust memory on cores whose path contains TEXT (for the tests of the failure paths);
    killparent:TEXT SIGKILLs the worker's parent -- in a dask helper, the dask worker, as a
    machine failure would (never use it in the local mode: the parent is ehbt-triage).
    keysegv:TEXT crashes as soon as a worker is given the core, before its key (stage "key"):
    the test that a re-run does not hash an unchanged core."""
    spec = os.environ.get("EHBT_TRIAGE_TEST_FAULT", "")
    kind, _, text = spec.partition(":")
    if not text or text not in path or kind.startswith("key") != (stage == "key"):
        return
    kind = kind[3:] if stage == "key" else kind
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "hang":
        while True:
            time.sleep(3600)
    elif kind == "killparent":
        os.kill(os.getppid(), signal.SIGKILL)
        while True:
            time.sleep(3600)
    elif kind == "oom":
        hog = []
        while True:
            hog.append(bytearray(32 << 20))


def open_plain(path, key_version):
    """(PlainCore, content key of that version) of a core, compressed or not; raises OSError
    or DecompressError. A compressed core is decompressed once, here: hashed and then
    analysed from the copy."""
    plain = PlainCore(path)
    try:
        return plain, sparse_sha256(plain.path, key_version)
    except BaseException:
        plain.close()
        raise


def content_key(path, key_version):
    """The content key of the core at `path` (of its decompressed content when compressed)."""
    plain, digest = open_plain(path, key_version)
    plain.close()
    return digest


def _analyse(path, options, signer, plain=None):
    """The result dict of one core (no exception escapes for an unusable core). `plain`: the
    core already made plain (open_plain), else it is opened here."""
    own = plain is None
    try:
        if own:
            plain = PlainCore(path)
    except (OSError, DecompressError) as e:
        return {"error": _unreadable(e)}
    try:
        return _analyse_plain(path, options, signer, plain)
    finally:
        if own:
            plain.close()


def _unreadable(e):
    if isinstance(e, DecompressError):
        return str(e)
    return "unreadable: %s" % (e.strerror or e)


def _analyse_plain(path, options, signer, plain):
    try:
        _test_fault(path)
        # The CLI fallback gets a little less than the parent's deadline, so that it can say
        # "timed out" itself and its child is reaped.
        doc = engine.analyze_core(plain.path, options["sysroots"],
                                  timeout=options["timeout"] * 0.9,
                                  debug_dirs=options.get("debug_dirs", ()),
                                  debuginfod=options.get("debuginfod", False), name=path)
    except engine.AnalysisError as e:
        return {"error": str(e)}
    except MemoryError:
        return {"error": "out of memory (RLIMIT_AS %d MiB)" % (options["memory_limit"] >> 20)}
    except Exception as e:  # an engine binding error we did not foresee: this core only
        return {"error": "%s: %s" % (type(e).__name__, e)}
    thread = crashing_thread(doc)
    # The parent only inserts: every thread's rows are built here, and the document sent back
    # keeps the crashing thread alone (what the JSONL record and the cores row need), which
    # keeps the message small and the parent's share of the work per core low.
    build_ids = module_names(doc)
    rows = document_rows(doc, lambda f: frame_key(f, build_ids))
    signature, unreliable = signer.sign_with_trust(doc)
    if thread and not options.get("send_frames", True):
        # No JSONL to write them to: the parent needs the thread's header only (its rows
        # carry the frames), and a deep stack's frames would be marshalled twice.
        thread = {k: v for k, v in thread.items() if k != "frames"}
    doc["threads"] = [thread] if thread else []
    return {"error": None, "doc": doc, "signature": signature, "rows": rows,
            "unreliable": unreliable, "compression": plain.compression,
            "stop_reason": thread.get("stop_reason") if thread else None}


def worker_main(conn, options, signer, die_with_parent=True, board=None):
    """The loop of one worker process. `board`: its KeyBoard, where a "spec" core's key is
    left for the parent instead of sent (see KeyBoard); None: sent as "hash"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # A `watch` parent's SIGHUP (reload) and wake-up pipe are its own, not its workers'.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass  # not the main thread (a dask helper runs it as its own process anyway)
    if die_with_parent:
        _die_with_parent()
    _keep_heap()
    _limit_memory(options["memory_limit"])
    # The images a store keeps are mapped files, which count against the address-space cap
    # just set: half of it at most, the rest for the cores and the walks.
    memory = options["memory_limit"]
    engine.set_store_caps(options.get("max_images"), memory // 2 if memory and memory > 0
                          else None)
    delay = float(os.environ.get("EHBT_TRIAGE_TEST_DELAY", "0") or 0)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        kind, task, path = msg
        if kind == "spec":
            _speculate(conn, task, path, options, signer, delay, board)
            continue
        if kind == "analyse":
            result = _analyse(path, options, signer)
            result["worker_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            conn.send(("done", task, result))
            continue
        _test_fault(path, "key")
        try:
            st, now_ns = os.stat(path), time.time_ns()
            plain, digest = open_plain(path, options["key_version"])
        except (OSError, DecompressError) as e:
            conn.send(("fail", task, _unreadable(e)))
            continue
        with plain:
            conn.send(("hash", task, digest, st.st_size, st.st_mtime, file_identity(st, now_ns)))
            try:
                answer = conn.recv()
            except (EOFError, OSError):
                return
            if answer is None:
                return
            if answer[0] != "go":
                continue
            if delay > 0:
                time.sleep(delay)
            result = _analyse(path, options, signer, plain)
        result["worker_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        conn.send(("done", task, result))


class _KeyThread:
    """The one Python thread of a worker that computes keys for _speculate where the engine
    cannot (no package: the CLI fallback; else the engine's own thread keys, start_key_job),
    started on first use:
    starting and joining a thread per core cost 0.9-1.8 ms of wall time on this project's VMs
    (a fresh 8 MiB stack mapped and unmapped each time), handing a job to this one ~0.03 ms.
    One job at a time: run() is called again only after the previous job's lock was
    acquired."""

    def __init__(self):
        self._pid = None  # the process that started the thread (a thread does not survive fork)
        self._go = None
        self._job = None

    def run(self, fn):
        """Runs fn() on the thread; returns a lock that can be acquired once fn has returned."""
        import threading  # only a speculating worker needs it (-j below the CPU count)

        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._go = threading.Lock()
            self._go.acquire()
            threading.Thread(target=self._loop, name="ehbt-triage-key", daemon=True).start()
        done = threading.Lock()
        done.acquire()
        self._job = (fn, done)
        self._go.release()
        return done

    def _loop(self):
        while True:
            self._go.acquire()
            fn, done = self._job
            try:
                fn()
            except BaseException:  # as a thread of its own would have: said, and over
                import traceback

                traceback.print_exc()
            finally:
                done.release()


_KEY_THREAD = _KeyThread()


def _speculate(conn, task, path, options, signer, delay=0.0, board=None):
    """One "spec" exchange (see the module doc): the key on a thread, or first when
    options["key_thread"] is false, the analysis here. The key goes to the parent with the
    result, ("done", task, result, (sha256, size, mtime, file_id)), and meanwhile waits on the
    worker's `board` for a parent that must stop the worker first (see KeyBoard); without a
    board, or when it cannot be keyed, it is sent as soon as it is known ("hash"/"fail")."""
    _test_fault(path, "key")
    try:
        st, now_ns = os.stat(path), time.time_ns()  # the identity is of the file before the key
        plain = PlainCore(path)
    except (OSError, DecompressError) as e:
        # No analysis follows: "idle" at once. The parent, told "fail" of a "spec", keeps
        # the worker busy until it says so, and without it waited for the whole --timeout.
        conn.send(("fail", task, _unreadable(e)))
        conn.send(("idle", task))
        return True
    keyed = []
    posted = []

    def keyed_as(digest, error):
        """Hands the key (or why there is none) to the parent."""
        if error is None:
            msg = ("hash", task, digest, st.st_size, st.st_mtime, file_identity(st, now_ns))
        elif isinstance(error, OSError):
            msg = ("fail", task, _unreadable(error))
        else:  # MemoryError under RLIMIT_AS, ...: this core only
            msg = ("fail", task, "%s: %s" % (type(error).__name__, error))
        keyed.append(msg[0] == "hash")
        if board is not None and keyed[0] and board.post(task, msg[2:]):
            posted.append(msg[2:])
            return
        try:
            conn.send(msg)
        except OSError:
            pass  # the parent has gone: the main thread sees it at its next recv

    def key():
        try:
            digest = sparse_sha256(plain.path, options["key_version"])
        except Exception as e:  # OSError, MemoryError ...
            keyed_as(None, e)
            return
        keyed_as(digest, None)

    with plain:
        keyed_done = job = None
        if options.get("key_thread", True):
            # On the engine's own thread where it can, else on a Python thread.
            job = start_key_job(plain.path, options["key_version"], keyed_as)
            if job is None:
                keyed_done = _KEY_THREAD.run(key)
        else:
            key()
            if not keyed[0]:
                conn.send(("idle", task))  # after "fail", as below: nothing to analyse
                return True
        try:
            if delay > 0:
                time.sleep(delay)
            result = _analyse(path, options, signer, plain)
        finally:
            # The key's message is sent before the result's.
            if job is not None:
                job.wait()
            if keyed_done is not None:
                keyed_done.acquire()
    if not keyed or not keyed[0]:
        conn.send(("idle", task))  # after "fail": the parent has recorded it, nothing to add
        return True
    # Sent without waiting for the parent's answer to the key (it drops the result of a core
    # it skips): one message and one wake-up of the parent per core.
    result["worker_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conn.send(("done", task, result, posted[0]) if posted else ("done", task, result))
    return True


class KeyBoard:
    """A page of memory shared by the parent and one worker (an anonymous MAP_SHARED mapping,
    made before the fork), where the worker leaves the key of the "spec" core it works on.

    Why not a message: the parent needs a core's key before its result only when the worker
    will not send the result -- it died, or it is killed at the core's deadline -- to record
    the core as failed under its key. A "hash" message woke the parent once more per core for
    that (two wake-ups, two reads and two turns of its loop per core instead of one); the
    board is read only then, after the worker has stopped, so no lock is needed.

    Layout: the task + 1 (0: none) as one aligned 8-byte word, the payload's length, the
    marshalled (sha256, size, mtime, file_id). The worker clears the task word, writes the
    rest, then the task word: a worker killed in between leaves no key, never a torn one."""

    SIZE = 4096
    _TASK = struct.Struct("=q")
    _LENGTH = struct.Struct("=I")
    _DATA = 12

    def __init__(self):
        self._map = mmap.mmap(-1, self.SIZE)

    def post(self, task, key):
        """Leaves `key` for `task`; False when it does not fit (then it is sent)."""
        data = marshal.dumps(key)
        if self._DATA + len(data) > self.SIZE:
            return False
        m = self._map
        self._TASK.pack_into(m, 0, 0)
        self._LENGTH.pack_into(m, 8, len(data))
        m[self._DATA:self._DATA + len(data)] = data
        self._TASK.pack_into(m, 0, task + 1)
        return True

    def read(self, task):
        """The key left for `task`, or None (call it only once the worker has stopped)."""
        m = self._map
        if self._TASK.unpack_from(m, 0)[0] != task + 1:
            return None
        (n,) = self._LENGTH.unpack_from(m, 8)
        try:
            return marshal.loads(m[self._DATA:self._DATA + n])
        except (EOFError, ValueError, TypeError):
            return None

    def close(self):
        self._map.close()


class _Slot:
    """One worker process and what it is doing."""

    def __init__(self):
        self.proc = None
        self.conn = None
        self.board = None  # the worker's KeyBoard
        self.task = None  # index of the core being worked on, or None when idle
        self.deadline = None
        self.spec = False  # the task was sent as "spec"
        self.hashed = False  # its "hash" arrived
        self.draining = False  # its outcome is recorded; the worker still finishes its analysis
        self.generation = 0  # WorkerPool.generation when its worker was started

    def free(self):
        self.task = self.deadline = None
        self.spec = self.hashed = self.draining = False


def _end(proc, board):
    """A worker's end: SIGKILL if it still runs, reaped, its ends and key board closed."""
    if proc is not None:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        proc.close()
    if board is not None:
        board.close()


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def death_reason(exitcode):
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "signal %d" % -exitcode
        hint = {"SIGSEGV": " (engine crash)", "SIGBUS": " (engine crash)",
                "SIGABRT": " (engine abort, possibly out of memory)",
                "SIGKILL": " (killed, possibly by the OOM killer)"}.get(name, "")
        return "worker died: %s%s" % (name, hint)
    return "worker exited with status %d" % exitcode


class WorkerPool(Feed):
    """Runs tasks over `jobs` killable workers.

    Callbacks (all called in the parent):
        on_hash(task, sha256, size, mtime) -> True to analyse, False to skip ("seen before")
        on_result(task, result)  result: {"error": str|None, "doc", "signature", ...}
        on_tick()                at least every `tick` seconds while waiting

    Two ways to feed it, one engine: run(paths, ...) for a batch (every core known up front),
    or start(...) once, then submit(path) and step() for as long as cores keep coming (`watch`:
    a resident process whose workers keep their warm image stores across cores). A task is an
    integer given by submit, in submission order; `paths` maps each task not finished yet to
    its path (finished tasks are forgotten, so a pool that runs for weeks stays small).
    """

    def __init__(self, jobs, options, signer, timeout=DEFAULT_TIMEOUT, tick=0.25):
        self.jobs = max(1, int(jobs))
        self.options = dict(options)
        # EHBT_TRIAGE_MEMORY_LIMIT (bytes) lowers the cap, e.g. for the out-of-memory test.
        self.options.setdefault("memory_limit", int(os.environ.get(
            "EHBT_TRIAGE_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)))
        self.options["timeout"] = timeout
        self.signer = signer
        self.timeout = timeout
        self.tick = tick
        self.slots = [_Slot() for _ in range(self.jobs)]
        # Whether a CPU is left for each worker's key thread (see the module doc).
        self.options["key_thread"] = self.jobs < _usable_cpus()
        self.generation = 0  # raised by renew(): workers of an older one are replaced
        self._exiting = []  # (Child, KeyBoard) of workers close(wait=False) let go
        super().__init__()  # Feed: paths, the pending tasks

    def _start(self, slot):
        # What exists now is moved out of the collector's reach before the fork (gc.freeze,
        # CPython's advice for forking servers): a collection would write to the header of
        # every object it visits, copying each page the worker shares with the parent. 60
        # CPython cores, -j1: ~290 page faults fewer in the worker.
        gc.freeze()
        board = KeyBoard()
        proc = forked.Child(worker_main, (self.options, self.signer, True, board))
        slot.proc, slot.conn, slot.board = proc, proc.conn, board
        slot.generation = self.generation

    def _kill(self, slot):
        _end(slot.proc, slot.board)
        slot.proc = slot.conn = slot.board = None
        slot.free()

    def _stop_idle(self, slot):
        """Ends an idle worker politely (it may be mid-way through nothing)."""
        try:
            slot.conn.send(None)
        except OSError:
            pass
        slot.proc.join(2)
        self._kill(slot)

    def close(self, wait=True):
        """Stops every worker (idle ones politely, busy ones by SIGKILL: their cores are not
        recorded, and a later run or a restarted watch does them). wait=False leaves the idle
        ones exiting, to be reaped by reap(): a worker's exit (the kernel unmapping its image
        store) took 0.85 ms of a one-core run's wall time, which the run's report can overlap."""
        for slot in self.slots:
            if slot.proc is not None and slot.task is None:
                try:
                    slot.conn.send(None)
                except OSError:
                    pass
        for slot in self.slots:
            if slot.proc is not None and slot.task is None:
                if not wait:
                    self._exiting.append((slot.proc, slot.board))
                    slot.proc = slot.conn = slot.board = None
                    slot.free()
                    continue
                slot.proc.join(2)
            self._kill(slot)

    def reap(self):
        """Waits for the workers close(wait=False) left exiting (2 s each at most, then
        SIGKILL), and closes their ends."""
        exiting, self._exiting = self._exiting, []
        for proc, board in exiting:
            proc.join(2)
            _end(proc, board)

    def renew(self, options=None, signer=None):
        """New options or signer for the workers from now on (watch's SIGHUP): each worker is
        replaced by a fresh one when it is next idle, so no core is interrupted."""
        if options is not None:
            keep = {k: self.options[k] for k in ("memory_limit", "timeout", "key_thread")}
            self.options = dict(options, **keep)
        if signer is not None:
            self.signer = signer
        self.generation += 1
        for slot in self.slots:
            if slot.proc is not None and slot.task is None:
                self._stop_idle(slot)

    # -- feeding -------------------------------------------------------------------------------

    def start(self, on_hash, on_result, likely_known=None, settle=None):
        """likely_known(task) -> True when the store probably has the core already: it is
        hashed before it is analysed; any other core is analysed while it is hashed ("spec").
        None: every core is hashed first. settle(task) -> True when the parent has dealt with
        the core itself (its file proven unchanged since it was stored): no worker sees it."""
        self._on_hash, self._on_result = on_hash, on_result
        self._likely_known = likely_known
        self._settle = settle
        self._retried = set()  # cores given again without speculation after a worker died

    def busy(self):
        return bool(self._pending) or any(s.task is not None for s in self.slots)

    def step(self, extra=(), timeout=None):
        """Gives idle workers their next cores, waits until a worker says something, one dies
        or misses its deadline, one of the `extra` handles (file descriptors or objects with
        fileno()) is readable, or `timeout` (None: `tick` while workers are busy, else no
        limit) passes; handles what the workers said. Returns the readable `extra` handles."""
        for slot in self.slots:
            if slot.task is None:
                self._assign(slot)
        return self._wait_once(extra, timeout)

    def _forget(self, task):
        """The task is over: nothing of it is kept."""
        self.paths.pop(task, None)
        self._retried.discard(task)

    def _next_task(self):
        """The next pending core no worker is needed for, or None."""
        while self._pending:
            task = self._pending.popleft()
            if self._settle is None or task in self._retried or not self._settle(task):
                return task
            self._forget(task)
        return None

    def _assign(self, slot):
        """Gives the idle slot the next pending core (starting a worker if it has none)."""
        if slot.task is not None:
            return
        if slot.proc is not None and slot.generation != self.generation:
            self._stop_idle(slot)  # renew(): a fresh worker with the new options
        task = self._next_task()
        if task is None:
            return
        if slot.proc is None or not slot.proc.is_alive():
            if slot.proc is not None:
                self._kill(slot)
            self._start(slot)
        slot.task = task
        slot.deadline = time.monotonic() + self.timeout
        slot.spec = (self._likely_known is not None
                     and task not in self._retried and not self._likely_known(task))
        try:
            slot.conn.send(("spec" if slot.spec else "core", task, self.paths[task]))
        except OSError:
            pass  # it died; the sentinel check reports it

    def _wait_once(self, extra=(), timeout=None):
        busy = [s for s in self.slots if s.task is not None]
        now = time.monotonic()
        if busy:
            wait_for = max(0.0, min(min(s.deadline for s in busy) - now, self.tick))
            if timeout is not None:
                wait_for = min(wait_for, timeout)
        elif not extra:
            return []
        else:
            wait_for = timeout
        handles = [s.conn for s in busy] + [s.proc.sentinel for s in busy] + list(extra)
        ready = forked.wait(handles, timeout=wait_for)
        fds = {h if isinstance(h, int) else h.fileno() for h in ready}
        for slot in busy:
            self._service(slot, fds)
        return [h for h in ready if any(h is e for e in extra)]

    def _service(self, slot, ready=None):
        """Reads what the slot's worker sent; notices death and expired deadlines. `ready`:
        the descriptors the wait found readable (None: ask each); a worker's pipe or
        sentinel not among them is not asked again, which saved a poll and a waitpid per
        worker and turn of the loop."""
        on_hash, on_result = self._on_hash, self._on_result
        asked = ready is None
        while slot.task is not None:
            try:
                if not asked:
                    asked = True
                    if slot.conn.fileno() not in ready:
                        break
                elif not slot.conn.poll():
                    break
                msg = slot.conn.recv()
            except (EOFError, OSError):
                break
            kind, task = msg[0], msg[1]
            if kind == "hash":
                slot.hashed = True
                go = on_hash(task, msg[2], msg[3], msg[4], msg[5])
                if slot.spec:  # the worker does not wait for an answer
                    slot.draining = not go
                    continue
                try:
                    slot.conn.send(("go",) if go else ("skip",))
                except OSError:
                    pass
                if not go:
                    self._finished(slot)
            elif kind == "fail":
                # Reported before the slot lets go of the task (and forgets its path).
                on_result(task, {"error": msg[2], "unhashed": True})
                self._finished(slot)
            elif kind == "idle":
                slot.free()
                self._forget(task)
                self._assign(slot)
            elif kind == "done":
                if len(msg) > 3 and not slot.hashed:
                    self._keyed(slot, task, msg[3])  # the key came with the result
                # The worker gets its next core before this one is stored: it hashes and
                # analyses while the parent writes the database.
                dropped = slot.draining  # a skipped core's speculative analysis
                slot.free()
                self._assign(slot)
                if not dropped:
                    on_result(task, msg[2])
                self._forget(task)
                # Nothing of the next core can have come yet that the next wait would not
                # show; nor can this worker have died unseen (its sentinel says so then).
                break
        if slot.task is None:
            return
        if (ready is None or slot.proc.sentinel in ready) and not slot.proc.is_alive():
            self._key_from_board(slot)
            task, draining = slot.task, slot.draining
            retry = slot.spec and not slot.hashed and task not in self._retried
            reason = death_reason(slot.proc.exitcode)
            self._kill(slot)
            if retry:
                # Died analysing before its key was known: hashed first this time, so that a
                # core that crashes the engine is stored as failed under its key.
                self._retried.add(task)
                self._pending.appendleft(task)
            else:
                if not draining:
                    on_result(task, {"error": reason})
                self._forget(task)
        elif time.monotonic() >= slot.deadline:
            slot.proc.kill()
            slot.proc.join(5)
            self._key_from_board(slot)  # stopped: its board holds what it wrote
            task, draining = slot.task, slot.draining
            self._kill(slot)
            if not draining:
                on_result(task, {"error": "timed out after %gs" % self.timeout})
            self._forget(task)

    def _keyed(self, slot, task, key):
        """The key (sha256, size, mtime, file_id) of the slot's "spec" core is known: the
        parent decides, as for a "hash" message, whether its result is stored or dropped."""
        slot.hashed = True
        slot.draining = not self._on_hash(task, *key)

    def _key_from_board(self, slot):
        """A "spec" worker that stopped before sending its result: the key it left on its
        board, if any, counts as sent (so the core is recorded under it)."""
        if slot.spec and not slot.hashed and slot.board is not None:
            key = slot.board.read(slot.task)
            if key is not None:
                self._keyed(slot, slot.task, key)

    def _finished(self, slot):
        """The task's outcome is known (skipped, or failed to hash): a speculating worker is
        still analysing it and says "idle" when done (after "fail"); any other is free at
        once."""
        if slot.spec:
            slot.draining = True
        else:
            task = slot.task
            slot.free()
            self._forget(task)
            self._assign(slot)
