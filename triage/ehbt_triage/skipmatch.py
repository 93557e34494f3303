# SPDX-License-Identifier: Apache-2.0
"""A set of skip patterns asked "does any of you fullmatch this text?" in one go.

The naive check, ``any(re.fullmatch(p, text) for p in patterns)``, runs every regex of the
skip list (~100) for every candidate of every label, and compiling them one by one costs a
few ms of each run (``re`` is pure Python). Instead:

- a pattern without regex metacharacters is a literal: it fullmatches exactly the text equal
  to it, so the literals go into a set;
- every other pattern that can share a regex goes into ONE alternation ``(?:p1)|(?:p2)|...``,
  compiled once: fullmatch of an alternation backtracks into the next branch when one cannot
  reach the end, so it matches iff some branch fullmatches alone;
- a pattern whose meaning would change inside an alternation stays a regex of its own: a
  backreference or a conditional (group numbers shift), a named group (two patterns may use
  the same name), an inline flag group ``(?i)`` (only allowed at the very start of a regex).
  The test is textual and errs towards "alone", which is only slower.
"""

import re

_META = frozenset(".^$*+?{}[]\\|()")
# Constructs that must not be put inside a shared alternation (see the module doc): a
# backslash before a digit (a backreference, or an octal escape: harmless, but rare enough),
# and every "(?" group other than non-capturing, look-around, atomic and comment groups.
_ALONE = re.compile(r"\\[0-9]|\(\?(?![:=!#>]|<[=!])")


def is_literal(pattern):
    """True when the pattern has no metacharacter, so it matches only itself."""
    return not _META.intersection(pattern)


def compile_one(pattern):
    """re object of one pattern; re.error naming the pattern when it is not a regex."""
    try:
        return re.compile(pattern)
    except re.error as e:
        raise re.error("bad skip pattern %r: %s" % (pattern, e)) from None


class SkipMatcher:
    """fullmatch of any of `patterns`, as the naive loop answers it.

    `checked`: patterns known to compile (the shipped skip list, which a test compiles one by
    one); every other pattern is compiled on its own first, so that a bad one is reported by
    name as before -- and so that one like ``a)|(b``, invalid alone, is never made valid by
    the parentheses the alternation puts around it."""

    def __init__(self, patterns, checked=()):
        self.literals = set()
        self.alone = []  # compiled patterns matched one by one
        shared = []
        checked = set(checked)
        for p in patterns:
            if is_literal(p):
                self.literals.add(p)
                continue
            compiled = None if p in checked else compile_one(p)
            if _ALONE.search(p):
                self.alone.append(compiled or compile_one(p))
            else:
                shared.append(p)
        self.shared = None
        if shared:
            try:
                self.shared = re.compile("|".join("(?:%s)" % p for p in shared))
            except re.error:
                # A "checked" pattern was not (an edited skip-list file): name it.
                for p in shared:
                    compile_one(p)
                raise

    def fullmatch(self, text):
        """True when some pattern fullmatches `text`."""
        return (text in self.literals
                or (self.shared is not None and self.shared.fullmatch(text) is not None)
                or any(p.fullmatch(text) for p in self.alone))
