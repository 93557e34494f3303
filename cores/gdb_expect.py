# SPDX-License-Identifier: Apache-2.0
"""Sourced into GDB: records GDB's own backtrace of every thread as JSON.

Adds the command `ehbt-expect OUTPUT [MAX_FRAMES]`. For each thread it walks
gdb.newest_frame() -> older() and writes, per *physical* frame, what GDB believes: the pc, the
function name, the minimal (ELF) symbol covering the lookup address, the module and the frame
type. Inline frames and tail-call frames are not frames of their own (they share or invent pcs
and do not exist on the machine stack); signal trampoline frames are kept (the trampoline is a
real frame). GDB's source lines are kept with the physical frame (#28): its `location` (GDB's
sal for it: for a frame with calls inlined at its pc, the call site of the outermost one) and
`inlined`, the inline frames GDB shows just above it, innermost first, each with its name and
sal. Tail-call frames GDB invents from call-site DWARF are dropped with their lines (the
machine stack does not say them; no unwinder can).

The output is raw GDB facts; cores/make_cores.py turns it into the expected file. Nothing here
depends on ehbt.
"""

import json
import re

import gdb

_TYPE_NAMES = {
    gdb.NORMAL_FRAME: "normal",
    gdb.DUMMY_FRAME: "dummy",
    gdb.INLINE_FRAME: "inline",
    gdb.TAILCALL_FRAME: "tailcall",
    gdb.SIGTRAMP_FRAME: "sigtramp",
    gdb.ARCH_FRAME: "arch",
    gdb.SENTINEL_FRAME: "sentinel",
}

# "fx_level3 + 12 in section .text of /path/to/file" or "main in section .text".
_INFO_SYMBOL = re.compile(r"^(?P<name>.+?)(?: \+ (?P<off>\d+))? in section (?P<sect>\S+)"
                          r"(?: of (?P<file>.+))?$")


def _min_symbol(addr):
    """GDB's minimal symbol (from .symtab/.dynsym, its own or a separate debug file's)."""
    try:
        text = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    except gdb.error:
        return None, None, None
    m = _INFO_SYMBOL.match(text.splitlines()[0]) if text else None
    if not m:
        return None, None, None
    return m.group("name"), int(m.group("off") or 0), m.group("sect")


def _module(addr, exe_file):
    """The path of the objfile GDB maps addr to: a shared library, the executable, the vdso."""
    name = gdb.solib_name(addr)
    if name:
        return name
    try:
        text = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    except gdb.error:
        text = ""
    m = _INFO_SYMBOL.match(text.splitlines()[0]) if text else None
    if m and m.group("file"):
        f = m.group("file")
        if f.startswith("system-supplied DSO"):
            return "[vdso]"
        return f
    if m:  # a symbol of the only objfile: the executable
        return exe_file
    # No symbol at all: the executable still claims its own sections.
    try:
        sect = gdb.execute("info files", to_string=True)
    except gdb.error:
        return None
    for line in sect.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1] == "-" and parts[3] == "is":
            try:
                lo, hi = int(parts[0], 16), int(parts[2], 16)
            except ValueError:
                continue
            if lo <= addr < hi:
                return parts[6] if len(parts) >= 7 and parts[5] == "in" else exe_file
    return None


def _position(frame):
    """GDB's source position of a frame: {file (as the debug info names it), fullname (GDB's
    absolute path), line}, or None when GDB knows no line there."""
    try:
        sal = frame.find_sal()
    except gdb.error:
        return None
    if sal is None or sal.symtab is None or not sal.line:
        return None
    try:
        fullname = sal.symtab.fullname()
    except gdb.error:
        fullname = None
    return {"file": sal.symtab.filename, "fullname": fullname, "line": sal.line}


def _walk(max_frames, exe_file):
    frames = []
    inlined = []  # the inline frames seen since the last physical frame, innermost first
    frame = gdb.newest_frame()
    prev_type = None
    levels = 0
    last = None
    while frame is not None and len(frames) < max_frames and levels < max_frames * 4:
        levels += 1
        last = frame
        ftype = frame.type()
        if ftype == gdb.INLINE_FRAME:
            inlined.append({"function": frame.name(), "location": _position(frame)})
        elif ftype == gdb.TAILCALL_FRAME:
            inlined = []  # calls GDB guessed from call sites: not part of any physical frame
        if ftype not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            pc = int(frame.pc())
            # GDB looks callers up at pc-1 (the call instruction), except for frame 0, the
            # trampoline (entered at its first byte) and the frame a signal interrupted, whose
            # pc is where execution actually stopped.
            exact = not frames or gdb.SIGTRAMP_FRAME in (prev_type, ftype)
            lookup = pc if exact or pc == 0 else pc - 1
            fn = frame.function()
            msym, msym_off, msym_sect = _min_symbol(lookup)
            frames.append({
                "level": frame.level(),
                "pc": "0x%x" % pc,
                "lookup_pc": "0x%x" % lookup,
                "type": _TYPE_NAMES.get(ftype, str(ftype)),
                "name": frame.name(),
                "function": fn.name if fn is not None else None,
                "min_symbol": msym,
                "min_symbol_offset": msym_off,
                "section": msym_sect,
                "module": _module(lookup, exe_file),
                "location": _position(frame),
                "inlined": inlined,
            })
            inlined = []
            prev_type = ftype
        try:
            frame = frame.older()
        except gdb.error as e:
            frames.append({"error": str(e)})
            frame = None
    if last is not None and frame is None:
        reason = last.unwind_stop_reason()
        stop = gdb.frame_stop_reason_string(reason)
        outermost = reason == gdb.FRAME_UNWIND_OUTERMOST
    else:
        stop, outermost = "max frames", False
    return frames, stop, outermost


class EhbtExpect(gdb.Command):
    """ehbt-expect OUTPUT [MAX_FRAMES]: write every thread's physical frames as JSON."""

    def __init__(self):
        super().__init__("ehbt-expect", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        out = args[0]
        max_frames = int(args[1]) if len(args) > 1 else 4096
        inferior = gdb.selected_inferior()
        selected = gdb.selected_thread()
        exe_file = gdb.current_progspace().filename
        signal = None
        try:
            signal = int(gdb.parse_and_eval("$_siginfo.si_signo"))
        except gdb.error:
            pass
        threads = []
        for thread in sorted(inferior.threads(), key=lambda t: t.num):
            thread.switch()
            frames, stop, outermost = _walk(max_frames, exe_file)
            threads.append({
                "gdb_num": thread.num,
                "tid": thread.ptid[1] or thread.ptid[0],
                "selected": thread == selected,
                "frames": frames,
                "gdb_stop": stop,
                "outermost": outermost,
            })
        selected.switch()
        doc = {"exe_file": exe_file, "signal": signal, "threads": threads}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)


# GDB stops at main by default; ehbt walks to the outermost frame (_start, clone3).
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
EhbtExpect()
