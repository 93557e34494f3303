# SPDX-License-Identifier: Apache-2.0
"""Debugger-neutral helpers for the front ends that drive the engine from inside a debugger
(plugins/gdb/ehbt.py, plugins/lldb/ehbt_lldb.py).

- ``cached_image``, ``memory_module``: the engine's image of a file a debugger loaded, opened
  once per path, and the module of an image only the target's memory holds (the vDSO);
- ``FAULT_ADDRESS_SIGNALS``: the signals whose siginfo carries a fault address;
- ``merge_modules``: a debugger's module list completed with the modules the engine found in
  a core file itself (qemu-user cores carry no file list, so a debugger may know only the
  executable);
- ``physical_frames``: a debugger's frames grouped into stack frames (inlined calls share
  the stack frame of the function they were inlined into);
- ``agreement``: whether a debugger's stack frame and the engine's at the same depth agree;
- ``parse_count``: a frame-count option's value, or the one-line error both plugins print;
- ``respell_live_modules``: a live process's module paths spelled as the kernel names the
  mapped files (what ``ehbt pid`` prints), not as the dynamic linker's list does.
"""

import os

import ehbt

MASK = (1 << 64) - 1
# The largest frame count the engine takes (Limits.max_frames is 32 bits).
COUNT_MAX = (1 << 32) - 1
# SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV: si_addr is meaningful (the _sigfault member).
FAULT_ADDRESS_SIGNALS = (4, 5, 7, 8, 11)


def cached_image(images, path):
    """The ehbt.Image of `path` from `images` (a dict path -> Image), opened and kept there on
    first use; None when the engine cannot open the file."""
    image = images.get(path)
    if image is None:
        try:
            image = ehbt.Image.open(path)
        except ehbt.Error:
            return None
        images[path] = image
    return image


def memory_module(read, load, name):
    """The module of an ELF image the target has only in memory (the vDSO), its ELF header at
    `load`, read through read(addr, size); None when no image can be read there."""
    try:
        image = ehbt.Image.from_memory(read, load, name)
    except (ehbt.Error, ValueError):
        return None
    # No file to compare with the image read from memory: a build-id match is unknown.
    return ehbt.Module(image, path=name, bias=(load - image.min_vaddr) & MASK, file="",
                       build_id_match=None)


def same_file(a, b):
    """Whether two modules are the same file: by build-id when both have one, else by name."""
    if a.build_id and b.build_id:
        return a.build_id == b.build_id
    return os.path.basename(a.path) == os.path.basename(b.path)


def _debug_file(module):
    return module.image is not None and module.image.debug_file is not None


def _same_real_file(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def merge_modules(from_debugger, from_core):
    """The debugger's modules plus those the engine found in the core that it does not cover.

    A file both know but place differently is placed where the engine says: the engine read
    the core's own records (NT_FILE, the dynamic linker's list); a debugger may have left a
    file unrelocated. A file both place alike keeps the debugger's module under the path the
    core names it by (GDB says /lib/x86_64-linux-gnu/libc.so.6 where the core says
    /usr/lib/x86_64-linux-gnu/libc.so.6), so every front end spells it as the CLI does.
    Engine modules overlapping none of the kept ones are added."""
    merged = []
    for m in from_debugger:
        twin = [c for c in from_core if same_file(m, c)]
        if twin and all(c.bias != m.bias for c in twin):
            continue
        # The same file where the engine placed it, but the engine also found its separate
        # debug file (build-id directory, debuglink): its .debug_frame and symbols count.
        richer = [c for c in twin if c.bias == m.bias and _debug_file(c) and not _debug_file(m)]
        if richer:
            merged.append(richer[0])
            continue
        placed = [c for c in twin if c.bias == m.bias]
        if placed:
            m.path = placed[0].path
            if m.file and placed[0].file and _same_real_file(m.file, placed[0].file):
                m.file = placed[0].file  # one file, through a symlink: the engine's spelling
        merged.append(m)
    for c in from_core:
        if not any(m.start < c.end and c.start < m.end for m in merged):
            merged.append(c)
    return merged


def physical_frames(frames):
    """Groups a debugger's frames into stack frames.

    `frames` is a sequence of (pc, inlined) from the innermost frame out; an inlined frame
    shares its stack frame with the frames after it up to the first one that is not inlined.
    Returns (groups, depth_of): groups is the pc of each stack frame (the pc of its innermost
    frame, which is where that stack frame really executes), depth_of[i] the stack-frame depth
    of frames[i]."""
    groups = []
    depth_of = []
    open_group = False
    for pc, inlined in frames:
        if not open_group:
            groups.append(pc)
            open_group = True
        depth_of.append(len(groups) - 1)
        if not inlined:
            open_group = False
    return groups, depth_of


def agreement(engine_pcs, debugger_pcs, depth):
    """Whether the debugger's stack frame at `depth` matches the engine's.

    They agree when both have a frame at that depth with the same pc, and the frame each
    found as its caller is the same too (the same pc, or neither found one). So the last
    frame of a walk that stopped early, while the other went on, does not agree: that is the
    frame where the two unwinders part ways. Each list must hold the walk's frames at least
    up to depth + 1 (or all of them when the walk is shorter)."""
    def at(pcs, i):
        if i < len(pcs):
            return pcs[i]
        return None

    here_e, here_d = at(engine_pcs, depth), at(debugger_pcs, depth)
    if here_e is None or here_d is None or here_e != here_d:
        return False
    return at(engine_pcs, depth + 1) == at(debugger_pcs, depth + 1)


def parse_count(option, text):
    """The value of a frame-count option (-n, --count): an integer from 1 to COUNT_MAX.
    Raises ValueError with the one line the plugins print otherwise."""
    expects = "ehbt: %s expects a number between 1 and %d" % (option, COUNT_MAX)
    if text is None:
        raise ValueError(expects)
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError("%s, not '%s'" % (expects, text)) from None
    if not 1 <= value <= COUNT_MAX:
        raise ValueError("%s, not %s" % (expects, text))
    return value


def one_line(error):
    """An exception as one line of text for the user: its message without a traceback."""
    text = str(error).strip().splitlines()
    message = text[0] if text else type(error).__name__
    return message if message.startswith("ehbt: ") else "ehbt: " + message


def mapped_files(pid):
    """{realpath: path as /proc/PID/maps names it} of the files a live process maps, or {}
    when that cannot be read (another machine, no permission)."""
    found = {}
    try:
        with open("/proc/%d/maps" % int(pid)) as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    path = parts[5].rstrip("\n")
                    if path.endswith(" (deleted)"):
                        continue
                    found.setdefault(os.path.realpath(path), path)
    except (OSError, ValueError):
        return {}
    return found


def respell_live_modules(modules, pid):
    """Renames the modules of a live process to the paths its maps name the same files by
    (what the engine, and so `ehbt pid`, reports); modules it does not map keep their name."""
    files = mapped_files(pid)
    if not files:
        return modules
    for m in modules:
        if m.path.startswith("/"):
            spelled = files.get(os.path.realpath(m.path))
            if spelled:
                if m.file and _same_real_file(m.file, spelled):
                    m.file = spelled
                m.path = spelled
    return modules


def live_executable(pid, fallback):
    """The executable of a live process as the kernel names it (/proc/PID/exe), else
    `fallback`."""
    try:
        path = os.readlink("/proc/%d/exe" % int(pid))
    except (OSError, ValueError):
        return fallback
    return path[:-len(" (deleted)")] if path.endswith(" (deleted)") else path
