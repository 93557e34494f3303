# SPDX-License-Identifier: Apache-2.0
"""--html FILE: one self-contained page (inline CSS, inline JS, inline SVG; no network).

It shows the whole database, not only this run: every bucket (count, cores of this run,
partial/unreliable markers, executable, architecture, signal with code and address, first and
last core time, a cores-per-day trend as a small SVG, signature) with the example's crashing
stack and every core of the bucket behind <details> toggles, a per-day histogram of all core
times, and the cores that failed. The counts at the top are the store's, and the failed count
is the length of the failed list below it (cores stored as failed, plus this run's inputs that
failed before they could be stored). The small script only filters and sorts the table;
without it the page reads the same.
"""

import datetime
import html
import os
import time

from . import engine
from .signature import DEFAULT_TOP, frame_label, with_inlined

DAY = 86400.0
MAX_BARS = 120
MAX_STACK = 40  # frames shown per example stack
MAX_CORES = 10000  # cores listed per bucket (a bigger bucket says how many more it has)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff;
-webkit-text-size-adjust:100%;text-size-adjust:100%}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
.meta{color:#666;font-size:.9em}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;user-select:none;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,.sig{font-family:ui-monospace,monospace;font-size:.92em;word-break:break-all}
details summary{cursor:pointer}
table.stack{margin:.4em 0 .6em;width:auto}
table.stack td,table.stack th{border:none;padding:.1em .6em;cursor:auto;background:none}
table.stack{font-size:.9em}table.stack code{white-space:nowrap}
.rep{color:#666;white-space:nowrap}
td.ex{max-width:22em}
table.stack tr.skipped{color:#999}table.stack tr.inlined td{font-style:italic}table.stack tr.insig td:first-child{border-left:3px solid #4a78b5}
.fail{color:#a00}
.flag{display:inline-block;font-size:.8em;padding:0 .4em;margin:0 .2em .2em 0;border-radius:.6em;
color:#fff;white-space:nowrap}.flag.partial{background:#b5651d}.flag.unreliable{background:#a00}
table.cores{font-size:.85em;width:auto}table.cores td,table.cores th{cursor:auto;background:none}
svg.trend .bar{fill:#4a78b5}
svg .bar{fill:#4a78b5}svg .bar:hover{fill:#e08a2c}svg text{font-size:10px;fill:#555}
input#filter{margin:.3em 0 .6em;padding:.3em;width:40em;max-width:100%}
"""

_JS = """
(function(){
  var table=document.getElementById('buckets');
  if(!table){return;}
  var body=table.tBodies[0];
  document.getElementById('filter').addEventListener('input',function(e){
    var q=e.target.value.toLowerCase();
    Array.prototype.forEach.call(body.rows,function(r){
      r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';
    });
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,col){
    th.addEventListener('click',function(){
      var asc=th.getAttribute('data-dir')!=='asc';
      th.setAttribute('data-dir',asc?'asc':'desc');
      var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col].getAttribute('data-key')||a.cells[col].textContent;
        var y=b.cells[col].getAttribute('data-key')||b.cells[col].textContent;
        var nx=parseFloat(x),ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
        return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  document.getElementById('js-ok').textContent='interactive';
})();
"""


def _e(text):
    return html.escape("" if text is None else str(text), quote=True)


def _day(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).date()


def _fmt_time(ts):
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")


def histogram_bins(times):
    """[(first day, count)] per day from the oldest to the newest core, empty days included;
    weeks instead of days when that would be more than MAX_BARS bars."""
    if not times:
        return [], 1
    days = [_day(t) for t in times]
    lo, hi = min(days), max(days)
    width = 1 if (hi - lo).days + 1 <= MAX_BARS else 7
    nbins = (hi - lo).days // width + 1
    counts = [0] * nbins
    for d in days:
        counts[(d - lo).days // width] += 1
    return [(lo + datetime.timedelta(days=i * width), c) for i, c in enumerate(counts)], width


def histogram_svg(times):
    bins, width = histogram_bins(times)
    if not bins:
        return "<p>No analysed cores yet.</p>"
    w, h, pad_l, pad_b = 720, 160, 30, 30
    peak = max(c for _, c in bins)
    bar_w = min(48.0, max(2.0, (w - pad_l) / len(bins)))
    parts = ['<svg id="histogram" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'role="img" aria-label="cores per %s">' % (w, h + pad_b, "day" if width == 1 else
                                                       "week")]
    parts.append('<text x="0" y="10">%d</text><text x="0" y="%d">0</text>' % (peak, h))
    step = max(1, len(bins) // 8)
    for i, (day, count) in enumerate(bins):
        bh = (h - 12) * count / peak if peak else 0
        x = pad_l + i * bar_w
        parts.append('<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f">'
                     '<title>%s: %d core(s)</title></rect>'
                     % (x, h - bh, max(1.0, bar_w - 1), bh, day.isoformat(), count))
        if i % step == 0:
            parts.append('<text x="%.1f" y="%d">%s</text>' % (x, h + 14, day.strftime("%m-%d")))
    parts.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>' % (pad_l, h, w, h))
    parts.append("</svg>")
    return "".join(parts)


def _short_key(key):
    """``<40 hex>+0x11a6`` -> ``2ce730064f4c…+0x11a6`` (the full key stays in the title)."""
    if not key:
        return ""
    bid, _, off = key.rpartition("+")
    return (bid[:12] + "\u2026" if len(bid) > 13 else bid) + "+" + off


def _stack(store, core_id, signer):
    """The example core's crashing thread; the frames that form the signature are marked,
    the leading skipped ones greyed."""
    tid, stop, frames = store.crashing_frames(core_id)
    # The inlined calls are rows of their own, as GDB shows them; the signature's marks follow
    # the store's signature version (inlined calls count as frames from version 2).
    shown = with_inlined(frames)
    # Which frames the signature counts: with the inlined calls from version 2 on (asked of
    # the version, not of signed_frames' list, which is a list of its own either way).
    counts_inlined = signer is None or signer.version >= 2
    frames = shown
    labels = [frame_label(f, signer.version) if signer else frame_label(f) for f in frames]
    start = signer.first_kept(labels, frames) if signer and labels else 0
    if not counts_inlined:  # version 1: the marks count physical frames only
        physical = [i for i, f in enumerate(shown) if "inlined_into" not in f]
        kept = signer.first_kept([labels[i] for i in physical],
                                 [shown[i] for i in physical]) if physical else 0
        start = physical[kept] if kept < len(physical) else len(shown)
        while 0 < start < len(shown) and "inlined_into" in shown[start - 1]:
            start -= 1  # the calls inlined into the first signed frame come with it
    top = signer.top if signer else DEFAULT_TOP
    rows = ['<table class="stack"><tr><th>#</th><th>symbol</th><th>module</th>'
            '<th>offset</th><th>build-id key</th><th>via</th></tr>']
    in_signature = _signature_rows(shown, start, top, counts_inlined)

    def marks(i):
        cls = "skipped" if i < start else "insig" if i in in_signature else ""
        return (cls + " inlined").strip() if "inlined_into" in frames[i] else cls

    i, shown_rows = 0, 0
    while i < len(frames) and shown_rows < MAX_STACK:
        f, cls = frames[i], marks(i)
        inlined = "inlined_into" in f
        # A recursion's frames, each the one before it again (and marked alike), make one
        # row: "3-931", "x 929" -- the stack's bottom stays in view after a stack overflow.
        end = i + 1
        if not inlined:
            while (end < len(frames) and _repeats(frames[end], f) and marks(end) == cls
                   and _next_index(frames[end - 1], frames[end])):
                end += 1
        sym = f["symbol"] or ""
        if sym and not inlined and f["symbol_offset"]:
            sym += "+" + f["symbol_offset"]
        many = end - i > 1
        rows.append('<tr class="%s"><td>%s</td><td><code>%s</code>%s%s</td><td><code>%s</code>'
                    '</td><td><code>%s</code></td><td><code title="%s">%s</code></td><td>%s</td>'
                    '</tr>'
                    % (cls, "" if inlined else "%s\u2013%s" % (f["idx"], frames[end - 1]["idx"])
                       if many else f["idx"], _e(sym or "??"),
                       _position_html(f.get("location")),
                       ' <span class="rep">\u00d7 %d</span>' % (end - i) if many else "",
                       _e(os.path.basename(f["module"] or "") or "?"),
                       _e(f["module_offset"] or f["pc"]), _e(f.get("build_id_key")),
                       _e(_short_key(f.get("build_id_key"))),
                       "inlined into <code>%s</code>" % _e(f["inlined_into"] or "??")
                       if inlined else _e(f["source"])))
        shown_rows += 1
        i = end
    if i < len(frames):
        rows.append('<tr><td></td><td colspan="5">... %d more frames</td></tr>'
                    % (len(frames) - i))
    rows.append("</table><div class=\"meta\">thread %s, walk stopped: %s; grey: frames skipped "
                "as crash reporting, marked: frames in the signature, italic: calls inlined "
                "into the frame below (no stack frame of their own)</div>" % (_e(tid), _e(stop)))
    return "".join(rows)


def _repeats(frame, before):
    """Whether `frame` is `before` again one call deeper: a recursion's next frame (same
    return address and all that is shown of it; no calls inlined into either)."""
    return (not frame.get("inlined") and not before.get("inlined")
            and "inlined_into" not in frame
            and all(frame.get(k) == before.get(k) for k in _SHOWN))


_SHOWN = ("pc", "module", "module_offset", "build_id_key", "symbol", "symbol_offset", "source",
          "location")


def _next_index(frame, after):
    """Whether `after` is numbered right after `frame` (a row "3-931" claims every index)."""
    idx = frame.get("idx")
    return type(idx) is int and after.get("idx") == idx + 1


def _position_html(location):
    """` at file.c:42` (the file's base name; its path in the title), or nothing."""
    if not location or not location.get("file"):
        return ""
    return ' at <code class="pos" title="%s">%s:%s</code>' % (
        _e(location["file"]), _e(os.path.basename(location["file"])), _e(location.get("line")))


def _signature_rows(shown, start, top, inlined_count):
    """Indexes of the rows in the signature: `top` frames from `start`, counting inlined calls
    when the signature does (version 2), else only physical frames (and the calls inlined
    into those)."""
    if inlined_count:
        return set(range(start, start + top))
    rows, physical = set(), 0
    for i in range(start, len(shown)):
        if physical >= top:
            break
        rows.add(i)
        if "inlined_into" not in shown[i]:
            physical += 1
    return rows


def trend_svg(times):
    """A bucket's cores per day (weeks past MAX_BARS days), as a small inline SVG."""
    bins, width = histogram_bins(times)
    if not bins:
        return ""
    peak = max(c for _, c in bins)
    bar_w = max(1.0, min(6.0, 120.0 / len(bins)))
    h = 20
    parts = ['<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'role="img" aria-label="cores per %s">' % (int(bar_w * len(bins)) + 1, h,
                                                        "day" if width == 1 else "week")]
    for i, (day, count) in enumerate(bins):
        bh = max(1.0, h * count / peak) if count else 0
        parts.append('<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f">'
                     '<title>%s: %d</title></rect>' % (i * bar_w, h - bh, max(0.8, bar_w - 0.5),
                                                        bh, day.isoformat(), count))
    parts.append("</svg>")
    return "".join(parts)


def _signal_text(b):
    """A bucket's signal (its example core's) as every ehbt report says it, from the engine's
    names: "SIGSEGV, SEGV_MAPERR at 0x0" (ehbt.describe_signal). Without the ehbt package
    (the CLI fallback) the stored name alone."""
    if not b.get("signal"):
        return "no signal"
    ehbt = engine.package()
    if ehbt is None or b.get("signal_number") is None:
        return b["signal"]
    address = b.get("fault_addr")
    return ehbt.describe_signal(b["signal_number"], b.get("signal_code"),
                                int(address, 16) if address else None)


def _flags_html(b):
    out = []
    if b.get("partial"):
        out.append('<span class="flag partial" title="%d core(s) of this bucket: the walk of '
                   'the crashing thread stopped before the outermost frame">partial</span>'
                   % b["partial"])
    if b.get("unreliable"):
        out.append('<span class="flag unreliable" title="no frame of the signature has a '
                   'name: keyed by executable and module offsets">unreliable</span>')
    return "".join(out)


def _cores_table(cores):
    rows = ['<table class="cores"><tr><th>core</th><th>core time (UTC)</th><th>process</th>'
            '<th>pid</th><th>uid</th><th>boot id</th><th>compression</th><th>walk stopped</th>'
            '</tr>']
    for c in cores[:MAX_CORES]:
        rows.append("<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                    "<td><code>%s</code></td><td>%s</td><td>%s</td></tr>" % (
                        _e(c["path"]), _e(_fmt_time(c["core_time"])), _e(c.get("process_name")),
                        _e(c.get("pid")), _e(c.get("uid")), _e(c.get("boot_id")),
                        _e(c.get("compression")), _e(c.get("stop_reason"))))
    if len(cores) > MAX_CORES:
        rows.append('<tr><td colspan="8">... %d more cores</td></tr>' % (len(cores) - MAX_CORES))
    rows.append("</table>")
    return "".join(rows)


def failed_list(store, failed):
    """[(path, reason)]: the cores stored as failed and this run's failed inputs, one entry per
    path (this run's reason wins: it is the newer one)."""
    merged = dict(store.failed_cores())
    merged.update(dict(failed))
    return sorted(merged.items())


def recent_html(result, window):
    """The "what changed" section: new buckets and buckets that grew, cores per day."""
    days = result["days"]
    out = ['<h2 id="recent">Changes in the last %s</h2>' % _e(window)]
    for title, group in (("New buckets", result["new"]), ("Buckets that grew", result["grew"])):
        out.append("<h3>%s (%d)</h3>" % (title, len(group)))
        if not group:
            out.append("<p>(none)</p>")
            continue
        out.append('<table class="recent"><thead><tr><th>recent</th><th>total</th>%s'
                   "<th>signature</th></tr></thead><tbody>" % "".join(
                       "<th>%s</th>" % _e(d.strftime("%m-%d")) for d in days))
        for b in group:
            out.append('<tr data-bucket="%d"><td class="n">%d</td><td class="n">%d</td>%s'
                       '<td class="sig">%s</td></tr>' % (
                           b["id"], b["recent"], b["count"],
                           "".join('<td class="n">%d</td>' % c for c in b["per_day"]),
                           _e(b["signature"])))
        out.append("</tbody></table>")
    return "".join(out)


def render(store, run_counts, failed, engine_line, signer=None, now=None, recent=None):
    buckets = store.buckets_with_cores()
    times = store.core_times()
    failures = failed_list(store, failed)
    total_ok = sum(b["count"] for b in buckets)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
           '<meta name="viewport" content="width=device-width, initial-scale=1">'
           '<title>ehbt-triage report</title><style>%s</style></head><body>' % _CSS]
    out.append("<h1>ehbt-triage report</h1>")
    out.append('<div class="meta">%d analysed core(s) in %d bucket(s), %d failed &middot; '
               'database <code>%s</code> &middot; generated %s UTC &middot; %s &middot; '
               'page <span id="js-ok">static</span></div>' % (
                   total_ok, len(buckets), len(failures), _e(store.path),
                   _e(_fmt_time(now or time.time())), _e(engine_line)))
    if recent is None:
        from .changes import changes

        recent = (changes(store, 7 * DAY, now=now), "7d")
    out.append(recent_html(*recent))
    out.append("<h2>Cores over time (by core file time)</h2>")
    out.append(histogram_svg(times))
    out.append("<h2>Buckets</h2>")
    out.append('<input id="filter" type="search" placeholder="filter by signature, core ...">')
    out.append('<table id="buckets"><thead><tr><th>count</th><th>this run</th><th>flags</th>'
               '<th>executable</th><th>arch</th><th>signal</th>'
               '<th>first seen</th><th>last seen</th><th>cores per day</th><th>signature</th>'
               "</tr></thead><tbody>")
    for b in buckets:
        cores = store.bucket_cores(b["id"])
        bucket_times = [c["core_time"] for c in cores if c["core_time"] is not None]
        out.append(
            '<tr class="bucket" data-bucket="%d"><td class="n">%d</td><td class="n">%d</td>'
            '<td class="flags">%s</td><td><code>%s</code></td><td>%s</td><td class="signal">%s'
            '</td><td data-key="%s">%s</td><td data-key="%s">%s</td><td>%s</td>'
            '<td><details><summary class="sig">%s</summary>%s'
            '<details class="all-cores"><summary>all %d core(s)</summary>%s</details>'
            '</details></td></tr>' % (
                b["id"], b["count"], run_counts.get(b["id"], 0), _flags_html(b),
                _e(b.get("executable")), _e(b.get("arch")), _e(_signal_text(b)),
                _e(b["first_seen"] or 0), _e(_fmt_time(b["first_seen"])),
                _e(b["last_seen"] or 0), _e(_fmt_time(b["last_seen"])),
                trend_svg(bucket_times), _e(b["signature"]),
                _stack(store, b["example_core_id"], signer), len(cores), _cores_table(cores)))
    out.append("</tbody></table>")
    if failures:
        out.append('<h2>Failed cores (%d)</h2><ul id="failed">' % len(failures))
        for path, reason in failures:
            out.append('<li class="fail"><code>%s</code>: %s</li>' % (_e(path), _e(reason)))
        out.append("</ul>")
    out.append("<script>%s</script></body></html>\n" % _JS)
    return "".join(out)


def write(path, store, run_counts, failed, engine_line, signer=None, recent=None):
    text = render(store, run_counts, failed, engine_line, signer, recent=recent)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
