# SPDX-License-Identifier: Apache-2.0
"""What the terminal shows: a progress line while working, then the bucket table and failures.

Progress goes to stderr. On a TTY it is one line rewritten in place
(``\\r[ 12/300] 41.2 cores/s  failed 1``). Elsewhere (a CI log, a pipe) a plain line is
written at most every 30 seconds, so a long batch still shows it is alive while a short one
prints nothing extra. The final report goes to stdout.
"""

import sys
import time

PLAIN_EVERY = 30.0


class Progress:
    def __init__(self, total, stream=None, tty=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.failed = 0
        self.seen = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._width = 0

    def rate(self):
        elapsed = time.monotonic() - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def line(self):
        width = len(str(self.total))
        text = "[%*d/%d] %.1f cores/s  failed %d" % (width, self.done, self.total, self.rate(),
                                                      self.failed)
        if self.seen:
            text += "  seen before %d" % self.seen
        return text

    def update(self, force=False):
        now = time.monotonic()
        if self.tty:
            if force or now - self._last >= 0.1:
                text = self.line()
                pad = max(0, self._width - len(text))
                self.stream.write("\r" + text + " " * pad)
                self.stream.flush()
                self._width = len(text)
                self._last = now
        elif now - self._last >= PLAIN_EVERY and now - self.start >= PLAIN_EVERY:
            self.stream.write("ehbt-triage: " + self.line() + "\n")
            self.stream.flush()
            self._last = now

    def finish(self):
        if self.tty:
            self.update(force=True)
            self.stream.write("\n")
            self.stream.flush()


def _clip(text, width):
    return text if len(text) <= width else text[: width - 3] + "..."


def bucket_flags(bucket):
    """'partial', 'unreliable', both ('partial,unreliable') or '-' for a bucket row."""
    flags = [name for name in ("partial", "unreliable") if bucket.get(name)]
    return ",".join(flags) or "-"


def bucket_table(buckets, run_counts, run_cores, out, places=None):
    """The table of the buckets this run's cores fall into, most cores first. `places`
    ({bucket id: "fn at file.c:42"}): where the example core's signature starts in the
    source, printed under the bucket's row when debug info gave it (crash_place())."""
    out.write("\nBuckets of the %d core(s) analysed or seen in this run "
              "(count = all cores with that signature in the database, run = in this run; "
              "flags: partial = some walks stopped early, unreliable = no frame named):\n"
              % run_cores)
    if not buckets:
        out.write("  (none)\n")
        return
    sig_width = min(100, max(len("signature"), max(len(b["signature"]) for b in buckets)))
    out.write("%6s %5s  %-18s  %-*s  %s\n" % ("count", "run", "flags", sig_width, "signature",
                                              "example core"))
    for b in buckets:
        out.write("%6d %5d  %-18s  %-*s  %s\n" % (
            b["count"], run_counts.get(b["id"], 0), bucket_flags(b), sig_width,
            _clip(b["signature"], sig_width), b.get("example_path") or "-"))
        if places and places.get(b["id"]):
            out.write("%6s %5s  %-18s  %s\n" % ("", "", "", places[b["id"]]))


def crash_place(signer, frames):
    """'fn at file.c:42 (inlined into caller)': the first frame of the signature that has a
    source position (frames as store.crashing_frames gives them), or None."""
    if not frames:
        return None
    _labels, picked = signer.chosen(signer.signed_frames(frames))
    for f in picked:
        at = f.get("location")
        if at and at.get("file"):
            text = "%s at %s:%s" % (f.get("symbol") or "??", at["file"], at.get("line"))
            if "inlined_into" in f:
                text += " (inlined into %s)" % (f["inlined_into"] or "??")
            return text
    return None


def failures(failed, rejected, out):
    """Every core that could not be read, with its reason."""
    items = list(rejected) + list(failed)
    if not items:
        return
    out.write("\nFailed (%d):\n" % len(items))
    for path, reason in items:
        out.write("  %s: %s\n" % (path, reason))


def summary(stats, out, db_path, engine_line):
    out.write("\n%d core(s): %d analysed, %d seen before, %d failed; %.1f cores/s. "
              "Database: %s\nEngine: %s\n" % (
                  stats["total"], stats["ok"], stats["seen"], stats["failed"], stats["rate"],
                  db_path, engine_line))
    if stats.get("worker_rss_mib"):
        out.write("Peak worker RSS: %.1f MiB\n" % stats["worker_rss_mib"])
