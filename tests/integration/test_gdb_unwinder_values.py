# SPDX-License-Identifier: Apache-2.0
"""The GDB unwinder never shows less than GDB alone: on every fixture core GDB can load, `bt
full`, `info frame`, `info args` and `info locals` of the crashing thread's frames, first with
GDB's own unwinders, then with `enable unwinder global ehbt`. Where GDB alone shows a value,
the engine's frames must not turn it into `<optimized out>` or `<error reading variable>`,
and `info frame` must name the same frame (its CFA, pc and caller).

The oracle is GDB itself with full debug info (each case's unstripped executable)."""

import json
import re

import pytest

import cores_expect as ce
import ehbt_py as h

pytestmark = pytest.mark.usefixtures("built")

# Frames of the crashing thread looked at (innermost first): the fixtures' own functions lie
# within the first dozen (libc's abort path, a signal frame, then the program).
LEVELS = 12
UNKNOWN = re.compile(r"<optimized out>|<error reading variable|<not saved>|<unavailable>")

# In GDB: records GDB's view of each frame of the selected thread into a JSON file.
_RECORD = r'''
import json

def ehbt_test_record(path, levels):
    frames = []
    try:
        gdb.execute("frame 0", to_string=True)
        frame = gdb.newest_frame()
    except gdb.error as e:  # GDB cannot make frame 0 of this core
        with open(path, "w") as f:
            json.dump({"frames": [], "bt": "", "error": str(e)}, f)
        return
    level = 0
    while frame is not None and level < levels:
        frame.select()
        entry = {"level": level, "name": frame.name(), "pc": frame.pc(),
                 "type": int(frame.type())}
        for cmd in ("info frame", "info args", "info locals"):
            try:
                entry[cmd] = gdb.execute(cmd, to_string=True)
            except gdb.error as e:
                entry[cmd] = "error: %s" % e
        frames.append(entry)
        try:
            frame = frame.older()
        except gdb.error:
            break
        level += 1
    try:
        bt = gdb.execute("bt full", to_string=True)
    except gdb.error as e:
        bt = "error: %s" % e
    with open(path, "w") as f:
        json.dump({"frames": frames, "bt": bt}, f)
'''
RECORD_DEF = "python exec(%r)" % _RECORD


@pytest.fixture(scope="module")
def built(build_dir):
    h.import_ehbt(build_dir)
    h.need_gdb()


def values(text):
    """{name: value} of `info args` / `info locals` output (one `name = value` per line)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+) = (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def frame_args(bt):
    """{(function, occurrence): argument text} from `bt full`'s frame lines."""
    out = {}
    seen = {}
    for line in bt.splitlines():
        m = re.match(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \((.*)\)(?: at | from |$)", line)
        if m:
            func = m.group(1)
            n = seen.get(func, 0)
            seen[func] = n + 1
            out[(func, n)] = m.group(2)
    return out


def info_frame_facts(text):
    """What `info frame` must keep: the frame's pc and function, and whether it has a caller.
    (Its CFA may differ: where GDB alone guesses a frame without unwind tables, the engine's
    frame-pointer step may find another, right, one.)"""
    facts = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("rip =", "pc =", "pswa =")):
            facts.append(line.split(";")[0])
        elif line.startswith("called by frame at"):
            facts.append("has a caller")
    return facts


def by_function(frames):
    """{(function, occurrence): frame record}: frames matched by name, in order (the engine
    shows no tail-call frames, so levels may shift)."""
    out, seen = {}, {}
    for f in frames:
        n = seen.get(f["name"], 0)
        seen[f["name"]] = n + 1
        out[(f["name"], n)] = f
    return out


CASES = [c for c in ce.ALL_CASES]

# Cores whose frame 0 GDB 13 cannot make at all, with its error: nothing to compare there.
# Most s390x qemu cores of PIE executables: GDB does not relocate the executable (qemu writes
# no file list and GDB finds no link map it trusts) and says "PC not saved"; on nounwind it
# makes unnamed frames, compared as far as they go, and the static core needs no relocation. Checked both ways: a case that starts to work fails here until it is taken off.
GDB_CANNOT_UNWIND = {("s390x", c): "PC not saved" for _, c in ce.ALL_CASES
                     if _ == "s390x" and c not in ("static", "nounwind")}


@pytest.mark.parametrize("arch,name", CASES, ids=["%s-%s" % c for c in CASES])
def test_unwinder_never_shows_less(build_dir, tmp_path, arch, name):
    path = ce.expected_path(arch, name)
    assert path.exists(), "no fixture core (run cores/make-cores.sh %s)" % arch
    exp = ce.load_expected(arch, name)
    gdb = ce.MAKE.ARCHES[arch]["gdb"]
    h.need_gdb(gdb)
    pre = ["set sysroot " + exp["sysroot"]] if exp.get("sysroot") else []
    if exp.get("debug_sysroot"):
        pre.append("set debug-file-directory %s/usr/lib/debug" % exp["debug_sysroot"])
    pre += ["file " + (exp.get("exe_unstripped") or exp["exe_file"]), "core " + exp["core"]]
    alone, ehbt = tmp_path / "alone.json", tmp_path / "ehbt.json"
    out = h.run_gdb(build_dir, [], pre + [
        RECORD_DEF, "python ehbt_test_record(%r, %d)" % (str(alone), LEVELS),
        "enable unwinder global ehbt",
        "python ehbt_test_record(%r, %d)" % (str(ehbt), LEVELS),
        "python print('WALKS', gdb._ehbt_plugin_state['unwinder'].walks)"], gdb=gdb)
    assert alone.exists() and ehbt.exists(), out[-3000:]
    before, after = json.loads(alone.read_text()), json.loads(ehbt.read_text())
    if (arch, name) in GDB_CANNOT_UNWIND:
        assert GDB_CANNOT_UNWIND[(arch, name)] in before.get("error", ""), before
        return
    assert "error" not in before, before
    walks = re.findall(r"^WALKS (\d+)", out, re.M)
    assert walks and int(walks[0]) >= 1, "the ehbt unwinder never ran:\n" + out[-3000:]

    errors = []
    # bt full: every argument GDB alone shows a value of keeps a value.
    args_before, args_after = frame_args(before["bt"]), frame_args(after["bt"])
    for key, text in args_before.items():
        for arg in re.findall(r"(\w+(?:@entry)?)=([^,]*)", text):
            if UNKNOWN.search(arg[1]):
                continue
            got = dict(re.findall(r"(\w+(?:@entry)?)=([^,]*)", args_after.get(key, "")))
            if key not in args_after:
                errors.append("bt full: no frame %s with the unwinder" % (key,))
            elif UNKNOWN.search(got.get(arg[0], "<missing>")) or arg[0] not in got:
                errors.append("bt full %s: %s=%s alone, %s with ehbt" % (
                    key, arg[0], arg[1], got.get(arg[0], "<missing>")))
    # info args / info locals / info frame, frame by frame. Where the fixture says the stack
    # ends early (a smashed return address: what GDB alone shows past it is not a frame), the
    # engine's walk stops there and so does GDB with the unwinder: that frame has no caller.
    (crashing,) = [t for t in exp["threads"] if t["crashing"]]
    ends_early = {int(crashing["frames"][-1]["pc"], 16)} if crashing.get("stop") == "early" \
        else set()
    frames_after = by_function(after["frames"])
    for key, f in by_function(before["frames"]).items():
        if f["name"] is None or f["type"] != 0:  # unnamed, inline, tail-call, sigtramp
            continue
        g = frames_after.get(key)
        if g is None:
            errors.append("no frame %s with the unwinder" % (key,))
            continue
        for cmd in ("info args", "info locals"):
            want, got = values(f[cmd]), values(g[cmd])
            for var, value in want.items():
                if UNKNOWN.search(value):
                    continue
                if var not in got or UNKNOWN.search(got[var]):
                    errors.append("%s %s: %s = %s alone, %s with ehbt" % (
                        cmd, key, var, value, got.get(var, "<missing>")))
        want_facts = info_frame_facts(f["info frame"])
        if f["pc"] in ends_early:
            want_facts = [fact for fact in want_facts if fact != "has a caller"]
        if want_facts != info_frame_facts(g["info frame"]):
            errors.append("info frame %s:\n  alone: %s\n  ehbt:  %s" % (
                key, info_frame_facts(f["info frame"]), info_frame_facts(g["info frame"])))
    assert not errors, "\n".join(errors) + "\n\n" + before["bt"] + "\n---\n" + after["bt"]
