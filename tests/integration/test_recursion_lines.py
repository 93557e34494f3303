# SPDX-License-Identifier: Apache-2.0
"""Source lines of a deep recursion (the overflow fixture, cores/programs/overflow.c): hundreds of
frames at one pc, whose source position the report looks up once and gives every one of them
(report/source_lines.cpp). Expected: GDB's record of the first frames, and for the rest the
program's own structure -- every fx_recurse frame below the innermost returns to the line of
the recursive call, and main's frame is at the line of its call."""

import os

import pytest

import cores_expect as ce
import lines_expect as le

ARCHES = [a for a, name in ce.ALL_CASES if name == "overflow"]
SOURCE = ce.CORES / "programs" / "overflow.c"


def line_of(text):
    """The 1-based line of overflow.c that holds `text` (exactly one)."""
    found = [n for n, line in enumerate(SOURCE.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


@pytest.mark.parametrize("arch", ARCHES)
def test_every_frame_of_a_deep_recursion_has_its_line(ehbt_bin, fixture_cores, arch):
    exp = ce.expected_case(fixture_cores, arch, "overflow", pytest.skip)
    sysroots, exe = ce.default_args(exp)
    _, doc = ce.run_ehbt(ehbt_bin, exp["core"], sysroots, exe)
    (thread,) = [t for t in doc["threads"] if t["crashing"]]
    frames = thread["frames"]
    (want,) = [t for t in exp["threads"] if t["crashing"]]
    gdb = want["frames"]
    assert len(frames) > len(gdb) >= 50, (len(frames), len(gdb))

    # GDB's frames (its record stops after a few dozen of them), position by position.
    for i, g in enumerate(gdb):
        got = frames[i]
        assert le.position_matches(got["location"], g["location"]), (i, got, g["location"])

    # The rest: fx_recurse down to main, each at the recursive call; main at its call.
    recursive_call, main_call = line_of("fx_recurse(depth + 1)"), line_of("fx_recurse(0)")
    names = [f["symbol"] for f in frames]
    first_main = names.index("main")
    assert names[:first_main] == ["fx_recurse"] * first_main, names[:first_main + 1]
    assert first_main > 500, first_main  # the stack limit make-cores.sh sets: ~900 levels
    for i in range(1, first_main):
        loc = frames[i]["location"]
        assert loc is not None and loc["line"] == recursive_call, (i, frames[i])
        assert os.path.basename(loc["file"]) == "overflow.c", (i, frames[i])
        assert frames[i]["inlined"] == [], (i, frames[i])
    assert frames[first_main]["location"]["line"] == main_call, frames[first_main]
    assert os.path.basename(frames[first_main]["location"]["file"]) == "overflow.c"
