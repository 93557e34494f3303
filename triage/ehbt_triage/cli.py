# SPDX-License-Identifier: Apache-2.0
"""Command-line arguments of ehbt-triage (see INTERFACES.md, "ehbt-triage").

Exit status: 0 every core processed (partial traces included), 1 some cores could not be
read (each listed with its reason) or were analysed without some of the files they name
(missing modules: the signatures are less than they could be), 2 usage error (bad option, bad
--skip regex, a PATH that does not exist, a database or output file that cannot be opened).

Three commands share the program: ``ehbt-triage [options] PATH...`` (triage, unchanged),
``ehbt-triage report [--since 7d] ...`` (a query over an existing store) and
``ehbt-triage watch [DIR...]`` (a resident processor, watch.py). A first argument that is
exactly ``report`` or ``watch`` selects that command; a core or directory literally named so
is triaged by writing it ``./report`` (or after ``--``).
"""

import argparse
import os
import re
import sys

from .exits import EXIT_USAGE
from .signature import DEFAULT_TOP
from .spool import DEFAULT_DIR
from .version import version
from .workers import DEFAULT_TIMEOUT


def _terminal_columns():
    """shutil.get_terminal_size().columns, without importing shutil: argparse imports it for
    the first of the formatters it makes (one per add_argument), and shutil brings bz2, lzma
    and fnmatch along -- ~6 ms of every run, which only ever needs the width for --help."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = _terminal_columns() - 2  # as argparse computes it
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write("ehbt-triage: error: %s\n" % message)
        sys.exit(EXIT_USAGE)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer: %r" % text) from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1: %r" % text)
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive: %r" % text)
    return value


def _regex(text):
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError("bad regex %r: %s" % (text, e)) from None
    return text


def _since(text):
    """'7d', '36h', '90m', '2w' or a plain number of days -> seconds."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([mhdw]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("not a duration like 7d, 36h, 90m or 2w: %r" % text)
    unit = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}[m.group(2)]
    value = float(m.group(1)) * unit
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive: %r" % text)
    return value


_DB_HELP = ("the store: a SQLite file (default: ehbt-triage.sqlite in the working directory) "
            "or a PostgreSQL database shared by several runs, as a URL "
            "postgresql://USER@HOST:PORT/DBNAME or as libpq keywords 'host=HOST dbname=DBNAME "
            "user=USER'. Give its password the libpq ways, not on the command line (which "
            "every user sees in ps): ~/.pgpass (mode 0600) or the file PGPASSFILE names, e.g. "
            "a systemd credential (LoadCredential=pgpass:/etc/ehbt/pgpass and "
            "Environment=PGPASSFILE=%%d/pgpass in the unit); PGPASSWORD works but is "
            "discouraged (readable in /proc/PID/environ). A password given in --db anyway is "
            "shown as *** in every message and report")


def _add_analysis_options(p):
    """The options of the analysis itself, the same for a batch run and watch (one text, so
    that both --help pages and the man page say the same)."""
    p.add_argument("--sysroot", metavar="DIR", action="append", default=[],
                   help="look up the files a core names under DIR first (may repeat)")
    p.add_argument("--debug-dir", metavar="DIR", action="append", default=[],
                   help="look for separate debug files in DIR first, like GDB's "
                        "debug-file-directory: DIR/.build-id/xx/rest.debug, then the "
                        ".gnu_debuglink name under DIR (may repeat)")
    p.add_argument("--debuginfod", action="store_true",
                   help="fetch missing executables, libraries and debug files by build-id "
                        "from the servers in DEBUGINFOD_URLS (also on when DEBUGINFOD_URLS is "
                        "set), cached as debuginfod's client caches them")
    p.add_argument("-j", "--jobs", metavar="N", type=_positive_int, default=os.cpu_count() or 1,
                   help="local worker processes, each analysing one core at a time (default: "
                        "the number of CPUs; ignored with --scheduler)")
    p.add_argument("--top", metavar="N", type=_positive_int, default=DEFAULT_TOP,
                   help="frames in a signature (default %(default)s)")
    p.add_argument("--skip", metavar="REGEX", action="append", default=[], type=_regex,
                   help="also skip leading frames whose symbol fully matches REGEX (may repeat)")
    p.add_argument("--timeout", metavar="SECONDS", type=_positive_float, default=DEFAULT_TIMEOUT,
                   help="per-core time limit; a core over it is recorded as failed and the "
                        "process analysing it (a local worker, or the analysis helper of a "
                        "dask worker) is killed and replaced (default %(default)gs)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="analyse on this dask.distributed cluster instead of local workers "
                        "(-j is then ignored; the dask workers must see the core paths, "
                        "sysroots and debug directories under the same names). The store is "
                        "written by this process alone, by the same rules")
    p.add_argument("--retries", metavar="N", type=int, default=1,
                   help="with --scheduler: how often a task that raised is tried again "
                        "(default %(default)s); a task whose worker died is run elsewhere by "
                        "the scheduler, up to its allowed-failures, then once more alone (a "
                        "death counts against every task the worker held), then recorded "
                        "failed")


def parser():
    p = _Parser(
        prog="ehbt-triage",
        description="Batch core-dump triage: unwinds every core with the ehbt engine, gives each "
                    "a signature (the crashing thread's top frames after the frames that only "
                    "report the crash), groups equal signatures into buckets, and keeps "
                    "everything in a SQLite database (or a shared PostgreSQL one) across runs. "
                    "`ehbt-triage report --help`: what changed recently in a store; "
                    "`ehbt-triage watch --help`: the resident processor.",
        epilog="Exit status: 0 every core processed, 1 some cores could not be read or were "
               "analysed without some of their files (missing modules), 2 usage error. "
               "A PATH literally named `report` or `watch` must be written ./report or "
               "./watch.")
    p.add_argument("--version", action="version", version="ehbt-triage " + version())
    p.add_argument("paths", metavar="PATH", nargs="*",
                   help="core files (plain, or compressed with zstd, xz, lz4 or gzip), or "
                        "directories searched recursively for them; with no PATH and no "
                        "--coredump-dir, the systemd-coredump spool %s" % DEFAULT_DIR)
    p.add_argument("--coredump-dir", metavar="DIR", action="append", default=[],
                   help="a systemd-coredump spool (may repeat): its cores are named "
                        "core.COMM.UID.BOOTID.PID.USEC[.zst|.xz|.lz4], and the process name, "
                        "uid, boot id, pid and time are taken from that name and stored")
    p.add_argument("--db", metavar="FILE|URL", default=None, help=_DB_HELP)
    p.add_argument("--jsonl", metavar="FILE", help="write one JSON object per core to FILE")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report to FILE")
    _add_analysis_options(p)
    return p


def report_parser():
    p = _Parser(
        prog="ehbt-triage report",
        description="What changed recently in an existing store: buckets that are new in the "
                    "window and buckets that grew, with their cores per day.",
        epilog="Exit status: 0 done, 2 usage error (or a store that cannot be opened).")
    p.add_argument("--db", metavar="FILE|URL", default=None, help=_DB_HELP)
    p.add_argument("--since", metavar="AGE", type=_since, default=_since("7d"),
                   help="the window: 7d, 36h, 90m, 2w (default 7d)")
    p.add_argument("--by", choices=("analysed", "core-time"), default="analysed",
                   help="date cores by when they were analysed (default) or by the core "
                        "file's time")
    p.add_argument("--html", metavar="FILE", help="also write the report as HTML to FILE")
    return p


def watch_parser():
    from .watch import DEFAULT_MAX_IMAGES, DEFAULT_QUEUE, DEFAULT_REPORT_INTERVAL

    p = _Parser(
        prog="ehbt-triage watch",
        description="A resident crash processor: watches the spool directories (and every "
                    "directory made below them) with inotify, and analyses each core as it "
                    "is closed by its writer, renamed into place or linked in complete "
                    "(systemd-coredump's temporary .#core... names are not taken), with the "
                    "same workers, signatures and store rules as a batch run. On start it "
                    "first catches up with the cores that arrived while it was not running; "
                    "a core the store has is never counted twice. One log line per event "
                    "on stderr (key=value). SIGTERM or SIGINT: stops, abandoning the cores "
                    "being analysed (the next start does them), exit status 0. SIGHUP: "
                    "reopens the store and the --jsonl file, reads the skip list again, "
                    "replaces each worker when it is next idle (with --scheduler: connects "
                    "to the scheduler again without waiting for it, then gives it the cores "
                    "in flight once more and sends the next cores to fresh analysis "
                    "helpers), rewrites the report and scans the directories. With "
                    "--scheduler the cores are analysed by the dask cluster's workers; this "
                    "process stores them. A scheduler that goes away is connected to again "
                    "with backoff for as long as this runs, the cores meanwhile waiting in "
                    "the queue.",
        epilog="Exit status: 0 stopped by a signal, 2 usage error (a directory, store or "
               "output that cannot be used). docs/triage.md, \"Running as a service\": the "
               "systemd unit ehbt-triage-watch.service.")
    p.add_argument("dirs", metavar="DIR", nargs="*",
                   help="directories to watch (default: the systemd-coredump spool %s)"
                        % DEFAULT_DIR)
    p.add_argument("--db", metavar="FILE|URL", default=None, help=_DB_HELP)
    p.add_argument("--html", metavar="FILE",
                   help="keep a self-contained HTML report of the store in FILE, rewritten "
                        "when something changed, at most every --report-interval seconds")
    p.add_argument("--report-interval", metavar="SECONDS", type=_positive_float,
                   default=DEFAULT_REPORT_INTERVAL,
                   help="the least time between two rewrites of --html (default %(default)gs)")
    p.add_argument("--jsonl", metavar="FILE",
                   help="append one JSON object per core to FILE (reopened on SIGHUP)")
    p.add_argument("--queue", metavar="N", type=_positive_int, default=DEFAULT_QUEUE,
                   help="most paths waiting for a worker (default %(default)s); past it, new "
                        "cores are found by a scan once the queue has drained")
    p.add_argument("--max-images", metavar="N", type=_positive_int, default=DEFAULT_MAX_IMAGES,
                   help="a worker (or dask analysis helper) keeps at most N of the "
                        "executables and libraries it "
                        "parsed for the next cores, letting go of the one used longest ago "
                        "first, which bounds its memory (default %(default)s)")
    _add_analysis_options(p)
    return p


def parse(argv):
    return parser().parse_args(argv)


def is_report(argv):
    return bool(argv) and argv[0] == "report"


def is_watch(argv):
    return bool(argv) and argv[0] == "watch"


def _mask_tracebacks(db):
    """An error nobody expected (a server that goes away mid-run, say) ends the run with a
    traceback: without the password of --db in it (stores.mask), as every other message."""
    from .credentials import is_postgres, mask

    if not db or not is_postgres(db):
        return

    def hook(kind, value, tb):
        import traceback

        sys.stderr.write(mask("".join(traceback.format_exception(kind, value, tb)), db))

    sys.excepthook = hook


def main(argv=None):
    """Entry point of the ehbt-triage script."""
    argv = sys.argv[1:] if argv is None else argv
    if is_report(argv):
        from .recent import report_command

        args = report_parser().parse_args(argv[1:])
        _mask_tracebacks(args.db)
        return report_command(args)
    if is_watch(argv):
        from .watch import watch

        args = watch_parser().parse_args(argv[1:])
        _mask_tracebacks(args.db)
        return watch(args)
    from .run import run

    args = parse(argv)
    _mask_tracebacks(args.db)
    try:
        return run(args)
    except KeyboardInterrupt:
        sys.stderr.write("\nehbt-triage: interrupted; every core reported so far is stored, "
                         "run again to finish the rest\n")
        return 130
