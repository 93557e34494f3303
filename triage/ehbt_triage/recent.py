# SPDX-License-Identifier: Apache-2.0
"""``ehbt-triage report --since 7d``: what changed in a store recently, as text (and HTML with
--html). The query is changes.py's, which the HTML report of a triage run shows too.
"""

import os
import sys

from .changes import DAY, changes
from .exits import EXIT_OK, EXIT_USAGE
from .schema import StoreError
from .credentials import is_postgres, mask
from .stores import default_path, describe, open_store


def write_text(result, window_text, out):
    days = result["days"]
    out.write("Changes in the last %s (%s .. %s UTC), by day:\n" % (
        window_text, days[0].isoformat(), days[-1].isoformat()))
    head = " ".join(d.strftime("%m-%d") for d in days)
    for title, group in (("New buckets", result["new"]), ("Buckets that grew", result["grew"])):
        out.write("\n%s (%d):\n" % (title, len(group)))
        if not group:
            out.write("  (none)\n")
            continue
        out.write("%6s %6s  %s  %s\n" % ("recent", "total", head, "signature"))
        for b in group:
            cells = " ".join("%5d" % c for c in b["per_day"])
            out.write("%6d %6d  %s  %s\n" % (b["recent"], b["count"], cells, b["signature"]))


def window_text(seconds):
    for unit, size in (("d", DAY), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return "%d%s" % (seconds // size, unit)
    return "%gs" % seconds


def report_command(args):
    db = args.db or default_path()
    if not is_postgres(db):
        db = os.path.abspath(db)
        if not os.path.isfile(db):  # a query must not create an empty store
            sys.stderr.write("ehbt-triage report: error: no store at %s\n" % db)
            return EXIT_USAGE
    if args.html:
        from .outputs import check_output

        problem = check_output(args.html)
        if problem:
            sys.stderr.write("ehbt-triage report: error: --html %s: %s\n" % (args.html, problem))
            return EXIT_USAGE
    try:
        store = open_store(db)
    except (StoreError, ImportError) as e:
        sys.stderr.write("ehbt-triage report: error: cannot open the database %s\n"
                         % mask(e, db))
        return EXIT_USAGE
    try:
        result = changes(store, args.since, by=args.by)
        write_text(result, window_text(args.since), sys.stdout)
        sys.stdout.write("\nDatabase: %s\n" % describe(db))
        if args.html:
            from . import report_html

            report_html.write(args.html, store, {}, [], "report over an existing store",
                              recent=(result, window_text(args.since)))
            sys.stdout.write("HTML report: %s\n" % os.path.abspath(args.html))
    finally:
        store.close()
    return EXIT_OK
