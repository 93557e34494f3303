# SPDX-License-Identifier: Apache-2.0
"""The store's schema, written once for both databases: every table, its columns (name, kind,
constraints) and indexes. ddl("sqlite") and ddl("postgresql") spell it out per dialect, only
the column kinds being spelled differently (TYPES), so the two stores cannot drift apart; a
column that a later schema version added says so (``since``), and an older store gets it
with ALTER TABLE when it is opened (added_columns).

Also here, because both stores check them the same way: the schema version, the version of
the content keys a store holds, the version of the signatures it buckets by, and the error a
store raises.
"""

from .content_hash import BLOCKS as KEY_VERSIONS
from .content_hash import KEY_VERSION
from .signature import SIGNATURE_VERSION, SIGNATURE_VERSIONS

# A store at this version is opened without running the DDL again: change TABLES (a table, a
# column, an index), raise the version.
SCHEMA_VERSION = 6

DIALECTS = ("sqlite", "postgresql")

# Column kinds and how each dialect spells them. SQLite's INTEGER is 64 bits whatever it is
# called; PostgreSQL's is 32, so what may pass 2^31 (ids, counts, sizes, pids, uids) is BIGINT.
TYPES = {
    "id": ("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"),  # the row id, given by the store
    "ref": ("INTEGER", "BIGINT"),  # a row id of another table
    "int": ("INTEGER", "INTEGER"),  # small numbers: signal numbers, flags, indexes
    "bigint": ("INTEGER", "BIGINT"),
    "real": ("REAL", "DOUBLE PRECISION"),  # times (seconds since the epoch)
    "text": ("TEXT", "TEXT"),
}


class Column:
    __slots__ = ("name", "kind", "constraints", "since")

    def __init__(self, name, kind, constraints="", since=1):
        assert kind in TYPES, kind
        self.name, self.kind, self.constraints, self.since = name, kind, constraints, since

    def sql(self, dialect):
        """`name TYPE constraints` in that dialect."""
        spelled = TYPES[self.kind][DIALECTS.index(dialect)]
        return " ".join(p for p in (self.name, spelled, self.constraints) if p)


C = Column

# Tables in creation order (a table's references come before it). The constraints are SQL
# both dialects read alike.
TABLES = (
    ("meta", (
        C("key", "text", "PRIMARY KEY"),
        C("value", "text"),
    )),
    ("buckets", (
        C("id", "id"),
        C("signature", "text", "NOT NULL UNIQUE"),
        C("first_seen", "real"),
        C("last_seen", "real"),
        C("count", "bigint", "NOT NULL DEFAULT 0"),
        C("example_core_id", "ref"),
    )),
    ("cores", (
        C("id", "id"),
        C("sha256", "text", "NOT NULL UNIQUE"),
        C("path", "text", "NOT NULL"),
        C("size", "bigint"),
        C("executable", "text"),
        C("arch", "text"),
        C("signal", "text"),
        C("signal_number", "int"),
        C("signal_code", "int"),
        C("fault_addr", "text"),
        C("core_time", "real"),
        C("status", "text", "NOT NULL CHECK (status IN ('ok', 'failed'))"),
        C("error", "text"),
        C("stop_reason", "text"),
        C("signature", "text"),
        C("bucket_id", "ref", "REFERENCES buckets(id)"),
        C("analysed_at", "real", "NOT NULL"),
        # Version 2: the systemd-coredump name's fields and the file's compression ...
        C("process_name", "text", since=2),
        C("uid", "bigint", since=2),
        C("boot_id", "text", since=2),
        C("pid", "bigint", since=2),
        C("compression", "text", since=2),
        # ... and what makes a signature less trustworthy.
        C("unreliable", "int", since=2),
        C("missing_modules", "text", since=2),  # JSON list
        C("warnings", "text", since=2),  # JSON list
        # Version 3: content_hash.file_identity of the file hashed at `path`.
        C("file_id", "text", since=3),
        # Version 5: the signature version the core was signed with (signature.py).
        C("signature_version", "int", since=5),
    )),
    ("threads", (
        C("id", "id"),
        C("core_id", "ref", "NOT NULL REFERENCES cores(id) ON DELETE CASCADE"),
        C("tid", "bigint"),
        C("crashing", "int", "NOT NULL"),
        C("stop_reason", "text"),
        C("stop_detail", "text"),
    )),
    ("frames", (
        C("id", "id"),
        C("core_id", "ref", "NOT NULL REFERENCES cores(id) ON DELETE CASCADE"),
        C("thread_id", "ref", "NOT NULL REFERENCES threads(id) ON DELETE CASCADE"),
        C("idx", "int", "NOT NULL"),
        C("pc", "text"),
        C("module", "text"),
        C("module_offset", "text"),
        C("build_id_key", "text"),
        C("symbol", "text"),
        C("symbol_offset", "text"),
        C("source", "text"),
        # Version 5: the frame's source position from debug info (#28) and the calls
        # inlined at its pc, innermost first, as the document spells them: JSON
        # [{"function", "location": {"file", "line", "column"}|null}] (NULL when none).
        C("src_file", "text", since=5),
        C("src_line", "int", since=5),
        C("src_column", "int", since=5),
        C("inlined", "text", since=5),
        # Version 6: how many frames the row stands for, from idx on (idx, idx + 1, ...):
        # the frames of a recursion that repeat the same one but for their index share a
        # row (NULL in the rows of an older store, which are one frame each).
        C("repeats", "int", since=6),
    )),
)

# (name, table, columns)
INDEXES = (
    ("cores_bucket", "cores", "bucket_id"),
    ("cores_path", "cores", "path"),
    ("threads_core", "threads", "core_id"),
    ("frames_thread", "frames", "thread_id, idx"),
    ("frames_core", "frames", "core_id"),
)


def columns(table):
    """The Column objects of a table, in order."""
    return dict(TABLES)[table]


def ddl(dialect):
    """The statements that create every table and index that does not exist yet, as one
    script (`;`-separated)."""
    out = []
    for table, cols in TABLES:
        body = ",\n".join("  " + c.sql(dialect) for c in cols)
        out.append("CREATE TABLE IF NOT EXISTS %s (\n%s\n);" % (table, body))
    for name, table, cols in INDEXES:
        out.append("CREATE INDEX IF NOT EXISTS %s ON %s(%s);" % (name, table, cols))
    return "\n".join(out) + "\n"


def added_columns():
    """[(table, Column)] of the columns added after schema version 1: a store made before
    them gets them with ALTER TABLE (NULL in its old rows)."""
    return [(table, c) for table, cols in TABLES for c in cols if c.since > 1]


class StoreError(Exception):
    pass


def check_schema(version):
    """StoreError for a store made by a newer ehbt-triage (its schema version above ours):
    writing our schema version over it would hide that from the tool that made it."""
    try:
        newer = int(version) > SCHEMA_VERSION
    except (TypeError, ValueError):
        newer = version is not None
    if newer:
        raise StoreError("made by a newer ehbt-triage (schema version %s; this one knows %d)"
                         % (version, SCHEMA_VERSION))


def key_version_of(value):
    """The store's content key version from its meta value; StoreError for an unknown one."""
    try:
        version = int(value)
    except (TypeError, ValueError):
        version = None
    if version not in KEY_VERSIONS:
        raise StoreError("its cores are keyed by content key version %r, which this "
                         "ehbt-triage does not know" % (value,))
    return version


def signature_version_of(value):
    """The store's signature version from its meta value; StoreError for an unknown one."""
    try:
        version = int(value)
    except (TypeError, ValueError):
        version = None
    if version not in SIGNATURE_VERSIONS:
        raise StoreError("its buckets are made by signature version %r, which this "
                         "ehbt-triage does not know" % (value,))
    return version


# The signature version for a store that has none recorded: a store with cores was bucketed
# before signatures had versions (version 1: physical frames only) and keeps that version, so
# that its new cores fall into its old buckets; an empty one takes the newest.
SIGNATURE_VERSION_SQL = ("SELECT CASE WHEN EXISTS (SELECT 1 FROM cores) THEN '1' ELSE '%d' END"
                         % SIGNATURE_VERSION)

# The content key version for a store that has none recorded: a store with cores was made
# before keys had versions (version 1); an empty one takes the newest.
KEY_VERSION_SQL = ("SELECT CASE WHEN EXISTS (SELECT 1 FROM cores) THEN '1' ELSE '%d' END"
                   % KEY_VERSION)
