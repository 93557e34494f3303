# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage: batch core-dump triage on top of the ehbt engine.

Modules: cli (arguments), discover (which files are cores; never opens special files),
spool (systemd-coredump file names), plain_core (a compressed core decompressed once, for its
content key and the engine), outputs (output paths checked before work), engine (the one
adapter to the engine: core -> ehbt-backtrace/1 dict), workers (killable local worker processes), dask_pool + helper (the
dask.distributed executor), signature, store (the store API and SQLite), store_pg
(PostgreSQL), run (one run), recent (`report --since`), report_text, report_html, jsonl,
version.
"""


def __getattr__(name):
    """``__version__`` on first use, not at every import of the package."""
    if name == "__version__":
        from .version import version

        return version()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
