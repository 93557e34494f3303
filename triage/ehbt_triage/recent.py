# SPDX-License-Identifier: Apache-2.0
"""``ehbt-triage report --since 7d``: what changed in a store recently.

A bucket is *new* when every core it holds arrived in the window, and *grew* when some did
but it had cores before. "Arrived" is when the core was analysed (default; what a triage
service sees day by day) or, with ``--by core-time``, the core file's time. Counts per day
are UTC days, oldest first, empty days included.
"""

import datetime
import sys
import time

from .cli import EXIT_OK, EXIT_USAGE
from .store import StoreError, default_path, describe, open_store

DAY = 86400.0


def _utc_day(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).date()


def changes(store, since_seconds, now=None, by="analysed"):
    """{"days": [date], "new": [bucket], "grew": [bucket], "since": ts, "now": ts}; each bucket
    a dict of the store's bucket row plus "recent" (cores in the window) and "per_day"
    (counts aligned with "days"). Most recent cores first."""
    now = time.time() if now is None else now
    since = now - since_seconds
    column = "analysed_at" if by == "analysed" else "core_time"
    first, last = _utc_day(since), _utc_day(now)
    days = [first + datetime.timedelta(days=n) for n in range((last - first).days + 1)]
    index = {d: n for n, d in enumerate(days)}
    per_bucket = {}
    for bucket_id, ts in store.recent_cores(since, column):
        counts = per_bucket.setdefault(bucket_id, [0] * len(days))
        n = index.get(_utc_day(ts))
        if n is not None:  # a core_time in the future lands on no day of the window
            counts[n] += 1
    new, grew = [], []
    for b in store.bucket_rows():
        counts = per_bucket.get(b["id"])
        if not counts:
            continue
        b = dict(b, per_day=counts, recent=sum(counts))
        (new if b["recent"] >= b["count"] else grew).append(b)
    for group in (new, grew):
        group.sort(key=lambda b: (-b["recent"], b["signature"]))
    return {"days": days, "new": new, "grew": grew, "since": since, "now": now}


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
    if not db.startswith(("postgresql://", "postgres://")):
        import os

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
        sys.stderr.write("ehbt-triage report: error: cannot open the database %s\n" % e)
        return EXIT_USAGE
    try:
        result = changes(store, args.since, by=args.by)
        write_text(result, window_text(args.since), sys.stdout)
        sys.stdout.write("\nDatabase: %s\n" % describe(db))
        if args.html:
            from . import report_html

            report_html.write(args.html, store, {}, [], "report over an existing store",
                              recent=(result, window_text(args.since)))
            sys.stdout.write("HTML report: %s\n" % args.html)
    finally:
        store.close()
    return EXIT_OK
