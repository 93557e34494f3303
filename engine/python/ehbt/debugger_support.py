# SPDX-License-Identifier: Apache-2.0
"""Debugger-neutral helpers for the front ends that drive the engine from inside a debugger
(plugins/gdb/ehbt.py, plugins/lldb/ehbt_lldb.py).

- ``cached_image``, ``memory_module``: the engine's image of a file a debugger loaded, opened
  once per path, and the module of an image only the target's memory holds (the vDSO);
- ``merge_modules``: a debugger's module list completed with the modules the engine found in
  a core file itself (qemu-user cores carry no file list, so a debugger may know only the
  executable);
- ``physical_frames``: a debugger's frames grouped into stack frames (inlined calls share
  the stack frame of the function they were inlined into);
- ``agreement``: whether a debugger's stack frame and the engine's at the same depth agree;
- ``parse_gdb_info_files``, ``module_from_sections``: GDB's `info files` listing read, and a
  file placed by the runtime addresses of its sections;
- ``EngineCores``: the engine's readers of core files, one per set of inputs, and the core a
  debugger has mapped into its own address space (LLDB);
- ``first_two_frames``, ``annotation``: the engine's view of one stack depth, for a debugger's
  frame annotations (LLDB's recognizer), frame 0 from one step, deeper from one walk;
- ``with_module_files``, ``differs_from_core``: reading a module's file where a core has no
  bytes, and a module whose build-id the core contradicts;
- ``regex_except``: a regex matching every string but some words (LLDB's recognizer);
- ``respell_live_modules``: a live process's module paths spelled as the kernel names the
  mapped files (what ``ehbt pid`` prints), not as the dynamic linker's list does.
"""

import os
import re
import struct

import ehbt

MASK = (1 << 64) - 1
ET_EXEC, ET_CORE = 2, 4


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
    file unrelocated. A file both place alike is the engine's module when the engine found
    the file itself (what the CLI lists); else it keeps the debugger's module under the path the
    core names it by (GDB says /lib/x86_64-linux-gnu/libc.so.6 where the core says
    /usr/lib/x86_64-linux-gnu/libc.so.6), so every front end spells it as the CLI does.
    Engine modules overlapping none of the kept ones are added.

    The engine decides which files are used, for every front end alike: a debugger's file
    whose build-id is not the one the core records for that place is dropped (the engine's
    module, reported with build_id_match false and not used, takes its place, as the CLI
    lists it); a debugger's file kept where the engine placed the same file reports the
    engine's build_id_match (None where the core records no build-id: nothing to compare)."""
    merged = []
    for m in from_debugger:
        if differs_from_core(m, from_core):
            continue
        twin = [c for c in from_core if same_file(m, c)]
        if twin and all(c.bias != m.bias for c in twin):
            continue
        placed = [c for c in twin if c.bias == m.bias]
        if placed and placed[0].file and not placed[0].missing:
            # The engine found the file itself: its module, as the CLI lists it (the build-id
            # the core records, not the one a debugger read from the file it loaded). Decided
            # before asking for debug files: that lookup may fetch from debuginfod, which the
            # CLI does only for modules frames land in.
            merged.append(placed[0])
            continue
        # A file the debugger found and the engine did not, where the engine placed it, but
        # the engine found its separate debug file (build-id directory, debuglink): its
        # .debug_frame and symbols count. (Asked only here: a module both read from memory,
        # the vDSO, is not looked up for a debug file no frame may need.)
        richer = [c for c in placed if m.file and _debug_file(c) and not _debug_file(m)]
        if richer:
            merged.append(richer[0])
            continue
        if placed:
            m.path = placed[0].path
            # A file compared with what the core records, as the CLI does: unknown when it
            # records none (qemu's cores), whatever the file holds. (An image read from memory,
            # the vDSO, has no file to compare: it keeps its None.)
            recorded = placed[0].build_id
            if m.file:
                m.build_id_match = (recorded == m.build_id) if recorded and m.build_id else None
            if m.file and placed[0].file and _same_real_file(m.file, placed[0].file):
                m.file = placed[0].file  # one file, through a symlink: the engine's spelling
        merged.append(m)
    for c in from_core:
        if not any(m.start < c.end and c.start < m.end for m in merged):
            merged.append(c)
    return merged


def module_set(modules, target, live_pid=None, perf_map="", warnings=None):
    """The ModuleSet a plugin walks with: its modules, and the JIT code (executable memory no
    file backs) and perf map that the debuggers do not describe, so that JIT frames are told
    and named as the CLI tells and names them: where the engine's target of the same core is
    known, that target's (`ehbt core`); for a live process on this machine (`live_pid`), its
    /proc/PID/maps and the perf map `perf_map` names, else /tmp/perf-PID.map (`ehbt pid`'s
    rule, ModuleSet.add_process_jit_code). What reading them said (an unreadable
    `perf_map`) is appended to `warnings` when a list is given."""
    out = ehbt.ModuleSet(modules)
    if target is not None:
        out.add_jit_code_of(target.modules)
    elif live_pid:
        said = out.add_process_jit_code(int(live_pid), perf_map or "")
        if warnings is not None:
            warnings.extend(said)
    return out


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


_MAPS_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) ", re.M)


def parse_maps_regions(text):
    """[(start, end)] of the lines of a /proc/PID/maps text, one per mapping."""
    return [(int(a, 16), int(b, 16)) for a, b in _MAPS_LINE.findall(text)]


def live_regions(pid):
    """The mappings of a live process on this machine, as Unwinder.unwind's `regions` (what
    bounds a stack scan to the stack's mapping, as `ehbt pid` is bounded), or None when its
    maps cannot be read (another machine, no permission)."""
    try:
        with open("/proc/%d/maps" % int(pid)) as maps:
            return parse_maps_regions(maps.read()) or None
    except (OSError, ValueError):
        return None


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


# Sections whose runtime address GDB shows and whose link address the engine knows.
_BIAS_SECTIONS = (".eh_frame", ".eh_frame_hdr", ".dynamic")
_VDSO_PREFIX = "system-supplied DSO at "


def parse_gdb_info_files(text):
    """GDB's `info files`: (core path or None, exec path or None, {path: {section: runtime
    start}}). It lists every section of the executable and of each shared library at its
    runtime address, and the vDSO as "system-supplied DSO at ADDR"."""
    core = exec_file = None
    files = {}
    block = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Local core dump file:"):
            block = "core"
            continue
        if line.startswith("Local exec file:"):
            block = "exec"
            continue
        if line.startswith("`") and "'" in line[1:]:
            path = line[1:line.index("'", 1)]
            if block == "core":
                core = path
            elif block == "exec":
                exec_file = path
            continue
        if not line.startswith("0x") or " is " not in line:
            continue
        addr_part, _, rest = line.partition(" is ")
        try:
            start = int(addr_part.split(" - ")[0], 16)
        except ValueError:
            continue
        section, sep, owner = rest.partition(" in ")
        if not sep:
            if block != "exec" or exec_file is None:
                continue  # a core segment ("load1"), not a file's section
            owner = exec_file
        files.setdefault(owner, {}).setdefault(section.strip(), start)
    return core, exec_file, files


def module_from_sections(path, sections, images, read):
    """An ehbt.Module for a file a debugger placed section by section ({name: runtime
    start}), or None when the engine cannot open or place it. Its load bias is the runtime
    address of one of .eh_frame/.eh_frame_hdr/.dynamic minus that section's link address
    (ET_EXEC files: 0). The vDSO is rebuilt from memory."""
    if path.startswith(_VDSO_PREFIX):
        try:
            load = int(path[len(_VDSO_PREFIX):], 16)
        except ValueError:
            return None
        return memory_module(read, load, "[vdso]")
    image = cached_image(images, path)
    if image is None:
        return None
    bias = 0
    if image.elf_type != ET_EXEC:
        link = image.sections
        for name in _BIAS_SECTIONS:
            if name in link and name in sections:
                bias = (sections[name] - link[name][0]) & MASK
                break
        else:
            return None  # no section to place it by: better no module than a wrong one
    return ehbt.Module(image, path=path, bias=bias)


def mapped_cores():
    """ELF core files and minidumps mapped into this process (a debugger maps the core it
    reads)."""
    cores = []
    for path in sorted(set(mapped_files(os.getpid()).values())):
        try:
            with open(path, "rb") as f:
                head = f.read(18)
        except OSError:
            continue
        if head[:4] == b"MDMP":
            cores.append(path)
            continue
        if len(head) < 18 or head[:4] != b"\x7fELF":
            continue
        endian = ">" if head[5] == 2 else "<"
        if struct.unpack(endian + "H", head[16:18])[0] == ET_CORE:
            cores.append(path)
    return cores


def with_module_files(read, modules):
    """read, falling back to a module's file where the target has no bytes (as the walk's
    module_files does): a core leaves out the code of files it maps unchanged."""

    def layered(addr, size):
        try:
            return read(addr, size)
        except MemoryError:
            module = modules.find(addr)
            if module is None or module.image is None:
                raise
            data = module.image.read(module.to_link(addr), size)
            if not data:
                raise
            return data

    return layered


def differs_from_core(module, from_core):
    """Whether the core records another build-id for this file than the one the debugger
    loaded: an engine module over the same addresses, or of the same file name, whose
    recorded build-id differs, while none records this one. (Two files never share addresses
    in one process; a debugger may place a file a little differently than the core's mapping
    starts, GDB by its sections, or not at all: GDB leaves a main executable that does not
    match the core at its link address.)"""
    if not module.build_id or any(c.build_id == module.build_id for c in from_core):
        return False
    name = os.path.basename(module.path or "")
    for c in from_core:
        if not c.build_id:
            continue
        overlap = c.start < module.end and module.start < c.end
        if overlap or (name and os.path.basename(c.path or "") == name):
            return True
    return False


_REGEX_SPECIAL = set(".[]()*+?{}|^$\\")


def regex_escape(text):
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def regex_except(words, tail=None):
    """A POSIX extended regex matching every string except the given words (each also when
    followed by `tail` and anything after it). Built from the words' trie: a string leaves
    the language where it ends inside the trie or takes a character no word continues with."""
    trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[None] = {}  # a word ends here

    def suffixes(node):
        ends = None in node
        children = sorted(ch for ch in node if ch is not None)
        stop = children + ([tail] if ends and tail else [])
        alternatives = ["[^%s].*" % "".join(stop) if stop else ".+"]
        alternatives += [regex_escape(ch) + suffixes(node[ch]) for ch in children]
        group = "(" + "|".join(alternatives) + ")"
        return group if ends else group + "?"  # ending inside a word is not a word

    return "^" + suffixes(trie) + "$"


class EngineCores:
    """The engine's readers of core files (ehbt.open_core), one per set of inputs, kept for
    the session; `errors` says why a core could not be opened."""

    def __init__(self):
        self._targets, self.errors = {}, {}

    def get(self, path, sysroots=(), exe="", debug_dirs=(), perf_map=""):
        key = (path, tuple(sysroots), exe or "", tuple(debug_dirs), perf_map or "")
        if key not in self._targets:
            try:
                self._targets[key] = ehbt.open_core(path, list(sysroots), exe or "",
                                                    debug_dirs=list(debug_dirs),
                                                    perf_map=perf_map or "")
            except ehbt.Error as e:
                self.errors[path] = str(e)
                self._targets[key] = None
        return self._targets[key]

    def find_mapped(self, tids):
        """The ELF core mapped into this process (a debugger maps the core it reads) whose
        threads are `tids`, else the only core mapped, else None."""
        candidates = mapped_cores()
        for path in candidates:
            target = self.get(path)
            if target is not None and {t.tid for t in target.threads} == set(tids):
                return path
        return candidates[0] if len(candidates) == 1 else None


def first_two_frames(regs, modules, read, regions=None):
    """[(pc, cfa, source)] of the engine's frame 0 and its caller, from one step."""
    unwinder = ehbt.Unwinder()
    first = unwinder.first_frame(regs, modules)
    step = unwinder.step(first, with_module_files(read, modules), modules, regions=regions)
    out = [(first.pc, step.cfa if step.ok else first.cfa, first.source)]
    if step.ok:
        out.append((step.caller.pc, None, step.caller.source))
    return out


def annotation(cache, depth, host_pcs, first_two, whole_walk):
    """(cfa, source, agrees) of the engine at one stack depth, for a debugger's frame there.

    `cache` holds one stop's results: frame 0 asks only first_two() (one step: a debugger
    asks for frame 0 at every stop), a deeper frame whole_walk() once; each returns
    [(pc, cfa, source)]. host_pcs: the debugger's stack-frame pcs up to depth + 1."""
    if depth == 0 and "walk" not in cache:
        engine = cache["first"] = cache.get("first") or first_two()
    else:
        engine = cache["walk"] = cache.get("walk") or whole_walk()
    agrees = agreement([pc for pc, _cfa, _source in engine], host_pcs, depth)
    if depth < len(engine):
        return engine[depth][1] or 0, engine[depth][2], agrees
    return 0, "none", agrees
