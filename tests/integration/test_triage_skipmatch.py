# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage's skip-list matcher (skipmatch.SkipMatcher, used by signature.Signer) against
the obvious definition: a label is skipped iff some pattern, compiled alone by Python's `re`,
fullmatches the label or its bare name. Checked on the shipped skip list and on hostile
extra patterns (backreferences, named groups, inline flags, alternations, anchors), over
labels made from the patterns themselves, their near misses and random strings."""

import pathlib
import random
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "triage"))

from ehbt_triage import signature as sigmod  # noqa: E402
from ehbt_triage import skipmatch  # noqa: E402

SECTIONS = (sigmod.CRASH_REPORTING, sigmod.PROCESS_START)

# Patterns an alternation could get wrong if it held them, and plain ones beside them.
HOSTILE = [
    r"(a)\1", r"(?P<x>ab)(?P=x)", r"(?P<x>b)+", r"(?P<x>c)", r"(?i)ABORT", r"(?i:Raise)x?",
    r"(a)?(?(1)b|c)", r"a|b", r"x|yz|", r"^foo$", r"bar\Z", r"(a|ab)(c|bcd)(d*)", r"\d+",
    r"[^a-z]+", r"q{2,3}", r"a{", r"(?#comment)main", r"(?=ab)abc?", r"(?<=x)y|xy",
    r"(?>a+)b", r"a*+b", r"\\1", r"\x41BC", r"\101", r"std::\w+\(\)", r"", r"\.", r"raise.",
    r"tab	label", r"#hash", r"a\nb", r"(?s).x", r"abort$",
]

# Not regexes on their own: each must be refused by name, also where an alternation's
# parentheses around it would have made it valid.
BAD = ["(", "x)|(y", "a)(?:b", "[", "\\", "a**", "(?P<1>x)", "(?i", "x)"]


def _naive(patterns, label):
    compiled = [re.compile(p) for p in patterns]
    candidates = {label, sigmod.bare_name(label)}
    return any(p.fullmatch(c) for p in compiled for c in candidates)


def _matches_of(pattern):
    """Strings built from the pattern's text: some match it, most are near misses."""
    text = pattern
    for old, new in ((".*", "xyz"), ("[0-9]+", "12"), ("[0-9]*", "3"), ("(@.*)?", "@V"),
                     ("[A-Za-z0-9]*", "Go1"), ("[A-Z]", "Q"), ("[.0-9]*", ".6"),
                     ("[-.a-z0-9_]*", "-x86-64"), ("[0-9a-f]+", "1f")):
        text = text.replace(old, new)
    plain = re.sub(r"\\(.)", r"\1", text)
    plain = re.sub(r"\(([^()|]*)\)\?", r"\1", plain)
    out = {pattern, text, plain, plain.replace("(", "").replace(")", "").replace("?", "")}
    for s in list(out):
        out |= {s + "x", "x" + s, s[:-1], s + "\n", s.upper(), s + "()", s + "(int) const",
                s + "@@GLIBC_2.2.5", s + "@plt", s.replace("_", "")}
    return out


def _labels(patterns, seed):
    rng = random.Random(seed)
    labels = set()
    for p in patterns:
        labels |= _matches_of(p)
    alphabet = sorted(set("".join(patterns)) | set("abcxyz_:@()"))
    for _ in range(3000):
        labels.add("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))))
    labels |= {"main", "abort", "ABORT", "raise@@GLIBC_2.2.5", "std::terminate()",
               "ns::f(int) const", "(anonymous namespace)::g(char*)", "libc.so.6+0x1a2b",
               "libstdc++.so.6+0x9f00", "libgcc_s.so.1+0xbeef", "python3.11+0x4f0a79",
               "runtime.panicIndex", "runtime.goPanicIndexU", "__libc_start_main@@GLIBC_2.34",
               "_dl_start_user", "<unknown>", "0x0", "aa", "abab", "abcd", "ac", "bc", "c",
               "xy", "y", "qq", "qqqq", "aab", "Raisex", "tab\tlabel", "a\nb", "\nx", "AB",
               "ABC", "std::foo()", "#hash", "x", "yz", "", "foo", "bar", "raise!"}
    return sorted(labels)


def test_every_shipped_pattern_compiles_alone():
    """The shipped list is 'checked': the matcher does not compile its patterns one by one,
    so this test does."""
    for section in SECTIONS:
        patterns = sigmod.load_skiplist(section=section)
        assert patterns
        for p in patterns:
            re.compile(p)


@pytest.mark.parametrize("section", SECTIONS)
def test_shipped_list_matches_like_the_per_pattern_loop(section):
    patterns = sigmod.load_skiplist(section=section)
    matcher = skipmatch.SkipMatcher(patterns, checked=patterns)
    # Most shipped patterns are literals; the others share one regex; none needs its own.
    assert matcher.literals and matcher.shared is not None and not matcher.alone
    signer = sigmod.Signer()
    asked = signer.skipped if section == sigmod.CRASH_REPORTING else signer.process_start
    hits = 0
    for label in _labels(patterns, 1):
        want = _naive(patterns, label)
        assert asked(label) == want, label
        assert asked(label) == want, label  # remembered answers are the same answers
        bare = sigmod.bare_name(label)
        assert (matcher.fullmatch(label) or matcher.fullmatch(bare)) == want, label
        hits += want
    assert hits > len(patterns)  # the labels hit every kind of pattern, not only misses


def test_hostile_extra_patterns_match_like_the_per_pattern_loop():
    shipped = sigmod.load_skiplist()
    patterns = shipped + HOSTILE
    matcher = skipmatch.SkipMatcher(patterns, checked=shipped)
    # Backreferences, named groups, conditionals and inline flags are matched on their own.
    alone = {p.pattern for p in matcher.alone}
    for p in (r"(a)\1", r"(?P<x>ab)(?P=x)", r"(?P<x>b)+", r"(?P<x>c)", r"(?i)ABORT",
              r"(a)?(?(1)b|c)", r"\\1", r"\101", r"(?s).x"):
        assert p in alone
    signer = sigmod.Signer(extra_skip=HOSTILE)
    hits = 0
    for label in _labels(HOSTILE, 2) + _labels(shipped, 3):
        want = _naive(patterns, label)
        assert signer.skipped(label) == want, label
        hits += want
    assert hits > 100


def test_random_patterns_match_like_the_per_pattern_loop():
    """Random small regexes over a few letters (many share groups, quantifiers, anchors and
    alternations), all in one matcher."""
    rng = random.Random(7)
    atoms = ["a", "b", "ab", ".", "[ab]", "(a|b)", "(ab)", "(?:ba)", "\\d", "x", "^", "$"]
    quants = ["", "", "*", "+", "?", "{2}", "*?"]
    patterns = []
    while len(patterns) < 60:
        p = "".join(rng.choice(atoms) + rng.choice(quants) for _ in range(rng.randint(1, 4)))
        try:
            re.compile(p)
        except re.error:
            continue
        patterns.append(p)
    patterns += ["(a)\\1", "(?P<n>b)(?P=n)"]
    matcher = skipmatch.SkipMatcher(patterns)
    labels = {"".join(rng.choice("abx1") for _ in range(rng.randint(0, 6)))
              for _ in range(4000)}
    for label in sorted(labels):
        want = any(re.fullmatch(p, label) for p in patterns)
        assert matcher.fullmatch(label) == want, (label, patterns)


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_skip_pattern_is_named(bad):
    with pytest.raises(re.error) as err:
        re.compile(bad)  # really not a regex: the check below means something
    with pytest.raises(re.error) as err:
        sigmod.Signer(extra_skip=["abc", bad, "d.f"])
    assert "bad skip pattern %r" % bad in str(err.value)


def test_an_edited_shipped_list_with_a_bad_pattern_is_named():
    """A 'checked' pattern that is not a regex after all (the installed file edited) is still
    refused by name, not matched wrongly."""
    with pytest.raises(re.error) as err:
        skipmatch.SkipMatcher(["abort", "ra.se", "x(", "y.*"], checked=["abort", "ra.se",
                                                                        "x(", "y.*"])
    assert "bad skip pattern 'x('" in str(err.value)


def test_the_memo_is_bounded():
    signer = sigmod.Signer()
    for n in range(3 * sigmod._MEMO_CAP):
        assert not signer.skipped("f%d" % n)
    assert len(signer._skip_memo) <= sigmod._MEMO_CAP
    assert signer.skipped("abort") and signer.skipped("raise@@GLIBC_2.2.5")


def test_a_signer_pickles_the_same_before_and_after_use():
    """A dask run pickles the Signer with each task, and helper.py picks a helper by the
    pickle's bytes: what a Signer remembered must not change them, and a copy answers alike."""
    import pickle

    signer = sigmod.Signer(extra_skip=[r"(a)\1", "fx_[0-9]+"])
    before = pickle.dumps(signer)
    labels = ["abort", "aa", "fx_12", "main", "raise@@GLIBC_2.2.5", "_start", "f"]
    answers = [(signer.skipped(x), signer.process_start(x)) for x in labels]
    assert pickle.dumps(signer) == before
    copy = pickle.loads(before)
    assert [(copy.skipped(x), copy.process_start(x)) for x in labels] == answers
    assert answers[:4] == [(True, False), (True, False), (True, False), (False, False)]
    assert answers[5] == (False, True)
