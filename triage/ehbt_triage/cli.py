# SPDX-License-Identifier: Apache-2.0
"""Command-line arguments of ehbt-triage (see INTERFACES.md, "ehbt-triage").

Exit status: 0 every core processed (partial traces included), 1 some cores could not be
read (each listed with its reason), 2 usage error (bad option, bad --skip regex, a PATH that
does not exist, a database that cannot be opened).
"""

import argparse
import os
import re
import sys

from . import __version__
from .signature import DEFAULT_TOP
from .workers import DEFAULT_TIMEOUT

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
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


def parser():
    p = _Parser(
        prog="ehbt-triage",
        description="Batch core-dump triage: unwinds every core with the ehbt engine, gives each "
                    "a signature (the crashing thread's top frames after the frames that only "
                    "report the crash), groups equal signatures into buckets, and keeps "
                    "everything in a SQLite database across runs.",
        epilog="Exit status: 0 every core processed, 1 some cores could not be read, "
               "2 usage error.")
    p.add_argument("--version", action="version", version="ehbt-triage " + __version__)
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="core files, or directories searched recursively for ELF cores")
    p.add_argument("--sysroot", metavar="DIR", action="append", default=[],
                   help="look up the files a core names under DIR first (may repeat)")
    p.add_argument("--db", metavar="FILE", default=None,
                   help="SQLite database (default: ehbt-triage.sqlite in the working directory)")
    p.add_argument("--jsonl", metavar="FILE", help="write one JSON object per core to FILE")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report to FILE")
    p.add_argument("-j", "--jobs", metavar="N", type=_positive_int, default=os.cpu_count() or 1,
                   help="worker processes (default: the number of CPUs, %(default)s here)")
    p.add_argument("--top", metavar="N", type=_positive_int, default=DEFAULT_TOP,
                   help="frames in a signature (default %(default)s)")
    p.add_argument("--skip", metavar="REGEX", action="append", default=[], type=_regex,
                   help="also skip leading frames whose symbol fully matches REGEX (may repeat)")
    p.add_argument("--timeout", metavar="SECONDS", type=_positive_float, default=DEFAULT_TIMEOUT,
                   help="per-core time limit; a core over it is recorded as failed "
                        "(default %(default)gs)")
    return p


def parse(argv):
    return parser().parse_args(argv)


def main(argv=None):
    """Entry point of the ehbt-triage script."""
    from .run import run

    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        sys.stderr.write("\nehbt-triage: interrupted; every core reported so far is stored, "
                         "run again to finish the rest\n")
        return 130
