# SPDX-License-Identifier: Apache-2.0
"""The store API, and its SQLite implementation (the embedded default): cores, their threads
and frames, and the buckets they fall into. The tables are described once, for SQLite and
PostgreSQL alike, in schema.py.

Every core is written whole or not at all (cores row + threads + frames + its bucket's
counters: one savepoint), in WAL mode, so a run stopped at any point (SIGINT, SIGKILL, power)
leaves only whole cores behind and a re-run simply does the cores that are not there yet.
SQLite commits the cores of up to BATCH_SECONDS (at most BATCH_CORES of them) in one
transaction: a commit costs more than the rows of a core, and the run calls flush() when it
ends or is interrupted, so only a run killed outright (SIGKILL, power) loses its last batch --
cores that the next run then analyses again. PostgreSQL (store_pg.py) commits each core.

Rules:
- A core is identified by the SHA-256 of its content (``cores.sha256`` is UNIQUE; computed
  over the content's sparse form, see content_hash.py, so it is not ``sha256sum``'s value):
  the same core under another name, or analysed again, is "seen before" and not counted twice.
- A core stored as ``failed`` is analysed again by a later run (the engine or the timeout may
  have changed); its row is replaced in the same transaction that writes the new result.
- A path holds one crash at a time: a ``failed`` row stands for the file that was at its path
  when it was taken. When that path is later stored with other content (ok or failed: a core
  written in place and closed twice, taken first half-written; a file rewritten since), the
  failed row of the old content is deleted in the same transaction, so that the store and
  the reports do not count a failure of bytes that are gone (STALE_FAILED). The ``ok`` rows
  of a path are kept: a path reused by another crash (the kernel's plain ``core`` name) holds
  another crash, and each counts -- except an ok row of a truncated core (the engine's
  ``truncated_core`` warning) whose content is the beginning of the path's new content: the
  same crash taken while it was still being written, deleted with forget_core (run.Run).
- ``buckets.count`` is the number of distinct ``ok`` cores with that signature; first_seen
  and last_seen are the oldest and newest core_time among them (core_time: the time in a
  systemd-coredump file name, else the core file's mtime).
- Schema version 6 stores the frames of a recursion (each equal to the one before it but
  for its index) as one row with ``repeats``, their count (document_rows); rows of an older
  store have NULL there, one frame each. crashing_frames gives every frame back.
- Schema version 5 stores each frame's source position (``src_file``, ``src_line``,
  ``src_column``) and the calls inlined at its pc (``inlined``, JSON as the document spells
  it), and records in ``meta`` the signature version the store buckets by
  (``signature_version``, signature.py) and in ``cores.signature_version`` each core's. A new
  store takes the newest (2: inlined calls are frames); a store made before (version 4 or
  older) that holds cores keeps version 1, so that its new cores fall into the buckets its
  old ones made (re-bucketing: docs/triage.md). Its old frames have no positions (NULL).
- Schema version 4 records in ``meta`` the version of the content key the store's cores are
  keyed by (``content_key``: content_hash.py). A new store takes the newest (2); a store made
  before (version 3 or older) holds version-1 keys and keeps them, since the two versions of
  one content differ: a core already stored would not be known again by its version-2 key.
  A store of a newer schema than this tool's is refused, not rewritten.
- Schema version 3 added ``cores.file_id`` (content_hash.file_identity of the file hashed at
  ``path``, null when it had just changed): a later run finding the same path with the same
  identity counts the core as seen before without hashing it.
- Schema version 2 added the spool columns of ``cores`` (process_name, uid, boot_id, pid,
  compression) and what makes a signature less trustworthy (unreliable, missing_modules,
  warnings); a version-1 store is migrated in place when it is opened (the columns that
  schema.added_columns() lists).

The same schema and rules hold for PostgreSQL (store_pg.py, for several runs on several
machines sharing one store); stores.open_store() picks the implementation from the --db value.
The API a run uses: core_by_hash, bucket, crashing_frames, buckets_with_cores, bucket_cores,
failed_cores, core_times, recent_cores, ok_cores_at, known_file, set_file_id, record_ok,
record_failed, flush, tick, close.
"""

import json
import os
import sqlite3
import time
from itertools import chain, islice, repeat
from operator import itemgetter

from . import schema
from .schema import (KEY_VERSION_SQL, SCHEMA_VERSION, SIGNATURE_VERSION_SQL, StoreError,
                     check_schema, key_version_of, signature_version_of)

# A batch transaction is committed when it is this old or holds this many cores (see above),
# checked after each core and by tick() while the run waits for its workers: a slow core does
# not keep the cores before it uncommitted, nor the write lock from another run of the store.
# EHBT_TRIAGE_TEST_BATCH_SECONDS: another age, for the tests of what a stopped run keeps.
BATCH_SECONDS = float(os.environ.get("EHBT_TRIAGE_TEST_BATCH_SECONDS") or 0.25)
BATCH_CORES = 64
BUCKET_IDS_KEPT = 10000  # bucket ids by signature a store remembers (see Store._bucket_id)

SPOOL_FIELDS = ("process_name", "uid", "boot_id", "pid", "compression")
# The failed rows of a path other than this content's (see the rules above): (path, sha256).
STALE_FAILED = "DELETE FROM cores WHERE path = ? AND status = 'failed' AND sha256 != ?"
# A bucket's counters and example after one of its cores was deleted (forget_core).
RECOUNT = ("UPDATE buckets SET (count, first_seen, last_seen) = "
           "(SELECT COUNT(*), MIN(core_time), MAX(core_time) FROM cores "
           " WHERE bucket_id = {b} AND status = 'ok'), "
           "example_core_id = CASE WHEN example_core_id = {c} THEN "
           "(SELECT MIN(id) FROM cores WHERE bucket_id = {b} AND status = 'ok') "
           "ELSE example_core_id END WHERE id = {b}")
COMPLETE_STOPS = "('outermost', 'max_frames')"

# Per bucket: what the report shows beside the signature. partial: its ok cores whose
# crashing thread's walk stopped early; unreliable: its signature names no frame.
BUCKET_SELECT = (
    "SELECT b.id, b.signature, b.count, b.first_seen, b.last_seen, b.example_core_id, "
    "c.path AS example_path, c.executable, c.arch, c.signal, c.signal_number, c.signal_code, "
    "c.fault_addr, "
    "(SELECT COUNT(*) FROM cores p WHERE p.bucket_id = b.id AND p.status = 'ok' "
    " AND p.stop_reason IS NOT NULL AND p.stop_reason NOT IN " + COMPLETE_STOPS + ") "
    "AS partial, "
    "(SELECT COALESCE(MAX(u.unreliable), 0) FROM cores u WHERE u.bucket_id = b.id "
    " AND u.status = 'ok') AS unreliable "
    "FROM buckets b LEFT JOIN cores c ON c.id = b.example_core_id WHERE b.count > 0")

SCHEMA = schema.ddl("sqlite")


class Store:
    _batch_started = None  # time.monotonic() when the open batch transaction began, else None
    _batch_cores = 0  # cores written in it
    # What the open batch transaction need not ask SQLite again (it holds the write lock, so
    # no other writer can change it meanwhile): the next threads id (_insert_rows), and the
    # ids of buckets by signature, which are kept across batches (a bucket row is never
    # deleted) except those made by a core or batch that is undone.
    _next_thread = None
    _bucket_ids = None  # signature -> id, at most BUCKET_IDS_KEPT
    _core_buckets = ()  # signatures of the buckets the core being written made
    _batch_buckets = ()  # ... that the cores of the open batch made

    def __init__(self, path):
        self.path = path
        self.db = None
        try:
            new = _empty_or_absent(path)
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
            # synchronous first: switching a new file to WAL is a rollback-journal write, and
            # at the default (FULL) it syncs the file several times (20-100 ms of a fresh
            # store's run on this project's VMs; ~1 ms at NORMAL, the level the store uses).
            # A new (empty) file is made without any sync (OFF; 4-5 fewer, ~4 ms): a power cut
            # before its first checkpoint, which syncs the file, can only lose an empty store,
            # and at NORMAL the cores committed before that checkpoint are not synced either.
            self.db.execute("PRAGMA synchronous=%s" % ("OFF" if new else "NORMAL"))
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            meta = self._meta()
            check_schema(meta.get("schema"))
            if meta.get("schema") != str(SCHEMA_VERSION):
                # One transaction for the tables, the columns an older store lacks and the
                # version, not one per CREATE: each commit writes (and at times syncs) the file.
                self.db.executescript("BEGIN IMMEDIATE;\n%s" % SCHEMA)
                self._migrate()
                meta = self._meta()
            self.key_version = key_version_of(meta.get("content_key"))
            self.signature_version = signature_version_of(meta.get("signature_version"))
            if new:
                self.db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as e:
            if self.db is not None and self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StoreError("%s: %s" % (path, e)) from None
        except StoreError as e:
            raise StoreError("%s: %s" % (path, e)) from None

    def _meta(self):
        """The store's meta rows ({} for a new file): 'schema' (its schema version, text) and,
        from version 4, 'content_key' (the version of its cores' content keys)."""
        try:
            return dict(self.db.execute(
                "SELECT key, value FROM meta WHERE key IN ('schema', 'content_key', "
                "'signature_version')"))
        except sqlite3.OperationalError:  # no meta table yet
            return {}

    def _migrate(self):
        """Brings a store of an older schema up to SCHEMA_VERSION, in the transaction that
        created its missing tables, and commits."""
        try:
            have = {}
            for table, column in schema.added_columns():
                if table not in have:
                    have[table] = {r[1] for r in self.db.execute("PRAGMA table_info(%s)"
                                                                 % table)}
                if column.name not in have[table]:
                    self.db.execute("ALTER TABLE %s ADD COLUMN %s"
                                    % (table, column.sql("sqlite")))
            self.db.execute("INSERT OR IGNORE INTO meta(key, value) SELECT 'content_key', ("
                            + KEY_VERSION_SQL + ")")
            self.db.execute("INSERT OR IGNORE INTO meta(key, value) SELECT "
                            "'signature_version', (" + SIGNATURE_VERSION_SQL + ")")
            self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)",
                            (str(SCHEMA_VERSION),))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self):
        self.flush()
        self.db.close()

    def flush(self):
        """Commits the open batch of cores, if any."""
        if self._batch_started is not None:
            self._batch_started = None
            self._next_thread = None
            try:
                self.db.execute("COMMIT")
            except BaseException:
                self._forget_buckets(self._batch_buckets)
                raise
            finally:
                self._batch_buckets = []

    def tick(self):
        """Commits the open batch once it is BATCH_SECONDS old (called while the run waits)."""
        if (self._batch_started is not None
                and time.monotonic() - self._batch_started >= BATCH_SECONDS):
            self.flush()

    def _exec(self, sql, args=()):
        """One statement; `?` placeholders (PgStore translates them)."""
        return self.db.execute(sql, args)

    # -- reads ---------------------------------------------------------------------------------

    def core_by_hash(self, sha256):
        """The cores row (as a dict) with this content hash, or None."""
        cur = self._exec("SELECT * FROM cores WHERE sha256 = ?", (sha256,))
        row = cur.fetchone()
        return dict(zip([c[0] for c in cur.description], row)) if row else None

    def ok_cores_at(self, path):
        """The ok cores rows (dicts) stored from this path (a re-run's file identity and
        likely_known's hint, in one query)."""
        cur = self._exec("SELECT * FROM cores WHERE path = ? AND status = 'ok'", (path,))
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def set_file_id(self, core_id, path, file_id):
        """Records the identity of the file at the core's own path (a core stored before
        file_id existed, or a file rewritten with the same content)."""
        self._exec("UPDATE cores SET file_id = ? WHERE id = ? AND path = ?",
                   (file_id, core_id, path))

    def known_file(self, path, size, core_time):
        """Whether an ok core of this path, size and core_time is stored (a hint only: the
        content key decides)."""
        return self._exec(
            "SELECT 1 FROM cores WHERE path = ? AND size = ? AND core_time = ? "
            "AND status = 'ok' LIMIT 1", (path, size, core_time)).fetchone() is not None

    def has_stale_failed(self, path, sha256):
        """Whether a failed row of another content is stored at this path (a read: most
        cores seen before have none, and need no write)."""
        return self._exec("SELECT 1 FROM cores WHERE path = ? AND status = 'failed' AND "
                          "sha256 != ? LIMIT 1", (path, sha256)).fetchone() is not None

    def forget_stale_failed(self, path, sha256):
        """A path whose content is now a core stored already (seen before): the failed row of
        its old content goes, as record_ok would delete it (STALE_FAILED)."""
        if not self.has_stale_failed(path, sha256):
            return
        try:
            self._begin()
            self.db.execute(STALE_FAILED, (path, sha256))
            self._keep()
        except BaseException:
            self._undo()
            raise

    def truncated_cores_at(self, path, sha256):
        """The ok rows (id, sha256, size, compression) stored from this path, of other content
        than `sha256`, whose core the engine found truncated."""
        return [tuple(r) for r in self._exec(
            "SELECT id, sha256, size, compression FROM cores WHERE path = ? AND sha256 != ? "
            # The pattern is a parameter (psycopg reads a % in the text itself), and `|| ''`
            # makes it an expression: SQLite prepares a statement whose LIKE pattern is a
            # bare parameter again at every run, to see whether an index could serve it
            # (17 us a call instead of 6, for every core stored).
            "AND status = 'ok' AND warnings LIKE ? || ''",
            (path, sha256, '%"truncated_core"%')).fetchall()]

    def forget_core(self, core_id):
        """Deletes a stored core (its threads and frames go with it) and recounts its bucket,
        all or nothing."""
        try:
            self._begin()
            row = self.db.execute("SELECT bucket_id FROM cores WHERE id = ?",
                                  (core_id,)).fetchone()
            self.db.execute("DELETE FROM cores WHERE id = ?", (core_id,))
            self._next_thread = None  # its threads went with it
            if row and row[0] is not None:
                self.db.execute(RECOUNT.format(b=":b", c=":c"), {"b": row[0], "c": core_id})
            self._keep()
        except BaseException:
            self._undo()
            raise

    def bucket(self, bucket_id):
        cur = self._exec("SELECT * FROM buckets WHERE id = ?", (bucket_id,))
        row = cur.fetchone()
        return dict(zip([c[0] for c in cur.description], row)) if row else None

    def crashing_frames(self, core_id):
        """(tid, stop_reason, [frame dicts]) of the core's crashing thread (else its first)."""
        t = self._exec(
            "SELECT id, tid, stop_reason FROM threads WHERE core_id = ? "
            "ORDER BY crashing DESC, id LIMIT 1", (core_id,)).fetchone()
        if t is None:
            return None, None, []
        cur = self._exec(
            "SELECT idx, pc, module, module_offset, build_id_key, symbol, symbol_offset, source, "
            "src_file, src_line, src_column, inlined, repeats "
            "FROM frames WHERE thread_id = ? ORDER BY idx", (t[0],))
        names = [c[0] for c in cur.description]
        return t[1], t[2], stored_frames(dict(zip(names, r)) for r in cur.fetchall())

    def buckets_with_cores(self, core_ids=None):
        """Buckets (dicts, with an example core path) sorted by count, then signature.
        With core_ids: only the buckets those cores fall into."""
        sql = BUCKET_SELECT
        args = []
        if core_ids is not None:
            ids = sorted(set(core_ids))
            if not ids:
                return []
            # One JSON array, not a placeholder per id: SQLite allows 32 766 per statement.
            sql += (" AND b.id IN (SELECT bucket_id FROM cores WHERE id IN "
                    "(SELECT value FROM json_each(?)))")
            args = [json.dumps(ids)]
        sql += " ORDER BY b.count DESC, b.signature"
        cur = self._exec(sql, args)
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def bucket_cores(self, bucket_id):
        """Every ok core of a bucket (dicts of the cores row), oldest core_time first."""
        cur = self._exec("SELECT * FROM cores WHERE bucket_id = ? AND status = 'ok' "
                         "ORDER BY core_time, path", (bucket_id,))
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def failed_cores(self):
        """(path, error) of every core stored as failed."""
        return [tuple(r) for r in self._exec(
            "SELECT path, error FROM cores WHERE status = 'failed' ORDER BY path").fetchall()]

    def core_times(self, bucket_id=None):
        """core_time of every ok core (of one bucket)."""
        sql = "SELECT core_time FROM cores WHERE status = 'ok' AND core_time IS NOT NULL"
        args = ()
        if bucket_id is not None:
            sql += " AND bucket_id = ?"
            args = (bucket_id,)
        return [r[0] for r in self._exec(sql, args)]

    def recent_cores(self, since, column="analysed_at"):
        """(bucket_id, time) of every ok core whose `column` (analysed_at or core_time) is at
        or after `since` (seconds since the epoch)."""
        assert column in ("analysed_at", "core_time")
        return [tuple(r) for r in self._exec(
            "SELECT bucket_id, %s FROM cores WHERE status = 'ok' AND %s >= ?" % (column, column),
            (since,)).fetchall()]

    def bucket_rows(self):
        """Every bucket with cores (dicts, with an example core path), no order."""
        cur = self._exec(
            "SELECT b.id, b.signature, b.count, b.first_seen, b.last_seen, "
            "c.path AS example_path FROM buckets b "
            "LEFT JOIN cores c ON c.id = b.example_core_id WHERE b.count > 0")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    # -- writes --------------------------------------------------------------------------------

    def _begin(self):
        """Starts writing one core: a savepoint in the batch transaction (opened here when none
        is), so that the core can be undone alone."""
        if self._batch_started is None:
            self.db.execute("BEGIN IMMEDIATE")
            self._batch_started = time.monotonic()
            self._batch_cores = 0
            self._next_thread = None
            self._batch_buckets = []
        self.db.execute("SAVEPOINT core")
        self._core_buckets = []

    def _keep(self):
        """The core is written: it joins the batch, which is committed when full or old."""
        self.db.execute("RELEASE core")
        self._batch_buckets.extend(self._core_buckets)
        self._core_buckets = []
        self._batch_cores += 1
        if (self._batch_cores >= BATCH_CORES
                or time.monotonic() - self._batch_started >= BATCH_SECONDS):
            self.flush()

    def _undo(self):
        """Nothing of the core is kept; the cores before it in the batch are."""
        self._next_thread = None
        self._forget_buckets(self._core_buckets)
        self._core_buckets = []
        if self.db.in_transaction:
            self.db.execute("ROLLBACK TO core")
            self.db.execute("RELEASE core")
        else:  # SQLite rolled the whole transaction back itself (an I/O error, a full disk)
            self._batch_started = None
            self._forget_buckets(self._batch_buckets)
            self._batch_buckets = []

    def _forget_buckets(self, signatures):
        """Bucket rows that were undone: their ids are asked again."""
        for signature in signatures:
            self._bucket_ids.pop(signature, None)

    def _bucket_id(self, signature):
        """The id of the signature's bucket, made when there is none (two statements, asked
        once per signature while the store is open)."""
        ids = self._bucket_ids
        if ids is None:
            ids = self._bucket_ids = {}
        bucket_id = ids.get(signature)
        if bucket_id is None:
            made = self.db.execute("INSERT OR IGNORE INTO buckets(signature) VALUES (?)",
                                   (signature,)).rowcount
            bucket_id = self.db.execute("SELECT id FROM buckets WHERE signature = ?",
                                        (signature,)).fetchone()[0]
            if made:
                self._core_buckets.append(signature)
            if len(ids) >= BUCKET_IDS_KEPT:
                ids.clear()
            ids[signature] = bucket_id
        return bucket_id

    def record_ok(self, info, doc, signature, frame_key=None, rows=None):
        """Stores an analysed core, its threads and frames, and updates its bucket, all or
        nothing (committed with its batch: flush()). `info`: path, sha256, size, core_time.
        Returns (core_id, bucket_id).

        The threads and frames come from `rows` (see document_rows(); a worker builds them,
        so the parent only inserts) or, without it, from the document's threads with
        `frame_key(frame)` giving each frame's build_id_key."""
        if rows is None:
            rows = document_rows(doc, frame_key or (lambda f: None))
        sig = doc.get("signal") or {}
        now = time.time()
        extra = extra_columns(info)
        try:
            self._begin()
            old = self.db.execute("SELECT id, status FROM cores WHERE sha256 = ?",
                                  (info["sha256"],)).fetchone()
            if old is not None:
                if old[1] == "ok":  # someone else stored it meanwhile: nothing to add
                    self._undo()
                    row = self.core_by_hash(info["sha256"])
                    return row["id"], row["bucket_id"]
                self.db.execute("DELETE FROM cores WHERE id = ?", (old[0],))
            self.db.execute(STALE_FAILED, (info["path"], info["sha256"]))
            bucket_id = self._bucket_id(signature)
            crashing = _crashing_stop(doc)
            core_id = self.db.execute(
                "INSERT INTO cores(sha256, path, size, executable, arch, signal, signal_number, "
                "signal_code, fault_addr, core_time, status, error, stop_reason, signature, "
                "bucket_id, analysed_at, %s) VALUES (?,?,?,?,?,?,?,?,?,?,'ok',NULL,?,?,?,?,%s)"
                % (", ".join(EXTRA_COLUMNS), ",".join("?" * len(EXTRA_COLUMNS))),
                (info["sha256"], info["path"], info.get("size"), doc.get("executable"),
                 doc.get("arch"), sig.get("name"), sig.get("number"), sig.get("code"),
                 sig.get("address"), info.get("core_time"), crashing, signature, bucket_id,
                 now) + extra).lastrowid
            self._insert_rows(core_id, rows)
            self._count_in_bucket(bucket_id, core_id, info.get("core_time"))
            self._keep()
            return core_id, bucket_id
        except BaseException:
            self._undo()
            raise

    def record_failed(self, info, error):
        """Stores (or refreshes) a core that could not be analysed. Cores already ok are left
        alone. Returns the core id."""
        now = time.time()
        try:
            self._begin()
            old = self.db.execute("SELECT id, status FROM cores WHERE sha256 = ?",
                                  (info["sha256"],)).fetchone()
            if old is not None and old[1] == "ok":
                self._undo()
                return old[0]
            if old is not None:
                self.db.execute("DELETE FROM cores WHERE id = ?", (old[0],))
            self.db.execute(STALE_FAILED, (info["path"], info["sha256"]))
            core_id = self.db.execute(
                "INSERT INTO cores(sha256, path, size, core_time, status, error, analysed_at, "
                "%s) VALUES (?,?,?,?,'failed',?,?,%s)"
                % (", ".join(EXTRA_COLUMNS), ",".join("?" * len(EXTRA_COLUMNS))),
                (info["sha256"], info["path"], info.get("size"), info.get("core_time"), error,
                 now) + extra_columns(info)).lastrowid
            self._keep()
            return core_id
        except BaseException:
            self._undo()
            raise

    def _insert_rows(self, core_id, rows):
        """Two statements per core, whatever its thread count: the thread ids are given
        explicitly (this transaction holds the write lock, so MAX(id) cannot move meanwhile)
        and the frames refer to them."""
        threads, frames = rows
        first = self._next_thread
        if first is None:
            first = self.db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM threads").fetchone()[0]
        self._next_thread = first + len(threads)
        self.db.executemany(
            "INSERT INTO threads(id, core_id, tid, crashing, stop_reason, stop_detail) "
            "VALUES (?,?,?,?,?,?)",
            [(first + n, core_id) + tuple(t) for n, t in enumerate(threads)])
        self._insert_frames(frame_rows(core_id, first, frames), len(frames[0]))

    def _insert_frames(self, rows, count):
        """`count` frames rows (an iterable of tuples in INSERT_FRAMES' order)."""
        rows = iter(rows)
        whole = count - count % FRAMES_PER_INSERT
        if whole:
            # A deep stack's frames FRAMES_PER_INSERT to a statement: a third less per row
            # than one statement each (935 frames rows: ~4.5 -> ~3 us a row).
            flat = list(chain.from_iterable(islice(rows, whole)))
            width = FRAMES_PER_INSERT * FRAME_ROW
            self.db.executemany(INSERT_FRAMES_MANY,
                                [flat[i:i + width] for i in range(0, len(flat), width)])
        if whole < count:
            self.db.executemany(INSERT_FRAMES, rows)  # the rest (islice took the others)

    def _count_in_bucket(self, bucket_id, core_id, core_time):
        """Adds one ok core to its bucket's counters: count + 1, first_seen and last_seen
        widened to its core_time (the aggregates MIN and MAX over the bucket's ok cores, which
        skip a NULL core_time). Exact, not an estimate: the transaction holds the write lock,
        and every writer keeps the counters equal to what RECOUNT would compute (this core is
        new to the bucket: a row of its content, if any, was failed and is deleted above;
        forget_core recounts). The recount it replaces read every ok core of the bucket for
        each insert (600 small cores in 10 buckets: 32 us a core; 10 000 cores in a bucket:
        3.7 ms), as PostgreSQL's count + 1 (store_pg.py) never did."""
        self.db.execute(
            "UPDATE buckets SET count = count + 1, "
            "first_seen = CASE WHEN :t IS NULL OR first_seen <= :t THEN first_seen ELSE :t END, "
            "last_seen = CASE WHEN :t IS NULL OR last_seen >= :t THEN last_seen ELSE :t END, "
            "example_core_id = COALESCE(example_core_id, :c) WHERE id = :b",
            {"b": bucket_id, "c": core_id, "t": core_time})


# The cores columns written from a core's info dict by name (extra_columns): those added after
# schema version 1.
EXTRA_COLUMNS = tuple(c.name for table, c in schema.added_columns() if table == "cores")


def extra_columns(info):
    """The values of EXTRA_COLUMNS for a core's info dict (lists stored as JSON text)."""
    values = []
    get = info.get
    for name in EXTRA_COLUMNS:
        v = get(name)
        if type(v) in _AS_IS:
            pass
        elif v == [] and type(v) is list:  # most cores: no warnings, no missing modules
            v = "[]"
        elif isinstance(v, (list, dict)):
            v = json.dumps(v, sort_keys=True)
        elif isinstance(v, bool):
            v = int(v)
        values.append(v)
    return tuple(values)


_AS_IS = frozenset((str, int, float, type(None)))  # extra_columns stores these unchanged


def frame_rows(core_id, first_thread_id, frames):
    """The frames columns of document_rows as rows (core_id, thread_id, idx, ...), made by
    zip in C: no Python code runs per frame."""
    return zip(repeat(core_id), map(first_thread_id.__add__, frames[0]), *frames[1:])


FRAME_COLUMNS = 14  # the columns document_rows gives per frames row
FRAME_ROW = FRAME_COLUMNS + 1  # and frame_rows (core_id in front)
INSERT_FRAMES = (
    "INSERT INTO frames(core_id, thread_id, idx, repeats, pc, module, module_offset, "
    "build_id_key, symbol, symbol_offset, source, src_file, src_line, src_column, inlined) "
    "VALUES ")
# Rows of one multi-row INSERT: 64 * 15 = 960 parameters, within the 999 of SQLite before 3.32.
FRAMES_PER_INSERT = 64
INSERT_FRAMES_MANY = INSERT_FRAMES + ",".join(["(%s)" % ",".join("?" * FRAME_ROW)]
                                              * FRAMES_PER_INSERT)
INSERT_FRAMES += "(%s)" % ",".join("?" * FRAME_ROW)


# The most frames stored_frames gives for a thread: far above any walk's (the engine's
# max_frames is 2048 unless raised), so that a damaged `repeats` cannot make millions.
MAX_STORED_FRAMES = 1 << 16


def stored_frames(rows):
    """The frames of a thread's frames rows (dicts, in idx order), one per frame: a row that
    stands for `repeats` frames gives that many, their idx counting up from its own."""
    out = []
    for row in rows:
        if len(out) >= MAX_STORED_FRAMES:
            break
        count = row.pop("repeats", None)
        count = count if type(count) is int and count > 1 else 1  # NULL (older store): one
        count = min(count, MAX_STORED_FRAMES - len(out))
        frame = stored_frame(row)
        out.append(frame)
        for k in range(1, count):
            out.append(dict(frame, idx=frame["idx"] + k, inlined=list(frame["inlined"])))
    return out


def stored_frame(row):
    """A frames row (dict) with its position and inlined calls as the document spells them:
    ``location`` {file, line, column} or None, ``inlined`` a list (the src_* columns go)."""
    src_file, line, column = row.pop("src_file"), row.pop("src_line"), row.pop("src_column")
    row["location"] = ({"file": src_file, "line": line, "column": column} if src_file
                       else None)
    calls = row.pop("inlined")
    row["inlined"] = json.loads(calls) if calls else []
    return row


# What document_rows reads of a frame, in one C call: the engine's documents have every key.
_FRAME_FIELDS = itemgetter("pc", "module", "module_offset", "symbol", "symbol_offset", "source",
                           "location", "inlined", "index")
_POSITION = itemgetter("file", "line", "column")  # of a frame's location
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(.., separators=..)


def document_rows(doc, frame_key):
    """(threads, frames) of an ehbt-backtrace/1 document, ready for _insert_rows:
    threads [(tid, crashing, stop_reason, stop_detail)]; frames rows as FRAME_COLUMNS columns
    (lists of equal length): thread number in that list, idx, repeats, pc, module,
    module_offset, build_id_key, symbol, symbol_offset, source, src_file, src_line,
    src_column, inlined (JSON text, None when nothing is inlined). `frame_key(frame)` must
    depend on the frame's module and module_offset alone: it is asked once per distinct pair.

    A row stands for `repeats` frames of its thread, idx, idx + 1 ...: a frame equal to the
    one before it in every field but its index (the next one) adds to that frame's row
    instead of making its own. A recursion that overflows the stack repeats one return
    address hundreds of times (935 frames, 6 rows); rows of its own would cost the store
    more than the whole walk (docs/triage.md, "Speed").

    Made in the worker and sent to the parent, which only inserts: columns, so that the
    parent adds its two ids per row without a Python loop (_insert_rows), and one object per
    distinct string (the threads of a core share most of their frames), which marshal sends
    once and then as a reference -- 60% fewer bytes to write, read and unpack for a CPython
    core of 17 threads.

    The loop runs once per frame of every thread, so it does as little as it can: the fields
    in one itemgetter call (a frame without some key -- a hand-made document -- takes the
    slow path), and a frame equal to one seen before reuses that frame's row tail."""
    threads = []
    numbers, indexes, counts, tails = [], [], [], []  # the columns of each row, tail shared
    same = {}
    one = same.setdefault
    keys = {}
    seen = {}  # the fields of a frame (without its index) -> its row without thread and idx
    fields, position = _FRAME_FIELDS, _POSITION
    for n, t in enumerate(doc.get("threads") or []):
        threads.append((t.get("tid"), 1 if t.get("crashing") else 0, t.get("stop_reason"),
                        t.get("stop_detail")))
        for i, f in enumerate(t.get("frames") or []):
            try:
                pc, module, offset, symbol, symbol_offset, source, at, calls, index = fields(f)
            except KeyError:
                get = f.get
                pc, module, offset, symbol, symbol_offset, source, at, calls, index = (
                    get("pc"), get("module"), get("module_offset"), get("symbol"),
                    get("symbol_offset"), get("source"), get("location"), get("inlined"),
                    get("index", i))
            if at:
                try:
                    src_file, src_line, src_column = position(at)
                except KeyError:
                    src_file, src_line, src_column = (at.get("file"), at.get("line"),
                                                      at.get("column"))
            else:
                src_file = src_line = src_column = None
            calls = _COMPACT(calls) if calls else None
            what = (pc, module, offset, symbol, symbol_offset, source, src_file, src_line,
                    src_column, calls)
            tail = seen.get(what)
            if tail is None:
                where = (module, offset)
                key = keys.get(where, keys)
                if key is keys:  # (a key may be None: `keys` itself marks "not asked yet")
                    key = keys[where] = frame_key(f)
                tail = seen[what] = (
                    one(pc, pc), one(module, module), one(offset, offset), key,
                    one(symbol, symbol), one(symbol_offset, symbol_offset), one(source, source),
                    one(src_file, src_file), src_line, src_column, calls)
            elif (tail is tails[-1] and numbers[-1] == n and type(index) is int
                  and type(indexes[-1]) is int and index == indexes[-1] + counts[-1]):
                counts[-1] += 1  # the last row's frame again, at the index after its last
                continue
            # Four appends, not one row tuple (n, index, 1) + tail per row: ~13% less for a
            # deep stack of distinct frames.
            numbers.append(n)
            indexes.append(index)
            counts.append(1)
            tails.append(tail)
    if not tails:
        return threads, [[] for _ in range(FRAME_COLUMNS)]
    return threads, [numbers, indexes, counts] + [list(c) for c in zip(*tails)]


def _empty_or_absent(path):
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return True  # absent (or unreadable: connect() says why)


def _crashing_stop(doc):
    for t in doc.get("threads") or []:
        if t.get("crashing"):
            return t.get("stop_reason")
    threads = doc.get("threads") or []
    return threads[0].get("stop_reason") if threads else None

