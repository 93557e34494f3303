# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store: the SQLite store's schema (schema.py, spelled for PostgreSQL) and rules
(see store.py) for a database that several ehbt-triage runs on several machines write at the
same time.

What makes it exact under concurrency:
- ``cores.sha256`` is UNIQUE and a core is inserted with ``ON CONFLICT DO NOTHING``: when two
  runs analyse the same content, the second insert waits for the first transaction and then
  inserts nothing, and that run rolls back its whole core (threads, frames, bucket counter).
- The bucket counter is changed only in the transaction whose core insert won, by
  ``count = count + 1`` on the bucket row (PostgreSQL re-reads a row updated concurrently, so
  increments are never lost); first/last_seen likewise by LEAST/GREATEST.
- One transaction per core, so a run killed at any point leaves whole cores only.
- Thread ids come from the sequence, not from MAX(id) as in SQLite (no global write lock).
A transaction that still collides (deadlock, serialization failure) is simply run again.
"""

import time
from itertools import repeat

from . import schema
from .schema import (KEY_VERSION_SQL, SCHEMA_VERSION, SIGNATURE_VERSION_SQL, StoreError,
                     check_schema, key_version_of, signature_version_of)
from .store import (BUCKET_SELECT, EXTRA_COLUMNS, RECOUNT, STALE_FAILED, Store,
                    _crashing_stop, document_rows, extra_columns)
from .credentials import mask

SCHEMA = schema.ddl("postgresql")

_ATTEMPTS = 5


class PgStore(Store):
    def __init__(self, url):
        import psycopg

        self._psycopg = psycopg
        # As reports show it: without its password (stores.mask), as every message below.
        self.path = mask(url, url)
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=10)
            # Several runs may create the schema at once: an advisory lock serialises that.
            with self.db.transaction():
                self.db.execute("SELECT pg_advisory_xact_lock(7217)")
                self.db.execute(SCHEMA)
                row = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                check_schema(row[0] if row else None)
                # A store of an older schema gets the newer columns (schema.added_columns),
                # and the version of the content keys its cores have (KEY_VERSION_SQL).
                for table, column in schema.added_columns():
                    self.db.execute("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s"
                                    % (table, column.sql("postgresql")))
                self.db.execute("INSERT INTO meta(key, value) SELECT 'content_key', ("
                                + KEY_VERSION_SQL + ") ON CONFLICT (key) DO NOTHING")
                self.db.execute("INSERT INTO meta(key, value) SELECT 'signature_version', ("
                                + SIGNATURE_VERSION_SQL + ") ON CONFLICT (key) DO NOTHING")
                self.db.execute("INSERT INTO meta(key, value) VALUES ('schema', %s) "
                                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                                (str(SCHEMA_VERSION),))
                row = self.db.execute(
                    "SELECT value FROM meta WHERE key = 'content_key'").fetchone()
                self.key_version = key_version_of(row[0] if row else None)
                row = self.db.execute(
                    "SELECT value FROM meta WHERE key = 'signature_version'").fetchone()
                self.signature_version = signature_version_of(row[0] if row else None)
        except psycopg.Error as e:
            # libpq's parse errors quote what they could not read, a password included.
            text = str(e).strip()
            raise StoreError("%s: %s" % (self.path, mask(text.splitlines()[0], url) if text
                                         else type(e).__name__)) from None
        except StoreError as e:
            raise StoreError("%s: %s" % (self.path, mask(e, url))) from None

    def _exec(self, sql, args=()):
        return self.db.execute(sql.replace("?", "%s"), args)

    def buckets_with_cores(self, core_ids=None):
        """As in SQLite, but the ids travel as one array: a run of 100 000 cores would pass
        PostgreSQL's 65 535 parameters per statement."""
        sql = BUCKET_SELECT
        args = ()
        if core_ids is not None:
            ids = sorted(set(core_ids))
            if not ids:
                return []
            sql += " AND b.id IN (SELECT bucket_id FROM cores WHERE id = ANY(%s))"
            args = (ids,)
        cur = self.db.execute(sql + " ORDER BY b.count DESC, b.signature", args)
        names = [c.name for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def _retrying(self, body):
        """Runs body() in a transaction, again when PostgreSQL says it collided with another."""
        errors = self._psycopg.errors
        for attempt in range(_ATTEMPTS):
            try:
                with self.db.transaction():
                    return body()
            except (errors.DeadlockDetected, errors.SerializationFailure):
                if attempt == _ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def forget_stale_failed(self, path, sha256):
        if self.has_stale_failed(path, sha256):
            self._retrying(lambda: self._exec(STALE_FAILED, (path, sha256)))

    def forget_core(self, core_id):
        def body():
            row = self.db.execute("SELECT bucket_id FROM cores WHERE id = %s FOR UPDATE",
                                  (core_id,)).fetchone()
            self.db.execute("DELETE FROM cores WHERE id = %s", (core_id,))
            if row and row[0] is not None:
                # Counted again from the cores (a concurrent insert's count + 1 waits for
                # this row lock and then adds to the new value).
                self.db.execute(RECOUNT.format(b="%(b)s", c="%(c)s"),
                                {"b": row[0], "c": core_id})

        self._retrying(body)

    def record_ok(self, info, doc, signature, frame_key=None, rows=None):
        if rows is None:
            rows = document_rows(doc, frame_key or (lambda f: None))
        sig = doc.get("signal") or {}

        def body():
            db = self.db
            old = db.execute("SELECT id, status, bucket_id FROM cores WHERE sha256 = %s "
                             "FOR UPDATE", (info["sha256"],)).fetchone()
            if old is not None and old[1] == "ok":  # another run stored it meanwhile
                return old[0], old[2], False
            if old is not None:
                db.execute("DELETE FROM cores WHERE id = %s", (old[0],))
            self._exec(STALE_FAILED, (info["path"], info["sha256"]))
            db.execute("INSERT INTO buckets(signature) VALUES (%s) ON CONFLICT DO NOTHING",
                       (signature,))
            bucket_id = db.execute("SELECT id FROM buckets WHERE signature = %s",
                                   (signature,)).fetchone()[0]
            got = db.execute(
                "INSERT INTO cores(sha256, path, size, executable, arch, signal, signal_number, "
                "signal_code, fault_addr, core_time, status, error, stop_reason, signature, "
                "bucket_id, analysed_at, %s) VALUES (%%s,%%s,%%s,%%s,%%s,%%s,%%s,%%s,%%s,%%s,"
                "'ok',NULL,%%s,%%s,%%s,%%s,%s) ON CONFLICT (sha256) DO NOTHING RETURNING id"
                % (", ".join(EXTRA_COLUMNS), ",".join(["%s"] * len(EXTRA_COLUMNS))),
                (info["sha256"], info["path"], info.get("size"), doc.get("executable"),
                 doc.get("arch"), sig.get("name"), sig.get("number"), sig.get("code"),
                 sig.get("address"), info.get("core_time"), _crashing_stop(doc), signature,
                 bucket_id, time.time()) + extra_columns(info)).fetchone()
            if got is None:
                # Another run committed this content after our SELECT: theirs counts.
                raise _Lost()
            core_id = got[0]
            self._insert_rows(core_id, rows)
            t = info.get("core_time")
            db.execute(
                "UPDATE buckets SET count = count + 1, first_seen = LEAST(first_seen, %s), "
                "last_seen = GREATEST(last_seen, %s), "
                "example_core_id = COALESCE(example_core_id, %s) WHERE id = %s",
                (t, t, core_id, bucket_id))
            return core_id, bucket_id, True

        try:
            core_id, bucket_id, _ = self._retrying(body)
        except _Lost:
            row = self.core_by_hash(info["sha256"])
            return row["id"], row["bucket_id"]
        return core_id, bucket_id

    def record_failed(self, info, error):
        def body():
            db = self.db
            old = db.execute("SELECT id, status FROM cores WHERE sha256 = %s FOR UPDATE",
                             (info["sha256"],)).fetchone()
            if old is not None and old[1] == "ok":
                return old[0]
            if old is not None:
                db.execute("DELETE FROM cores WHERE id = %s", (old[0],))
            self._exec(STALE_FAILED, (info["path"], info["sha256"]))
            got = db.execute(
                "INSERT INTO cores(sha256, path, size, core_time, status, error, analysed_at, "
                "%s) VALUES (%%s,%%s,%%s,%%s,'failed',%%s,%%s,%s) ON CONFLICT (sha256) "
                "DO NOTHING RETURNING id"
                % (", ".join(EXTRA_COLUMNS), ",".join(["%s"] * len(EXTRA_COLUMNS))),
                (info["sha256"], info["path"], info.get("size"), info.get("core_time"), error,
                 time.time()) + extra_columns(info)).fetchone()
            if got is None:
                raise _Lost()
            return got[0]

        try:
            return self._retrying(body)
        except _Lost:
            return self.core_by_hash(info["sha256"])["id"]

    def _insert_rows(self, core_id, rows):
        threads, frames = rows
        if not threads:
            return
        ids = [r[0] for r in self.db.execute(
            "SELECT nextval(pg_get_serial_sequence('threads', 'id')) "
            "FROM generate_series(1, %s)", (len(threads),)).fetchall()]
        with self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO threads(id, core_id, tid, crashing, stop_reason, stop_detail) "
                "VALUES (%s,%s,%s,%s,%s,%s)",
                [(ids[n], core_id) + tuple(t) for n, t in enumerate(threads)])
            cur.executemany(
                "INSERT INTO frames(core_id, thread_id, idx, repeats, pc, module, "
                "module_offset, build_id_key, symbol, symbol_offset, source, src_file, src_line, "
                "src_column, inlined) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                list(zip(repeat(core_id), map(ids.__getitem__, frames[0]), *frames[1:])))


class _Lost(Exception):
    """This run's insert lost the race for a content key: the transaction is undone."""
