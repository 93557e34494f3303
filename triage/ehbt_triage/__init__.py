# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage: batch core-dump triage on top of the ehbt engine.

Modules: cli (arguments), exits (exit statuses), discover (which files are cores; never opens
special files), spool (systemd-coredump file names), plain_core (a compressed core decompressed
once, for its content key and the engine), content_hash (the content key), outputs (output
paths checked before work), engine (the one adapter to the engine: core -> ehbt-backtrace/1
dict), workers + forked (killable local worker processes), dask_pool + helper (the
dask.distributed executor), signature + skipmatch, schema (the tables, for both databases),
store (the store API and SQLite), store_pg (PostgreSQL), stores (which store a --db names),
credentials (the passwords in a --db value, and mask(), the one function that hides them), run
(one run), recent (`report --since`) + changes (its query), report_text, report_html, jsonl,
version. No two of them import each other (directly or around a circle).
"""


def __getattr__(name):
    """``__version__`` on first use, not at every import of the package."""
    if name == "__version__":
        from .version import version

        return version()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
