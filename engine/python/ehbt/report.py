# SPDX-License-Identifier: Apache-2.0
"""The ``ehbt-backtrace/1`` document and bt-style text, built from engine objects.

Shared by the GDB and LLDB plugins and the triage tool, so that every front end writes the
same field names as the CLI (see docs/formats.md, "ehbt-backtrace/1").
Addresses are lowercase hex strings with 0x; absent values are None (JSON null).
"""

import json

FORMAT = "ehbt-backtrace/1"

# Stop reasons after which a walk counts as complete (the CLI's exit status 0).
COMPLETE_STOPS = ("outermost", "max_frames")


def hexaddr(value):
    """0x-prefixed lowercase hex, or None."""
    return None if value is None else "0x%x" % value


def frame_record(frame, index):
    """One frame as the JSON format writes it."""
    module = frame.module
    sym = frame.symbolize()
    record = {
        "index": index,
        "pc": hexaddr(frame.pc),
        "cfa": hexaddr(frame.cfa),
        "source": frame.source,
        "module": module.path if module is not None else None,
        "module_offset": hexaddr(frame.pc - module.bias) if module is not None else None,
        "symbol": sym[0] if sym else None,
        "symbol_offset": hexaddr(frame.pc - sym[1]) if sym else None,
    }
    if getattr(frame, "jit", False):
        record["jit"] = True  # JIT code (no module): only these frames carry the key
    return record


def module_record(module):
    """One module: where the target maps it, which file was used, and its build-id."""
    return {
        "path": module.path,
        "file": module.file or None,
        "base": hexaddr(module.start),
        "bias": hexaddr(module.bias),
        "build_id": module.build_id or None,
        "build_id_match": bool(module.build_id_match),
    }


def signal_record(number, code=0, address=None):
    """The signal object, or None when there was no signal."""
    if not number:
        return None
    from . import signal_name

    return {"number": int(number), "name": signal_name(int(number)), "code": int(code),
            "address": hexaddr(address)}


def thread_record(tid, backtrace, crashing=False, name=None):
    """One thread with its frames and why its walk stopped."""
    record = {
        "tid": int(tid),
        "crashing": bool(crashing),
        "stop_reason": backtrace.stop,
        "stop_detail": backtrace.detail,
        "frames": [frame_record(f, i) for i, f in enumerate(backtrace.frames)],
    }
    if name:
        record["name"] = name
    return record


def document(arch, threads, modules=(), executable=None, core=None, signal=None, **extra):
    """The whole document. `threads` are thread_record()s; `modules` Module objects."""
    doc = {
        "format": FORMAT,
        "core": core,
        "arch": str(arch),
        "executable": executable,
        "signal": signal,
        "modules": [module_record(m) for m in modules],
        "threads": list(threads),
    }
    doc.update(extra)
    return doc


def target_document(target, threads="crashing", options=None, limits=None, core=None):
    """The document for an ehbt.Target (a core or a live process).

    threads: "crashing" (the crashing thread, or the first), "all", or a list of indexes.
    """
    if threads == "crashing":
        indexes = [target.crashing_thread] if target.threads else []
    elif threads == "all":
        indexes = list(range(len(target.threads)))
    else:
        indexes = list(threads)
    all_threads = target.threads
    records = []
    for i in indexes:
        bt = target.unwind_thread(i, options, limits)
        t = all_threads[i]
        records.append(thread_record(t.tid, bt, crashing=(i == target.crashing_thread
                                                          and target.signal is not None),
                                     name=t.name))
    sig = target.signal
    return document(
        target.arch, records, modules=target.modules, executable=target.executable or None,
        core=core if core is not None else (target.path or None),
        signal=signal_record(sig.number, sig.code, sig.address) if sig is not None else None)


def dumps(doc):
    """The document as JSON text, the way every front end prints it."""
    return json.dumps(doc, indent=2)


def frame_line(frame, index):
    """A frame in GDB's bt look: ``#3  0x000055d4... in check () from /opt/app/bin/server``."""
    width = 16
    sym = frame.symbolize()
    module = frame.module
    text = "#%-3d0x%0*x in %s ()" % (index, width, frame.pc, sym[0] if sym else "??")
    if module is not None:
        text += " from " + module.path
    return text


def frame_detail(frame, regnames=None):
    """The extra line of -full output: how the frame was found, and its registers."""
    parts = ["cfa " + hexaddr(frame.cfa), "via " + frame.source]
    module = frame.module
    if module is not None:
        parts.append("module+" + hexaddr(frame.pc - module.bias))
    if frame.signal_trampoline:
        parts.append("signal trampoline")
    text = "    " + ", ".join(parts)
    if regnames:
        regs = frame.regs
        shown = ["%s=%s" % (regnames[n], hexaddr(v)) for n, v in regs.items() if n in regnames]
        if shown:
            text += "\n    " + " ".join(shown)
    return text


def stop_line(backtrace):
    """The closing line GDB-style output ends with when a walk stopped early, else None."""
    if backtrace.stop == "outermost":
        return None
    if backtrace.stop == "max_frames":
        return "(More stack frames follow...)"
    reason = backtrace.stop
    if backtrace.detail:
        reason += " (%s)" % backtrace.detail
    return "Backtrace stopped: " + reason


def format_text(backtrace, full=False, regnames=None):
    """The whole backtrace as bt-like text (a list of lines)."""
    lines = []
    for i, frame in enumerate(backtrace.frames):
        lines.append(frame_line(frame, i))
        if full:
            lines.append(frame_detail(frame, regnames))
    end = stop_line(backtrace)
    if end:
        lines.append(end)
    return lines
