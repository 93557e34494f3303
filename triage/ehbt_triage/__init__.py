# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage: batch core-dump triage on top of the ehbt engine.

Modules: cli (arguments), discover (which files are cores), engine (the one adapter to the
engine: core -> ehbt-backtrace/1 dict), workers (killable worker processes), signature,
store (SQLite), run (one run), report_text, report_html, jsonl.
"""

__version__ = "0.1.0"
