# SPDX-License-Identifier: Apache-2.0
"""What changed in a store recently: the query behind ``ehbt-triage report --since`` (recent.py)
and the "recent changes" part of every HTML report (report_html.py).

A bucket is *new* when every core it holds arrived in the window, and *grew* when some did
but it had cores before. "Arrived" is when the core was analysed (default; what a triage
service sees day by day) or, with ``--by core-time``, the core file's time. Counts per day
are UTC days, oldest first, empty days included.
"""

import datetime
import time

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
