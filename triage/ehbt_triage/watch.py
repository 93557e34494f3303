# SPDX-License-Identifier: Apache-2.0
"""``ehbt-triage watch [DIR...]``: a resident crash processor.

The same analysis and storage as a batch run (options.prepare's checks, run.Run's callbacks,
workers.WorkerPool's long-lived forked workers with their warm image stores -- or with
--scheduler dask_pool.DaskPool, the batch run's dask executor, fed the same way -- and the same
store rules); only where the cores come from (inotify, plus a scan of what is already there)
and how long the process lives differ.

When a file is taken (see _on_event):
- IN_CLOSE_WRITE: a writer closed it; IN_MOVED_TO: renamed into place (systemd-coredump's
  fallback writes ``.#core...`` first and renames it; temporary names are never taken);
- IN_CREATE of a regular file nobody has open for writing: a hard link, or systemd-coredump's
  usual way, an O_TMPFILE file linked into the spool complete (linkat). A file still open for
  writing (a read lease cannot be taken, F_SETLEASE) is taken when its writer closes it -- by
  its name, or by "#INODE", the name the kernel reports for the close of a linked O_TMPFILE;
- IN_CREATE|IN_ISDIR, IN_MOVED_TO|IN_ISDIR: a new directory (Crashpad-style nested layouts) is
  watched and scanned;
- IN_Q_OVERFLOW (the kernel dropped events): every directory is scanned again.

Never twice: a path already queued or being analysed is not queued again (an event for a path
being analysed queues it once more after, since its content may have changed), and the store's
content key decides the rest, across restarts too: a core the store has is "seen before" (its
file identity often spares even the hash, as in a batch re-run).

Bounded: the queue holds paths, at most --queue of them; past that, new paths are dropped and a
scan is made once the queue has drained (the dropped cores are still on disk, and the store
says which are new). The scan itself is read lazily, directory entry by entry, as the queue
has room. The pool is given at most one core more than it has workers.

Each core is written whole or not at all (one savepoint per core). While cores keep coming,
those that arrive within a quarter second are committed together (store.py); when the queue is
empty each core is committed as soon as it is stored, so that its row is visible at once.

SIGTERM/SIGINT: the cores being analysed are abandoned (their workers killed), everything
stored so far is committed, exit 0; the next start does the abandoned ones. SIGHUP: the store
and the JSONL file are reopened (log rotation), the skip list is read again, each worker is
replaced by a fresh one when next idle (new debug files and sysroot contents are seen, image
caches start empty; with --scheduler, a new connection is made on a thread, and the cores
wait in the queue while the scheduler cannot be reached: dask_pool), the report is rewritten
and the directories are scanned.

Log lines go to stderr, one per event, ``key=value`` (values with spaces quoted), journald's
priority prefix (``<6>``) added when stderr is the journal (JOURNAL_STREAM). A --db password
never appears (credentials.mask).
"""

import collections
import errno
import fcntl
import os
import re
import signal
import stat
import sys
import time

from . import jsonl, options, spool
from .credentials import mask
from .discover import elf_kind, special_kind
from .exits import EXIT_OK, EXIT_USAGE
from .inotify import (IN_CLOSE_WRITE, IN_CREATE, IN_DELETE_SELF, IN_IGNORED, IN_ISDIR,
                      IN_MOVE_SELF, IN_MOVED_TO, IN_ONLYDIR, IN_Q_OVERFLOW, Inotify)
from .run import Run
from .schema import StoreError
from .signature import Signer
from .stores import describe, open_store

DEFAULT_QUEUE = 10000
DEFAULT_REPORT_INTERVAL = 5.0
DEFAULT_MAX_IMAGES = 1000
_DIR_MASK = (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF
             | IN_ONLYDIR)
_F_SETLEASE = 1024
_PRIORITY = {"info": 6, "notice": 5, "warning": 4, "error": 3}


def is_temporary(name):
    """systemd's temporary names (tempfn_random: ``.#NAME`` + random) and the ``#INODE`` name
    the kernel gives an O_TMPFILE file: never cores yet."""
    return name.startswith(".#") or name.startswith("#")


class Log:
    """key=value lines on stderr, one per event."""

    def __init__(self, db=None, stream=None):
        self.db = db
        self.stream = stream or sys.stderr
        self.journal = _is_journal(self.stream)

    def __call__(self, event, level="info", **fields):
        parts = ["event=%s" % event]
        for key, value in fields.items():
            if value is None:
                continue
            if isinstance(value, float):
                text = "%.6f" % value if key in ("t", "mtime") else "%.3f" % value
            else:
                text = str(value)
            if not text or _NEEDS_QUOTES.search(text):
                text = '"%s"' % _ESCAPED.sub(_escape, text)
            parts.append("%s=%s" % (key, text))
        line = mask("ehbt-triage: " + " ".join(parts), self.db)
        if self.journal:
            line = "<%d>%s" % (_PRIORITY.get(level, 6), line)
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass


# A value with a space, a double quote, '=', a backslash or a control character is quoted; in
# it a double quote or a backslash is escaped by a backslash, a control character as \xNN. By regular expression, not a test per character
# in Python: a core's line (its path, signature, sha256) cost ~43 us, a cost per core.
_NEEDS_QUOTES = re.compile(r'[\x00-\x20"=\\]')
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def _escape(match):
    c = match.group()
    return "\\" + c if c in '"\\' else "\\x%02x" % ord(c)


def _is_journal(stream):
    """Whether `stream` is connected to the journal: systemd puts the device and inode of the
    stream it connected into JOURNAL_STREAM ("DEV:INO"); a stream redirected elsewhere by a
    child of the service is not it."""
    dev, _, ino = os.environ.get("JOURNAL_STREAM", "").partition(":")
    try:
        st = os.fstat(stream.fileno())
        return (st.st_dev, st.st_ino) == (int(dev), int(ino))
    except (ValueError, OSError, AttributeError):
        return False


class _NoProgress:
    """A resident process has no progress line."""
    done = failed = seen = 0

    def update(self, force=False):
        pass


def _test_lost_events():
    """EHBT_TRIAGE_TEST_LOSE_EVENTS=TEXT: the events of names containing TEXT are lost and an
    IN_Q_OVERFLOW comes instead (for the test of the rescan; a real overflow needs more events
    than fs.inotify.max_queued_events, a setting of the whole machine)."""
    return os.environ.get("EHBT_TRIAGE_TEST_LOSE_EVENTS", "")


class WatchRun(Run):
    """Run's callbacks with bounded bookkeeping: counts per bucket (as many as buckets), the
    last failed inputs for the report, one log line per core."""

    MAX_FAILED = 200

    def __init__(self, watcher, *args, **kwargs):
        super().__init__(*args, progress=_NoProgress(), **kwargs)
        self.watcher = watcher
        self.failed = collections.deque(maxlen=self.MAX_FAILED)
        self.quiet = set()  # paths from a scan: "seen before" is not worth a line each

    def on_result(self, task, result):
        if self.watcher.stop and str(result.get("error") or "").startswith("worker died"):
            # Killed along with this process (a SIGTERM to the whole group, KillMode=
            # control-group): abandoned like the other cores in flight, not a crash of the core.
            info = self.info.pop(task, None)
            if info is not None:
                self.inflight.pop(info["sha256"], None)
            return
        super().on_result(task, result)

    def _seen_before(self, path, row):
        if path in self.quiet:
            # A scan (start-up, SIGHUP, lost events) finding a core the store has: counted,
            # neither logged nor written to the JSONL again.
            self.stats["seen"] += 1
            self._count(row["id"], row["bucket_id"])
            self.watcher.counts["seen_before"] += 1
            return
        super()._seen_before(path, row)

    def _count(self, core_id, bucket_id):
        self.bucket_run_counts[bucket_id] = self.bucket_run_counts.get(bucket_id, 0) + 1

    def _note_missing(self, path, missing):
        pass  # logged with the core (missing=N)

    def _note_failed(self, path, reason):
        self.failed.append((path, reason))

    def event(self, kind, path, **fields):
        w = self.watcher
        w.changed = True
        if kind != "failed" and any(p == path for p, _ in self.failed):
            # Taken again and analysed (a file rewritten since): no longer a failed input.
            self.failed = collections.deque(((p, r) for p, r in self.failed if p != path),
                                            maxlen=self.MAX_FAILED)
        # Visible at once when nothing else is waiting: the line says it is committed.
        if not w.pool.waiting() and not w.queue:
            self.store.flush()
        w.counts[kind] += 1
        since = w.taken.pop(path, None)
        ms = (time.monotonic() - since) * 1000.0 if since is not None else None
        w.log("core", level="warning" if kind == "failed" else "info", status=kind, path=path,
              ms=ms, t=time.time(), **fields)


class Watcher:
    def __init__(self, args, dirs, log):
        self.args = args
        self.dirs = dirs
        self.log = log
        self.queue = collections.OrderedDict()  # path -> "event" | "scan", oldest first
        self.cap = args.queue
        self.overflowed = False
        self.scan = None  # the iterator of the scan in progress
        self.catching_up = False  # a scan's cores are not all done yet
        self.rescan = False
        self.active = {}  # path -> task, given to the pool and not over
        self.again = set()  # active paths that changed meanwhile: queued again when over
        self.waiting_writer = {}  # path -> inode of files that appeared still being written
        self.taken = {}  # path -> monotonic time it was taken (for the log's ms=)
        self.wds = {}  # watch descriptor -> directory
        self.counts = collections.Counter()
        self.changed = True
        self.last_report = 0.0
        self.stop = False
        self.hup = False
        self.writer = None
        self.inotify = None

    # -- set-up --------------------------------------------------------------------------------

    def open_outputs(self):
        args = self.args
        self.writer = None
        if args.jsonl:
            self.writer = jsonl.JsonlWriter(args.jsonl, append=True)

    def start(self, store, engine_line, signer, pool):
        """`pool`: local workers or the dask cluster (options.make_pool), fed the same way."""
        args = self.args
        self.store = store
        self.engine_line = engine_line
        self.signer = signer
        self.pool = pool
        if hasattr(pool, "give_up_after"):
            # A dask cluster: its connection's events in this log, and a scheduler that goes
            # away is waited for (connecting again on a thread) for as long as this runs.
            pool.give_up_after = None
            pool.log = self.log
        self.open_outputs()
        self.state = WatchRun(self, args, store, self.signer, self.pool.paths, self.writer)
        self.pool.start(self.state.on_hash, self.state.on_result,
                        likely_known=self.state.likely_known, settle=self.state.settle)
        self.inotify = Inotify()
        for d in self.dirs:
            self.add_tree(d)
        self.start_scan()

    def start_scan(self):
        self.scan = self.scan_all()
        self.catching_up = True

    def add_tree(self, top):
        """Watches `top` and every directory below it (symlinks to directories are not
        followed, as in a batch run)."""
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                wd = self.inotify.add_watch(d, _DIR_MASK)
            except OSError as e:
                self.log("watch_failed", level="warning", dir=d, error=e.strerror)
                continue
            self.wds[wd] = d
            try:
                with os.scandir(d) as it:
                    for entry in it:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
            except OSError:
                pass

    def scan_all(self):
        """Every file under the watched directories, lazily (a directory's entries are read
        as the queue has room for them)."""
        for top in list(self.dirs):
            stack = [top]
            while stack:
                d = stack.pop()
                try:
                    it = os.scandir(d)
                except OSError as e:
                    self.log("scan_failed", level="warning", dir=d, error=e.strerror)
                    continue
                with it:
                    subdirs = []
                    for entry in it:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                subdirs.append(entry.path)
                                continue
                        except OSError:
                            continue
                        if not is_temporary(entry.name):
                            yield entry.path
                stack.extend(sorted(subdirs, reverse=True))

    # -- events --------------------------------------------------------------------------------

    def enqueue(self, path, origin):
        if path in self.active:
            self.again.add(path)
            return
        if path in self.queue:
            return
        if len(self.queue) >= self.cap:
            if not self.overflowed:
                self.log("queue_full", level="warning", queued=len(self.queue),
                         note="new cores wait for the next scan")
            self.overflowed = True
            return
        self.queue[path] = origin
        if origin == "event":
            self.taken[path] = time.monotonic()

    def _writer_open(self, path):
        """True when some process has the regular file at `path` open for writing (no read
        lease can be taken), False when nobody has, None when it cannot be told (no
        permission to take a lease: not the file's owner and no CAP_LEASE; a file system
        without leases)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
            fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
            return False
        except OSError as e:
            return True if e.errno in (errno.EAGAIN, errno.EBUSY) else None
        finally:
            os.close(fd)

    def _maybe_take(self, path, origin, created=False):
        """A regular file that appeared: taken unless a writer still has it open (then its
        close event takes it). `created`: known only from IN_CREATE, where a file that cannot
        be checked for writers is taken only when it has content."""
        try:
            st = os.lstat(path)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            self.enqueue(path, origin)  # FIFOs and the like: said, never opened
            return
        busy = self._writer_open(path)
        if busy or (busy is None and created and st.st_size == 0):
            if len(self.waiting_writer) < self.cap:
                self.waiting_writer[path] = st.st_ino
            return
        self.enqueue(path, origin)

    def on_events(self):
        lose = _test_lost_events()
        for wd, mask_, _cookie, name in self.inotify.read_events():
            if lose and lose in name:
                mask_, name = IN_Q_OVERFLOW, ""  # as the kernel says it lost events
            if mask_ & IN_Q_OVERFLOW:
                self.log("overflow", level="warning", note="events were lost; scanning")
                self.rescan = True
                continue
            if mask_ & IN_IGNORED or mask_ & (IN_DELETE_SELF | IN_MOVE_SELF):
                self.wds.pop(wd, None)
                continue
            d = self.wds.get(wd)
            if d is None or not name:
                continue
            path = os.path.join(d, name)
            if mask_ & IN_ISDIR:
                if mask_ & (IN_CREATE | IN_MOVED_TO):
                    self.add_tree(path)
                    self._scan_now(path)
                continue
            if name.startswith("#") and mask_ & IN_CLOSE_WRITE:
                # The close of an O_TMPFILE file: linked under another name (IN_CREATE).
                try:
                    ino = int(name[1:])
                except ValueError:
                    continue
                for waiting, waiting_ino in list(self.waiting_writer.items()):
                    if waiting_ino == ino and os.path.dirname(waiting) == d:
                        del self.waiting_writer[waiting]
                        self.enqueue(waiting, "event")
                continue
            if is_temporary(name):
                continue
            if mask_ & (IN_CLOSE_WRITE | IN_MOVED_TO):
                self.waiting_writer.pop(path, None)
                self.enqueue(path, "event")
            elif mask_ & IN_CREATE:
                self._maybe_take(path, "event", created=True)

    def _scan_now(self, d):
        """A directory that appeared: what was written into it before its watch existed."""
        saved, self.dirs = self.dirs, [d]
        try:
            for path in self.scan_all():
                self._maybe_take(path, "event")
        finally:
            self.dirs = saved

    # -- the loop ------------------------------------------------------------------------------

    def fill(self):
        """Pulls scanned paths into the queue while it has room, and gives the pool its next
        cores (at most one more than it has workers)."""
        while self.scan is not None and len(self.queue) < self.cap:
            try:
                path = next(self.scan)
            except StopIteration:
                self.scan = None
                self.log("scan_done", queued=len(self.queue))
                break
            self._maybe_take(path, "scan")
        if self.scan is None and (self.rescan or self.overflowed) and not self.queue:
            self.rescan = self.overflowed = False
            self.start_scan()
        while self.queue and self.pool.waiting() <= self.pool.jobs:
            path, origin = self.queue.popitem(last=False)
            self.submit(path, origin)

    def submit(self, path, origin):
        ok, why = elf_kind(path)
        if not ok:
            self.state.quiet.discard(path)
            self.taken.pop(path, None)
            try:
                kind = special_kind(os.lstat(path).st_mode)
            except OSError:
                return  # gone meanwhile (deleted by a vacuum, renamed on)
            if kind == "a directory":
                return
            if why.startswith("not an ELF core") and kind is None:
                if origin == "event":  # (a scan would say it again every time)
                    self.log("skipped", path=path, reason=why)
            else:
                self.state._note_failed(path, why)
                self.changed = True
                self.log("rejected", level="warning", path=path, reason=why)
            return
        if why:
            self.state.compression[path] = why
        if origin == "scan":
            self.state.quiet.add(path)
        self.active[path] = self.pool.submit(path)

    def prune(self):
        """Forgets the paths whose task is over; queues again those that changed meanwhile."""
        for path, task in list(self.active.items()):
            if task not in self.pool.paths:
                del self.active[path]
                self.state.compression.pop(path, None)
                self.state.quiet.discard(path)
                self.taken.pop(path, None)
                if path in self.again:
                    self.again.discard(path)
                    self.enqueue(path, "event")

    def report(self, force=False):
        if not self.args.html or not (self.changed or force):
            return
        now = time.monotonic()
        if not force and now - self.last_report < self.args.report_interval:
            return
        from . import report_html

        self.store.flush()
        try:
            report_html.write(self.args.html, self.store, self.state.bucket_run_counts,
                              list(self.state.failed), self.engine_line, self.signer)
            self.changed = False
        except OSError as e:
            self.log("report_failed", level="error", html=self.args.html, error=e.strerror)
        self.last_report = now

    def reload(self):
        """SIGHUP: see the module doc."""
        self.hup = False
        args = self.args
        self.store.flush()
        try:
            store = open_store(self.db)
        except (StoreError, ImportError) as e:
            self.log("reload_failed", level="error", error=mask(e, self.db),
                     note="keeping the open store")
            store = None
        if store is not None:
            self.store.close()
            self.store = self.state.store = store
        if self.writer:
            self.writer.close()
        self.open_outputs()
        self.state.writer = self.writer
        try:
            signer = Signer(args.top, args.skip, version=self.store.signature_version)
            self.signer = self.state.signer = signer
        except Exception as e:  # the skip list file became unreadable: keep the old one
            self.log("reload_failed", level="error", error=e)
        # With --scheduler: connects again on a thread of its own (never waits here for the
        # network; the pool logs scheduler_connected, or scheduler_unreachable and retries).
        self.pool.renew(signer=self.signer)
        self.rescan = True
        self.report(force=True)
        self.log("reloaded", db=describe(self.db))

    def catch_signals(self):
        """SIGTERM, SIGINT and SIGHUP only set a flag (the loop acts on it between two cores,
        so no core is ever half stored) and wake the loop through a pipe."""
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w)

        def on_stop(signum, frame):
            self.stop = True

        def on_hup(signum, frame):
            self.hup = True

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)

    def loop(self):
        wake_r, wake_w = self.wake_r, self.wake_w
        try:
            while not self.stop:
                if self.hup:
                    self.reload()
                self.fill()
                timeout = None
                if self.args.html and self.changed:
                    timeout = max(0.0, self.args.report_interval
                                  - (time.monotonic() - self.last_report))
                room = self.pool.waiting() <= self.pool.jobs
                if (self.queue and room) or (self.scan is not None
                                             and len(self.queue) < self.cap):
                    timeout = 0.0
                ready = self.pool.step((self.inotify, wake_r), timeout)
                if any(r is self.inotify for r in ready):
                    self.on_events()
                if any(r is wake_r for r in ready):
                    try:
                        while os.read(wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                self.prune()
                if (self.catching_up and self.scan is None and not self.queue
                        and not self.active):
                    self.catching_up = False
                    self.log("caught_up", ok=self.counts["ok"],
                             seen_before=self.counts["seen_before"],
                             failed=self.counts["failed"])
                if not self.queue and not self.pool.waiting():
                    self.store.flush()
                else:
                    self.store.tick()
                self.report()
        finally:
            signal.set_wakeup_fd(-1)
            os.close(wake_r)
            os.close(wake_w)

    def shutdown(self):
        abandoned = len(self.active)
        self.pool.close()
        self.store.flush()
        self.report(force=True)
        if self.writer:
            self.writer.close()
        self.store.close()
        if self.inotify:
            self.inotify.close()
        self.log("stopped", abandoned=abandoned, ok=self.counts["ok"],
                 seen_before=self.counts["seen_before"], failed=self.counts["failed"])


def watch(args):
    log = Log(args.db)
    dirs = args.dirs or [spool.DEFAULT_DIR]
    for d in dirs:
        problem = options.not_a_directory(d)
        if problem:
            return _usage("%s: %s" % (d, problem))
    dirs = [os.path.abspath(d) for d in dirs]
    try:
        ready = options.prepare(args, max_images=args.max_images)
    except options.UsageError as e:
        return _usage(e)
    db, store, pool = ready.db, ready.store, ready.pool
    w = Watcher(args, dirs, log)
    w.db = db
    w.catch_signals()
    try:
        w.start(store, ready.engine_line, ready.signer, pool)
    except OSError as e:
        pool.close()
        store.close()
        return _usage("cannot watch: %s" % (e.strerror or e))
    log("started", dirs=",".join(dirs), db=describe(db), jobs=pool.jobs, queue=args.queue,
        scheduler=args.scheduler, engine=ready.engine_line, pid=os.getpid())
    try:
        w.loop()
    finally:
        w.shutdown()
    return EXIT_OK


def _usage(text):
    sys.stderr.write("ehbt-triage watch: error: %s\n" % text)
    return EXIT_USAGE
