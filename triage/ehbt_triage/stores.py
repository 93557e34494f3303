# SPDX-License-Identifier: Apache-2.0
"""Which store a --db value names: a PostgreSQL URL (store_pg.py) or a SQLite file
(store.py). Apart from both so that neither store module imports the other's (PgStore
builds on the SQLite Store; nothing goes the other way).
"""

import os

from .store import Store


def is_url(spec):
    return spec.startswith(("postgresql://", "postgres://"))


def open_store(spec):
    """The store named by a --db value: a PostgreSQL URL, else a SQLite file path. Raises
    schema.StoreError, or ImportError when a URL is given and psycopg is missing."""
    if is_url(spec):
        from .store_pg import PgStore  # psycopg is only needed by those who use it

        return PgStore(spec)
    return Store(spec)


def describe(spec):
    """The --db value as the report prints it (a URL without its password)."""
    if is_url(spec):
        import re

        return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", spec)
    return spec


def default_path():
    """The SQLite store a run uses without --db: in the working directory."""
    return os.path.join(os.getcwd(), "ehbt-triage.sqlite")
