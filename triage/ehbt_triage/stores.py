# SPDX-License-Identifier: Apache-2.0
"""Which store a --db value names: PostgreSQL (store_pg.py) or a SQLite file (store.py), and
how a value is shown (without its password: credentials.py). Apart from both stores so that
neither store module imports the other's (PgStore builds on the SQLite Store; nothing goes
the other way).
"""

import os

from .credentials import is_postgres, mask
from .store import Store


def open_store(spec):
    """The store named by a --db value: PostgreSQL (a URL or a keyword/value string), else a
    SQLite file path. Raises schema.StoreError (its text masked), or ImportError when
    PostgreSQL is named and psycopg is missing."""
    if is_postgres(spec):
        from .store_pg import PgStore  # psycopg is only needed by those who use it

        return PgStore(spec)
    return Store(spec)


def describe(spec):
    """The --db value as messages and reports show it: without its passwords."""
    if is_postgres(spec):
        return mask(spec, spec)
    return spec


def default_path():
    """The SQLite store a run uses without --db: in the working directory."""
    return os.path.join(os.getcwd(), "ehbt-triage.sqlite")
