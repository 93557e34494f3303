# SPDX-License-Identifier: Apache-2.0
"""The installed man pages say what the installed commands' --help says: every line of `ehbt
--help` and of each `ehbt COMMAND --help` (each command's as one block, in order), and every
line of `ehbt-triage --help` and of `ehbt-triage report --help` (as one block), is in the
page's text; man can render the pages from PREFIX/share/man without roff warnings; and no line
of a page rendered for an 80-column terminal is wider than that. The pages are generated from
--help at build time (dist/man/genman.py); this reads them back independently of that
generator."""
import os
import re
import subprocess

import pytest

from conftest import env_without_package_path

# The width the pages were generated at: argparse fills COLUMNS - 2 = 73 columns, what is
# left of 80 after man's 7-column indent.
HELP_ENV = dict(COLUMNS="75", LC_ALL="C")
TERMINAL = 80


def help_text(argv):
    proc = subprocess.run(argv + ["--help"], capture_output=True, text=True,
                          env=env_without_package_path(**HELP_ENV))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.rstrip("\n").split("\n")


ESCAPES = {"&": "", "-": "-", "e": "\\", "fB": "", "fI": "", "fR": "", "fP": ""}


def unescape(match):
    assert match.group(1) in ESCAPES, f"unexpected roff escape {match.group(0)!r}"
    return ESCAPES[match.group(1)]


def page_lines(path):
    """The text lines of a man page source: requests dropped, roff escapes undone."""
    lines = []
    for line in path.read_text().split("\n"):
        if line.startswith((".", "'")):
            continue
        lines.append(re.sub(r"\\(f[BIRP]|.)", unescape, line))
    return lines


def contains_block(haystack, block):
    n = len(block)
    return any(haystack[i:i + n] == block for i in range(len(haystack) - n + 1))


def commands(general_help):
    i = general_help.index("commands:")
    names = []
    for line in general_help[i + 1:]:
        if not line.strip():
            break
        names.append(line.split()[0])
    return names


def test_ehbt_page_matches_help(prefix):
    ehbt = str(prefix / "bin" / "ehbt")
    page = page_lines(prefix / "share" / "man" / "man1" / "ehbt.1")
    general = help_text([ehbt])
    missing = [line for line in general if line not in page]
    assert not missing, "lines of `ehbt --help` not in ehbt(1): %r" % missing
    names = commands(general)
    assert {"core", "pid", "cfi", "sframe"} <= set(names), names
    for name in names:
        block = help_text([ehbt, name])
        assert contains_block(page, block), f"`ehbt {name} --help` is not a block of ehbt(1)"


def test_triage_page_matches_help(prefix):
    page = page_lines(prefix / "share" / "man" / "man1" / "ehbt-triage.1")
    triage = str(prefix / "bin" / "ehbt-triage")
    text = help_text([triage])
    missing = [line for line in text if line not in page]
    assert not missing, "lines of `ehbt-triage --help` not in ehbt-triage(1): %r" % missing
    # The subcommand that has its own --help (docs/triage.md, "What changed recently").
    block = help_text([triage, "report"])
    assert "  --since AGE" in "\n".join(block)
    assert contains_block(page, block), "`ehbt-triage report --help` is not a block of the page"
    block = help_text([triage, "watch"])
    assert "  --report-interval SECONDS" in "\n".join(block)
    assert contains_block(page, block), "`ehbt-triage watch --help` is not a block of the page"


def rendered(argv, env=None):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return re.sub(r".\x08", "", proc.stdout).split("\n")  # overstrike bold/underline undone


@pytest.mark.parametrize("name", ["ehbt", "ehbt-triage"])
def test_page_fits_an_80_column_terminal(prefix, name):
    """Rendered by groff for 80 columns and by `man -l` with MANWIDTH=80, as a user reads it,
    no line is wider than 80 columns (a long --help line or an unbreakable token would be)."""
    path = str(prefix / "share" / "man" / "man1" / f"{name}.1")
    groff = rendered(["groff", "-man", "-Tutf8", "-rLL=%dn" % TERMINAL, "-P-cbou", path])
    env = dict(os.environ, MANWIDTH=str(TERMINAL), MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    man = rendered(["man", "-l", path], env=env)
    for how, lines in (("groff -rLL=80n", groff), ("MANWIDTH=80 man -l", man)):
        assert len(lines) > 50, (how, lines[:20])
        wide = ["%d: %s" % (len(line), line) for line in lines if len(line) > TERMINAL]
        assert not wide, "%s: %d lines of %s(1) wider than %d columns:\n%s" % (
            how, len(wide), name, TERMINAL, "\n".join(wide[:20]))


@pytest.mark.parametrize("name", ["ehbt", "ehbt-triage"])
def test_man_finds_and_renders_the_page(prefix, name):
    path = prefix / "share" / "man" / "man1" / f"{name}.1"
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    env = dict(os.environ, MANPATH=str(prefix / "share" / "man"), MANPAGER="cat", PAGER="cat",
               MANWIDTH="100")
    proc = subprocess.run(["man", name], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    text = re.sub(r".\x08", "", proc.stdout)
    assert "NAME" in text and "SYNOPSIS" in text and name in text, text[:500]
    version = subprocess.run([str(prefix / "bin" / name), "--version"], capture_output=True,
                             text=True, env=env_without_package_path()).stdout.split()[-1]
    assert f"{name} {version}" in text  # the page's footer names the version it documents
