# SPDX-License-Identifier: Apache-2.0
"""The ``ehbt-backtrace/1`` document and bt-style text, built from engine objects.

The one Python renderer: the GDB and LLDB plugins and the triage tool use it, and it writes
what the CLI's C++ renderer (engine/tools/cli_backtrace_report.cpp) writes: the same frame
lines (``#3  0x000055d4... in check () from /opt/app/bin/server``, ``<signal handler
called>`` for a signal frame, ``[frame_pointer]``/``[scan]`` after a guessed frame), the same
thread headers and stop line (``Backtrace stopped: reason: detail``), and the same JSON keys
(docs/formats.md, "ehbt-backtrace/1"). Addresses are lowercase hex strings with 0x; absent
values are None (JSON null).
"""

import json

FORMAT = "ehbt-backtrace/1"

# Stop reasons after which a walk counts as complete (the CLI's exit status 0).
COMPLETE_STOPS = ("outermost", "max_frames")
# Frame sources that are guesses (no unwind table): the text says so after the frame.
_GUESSED_SOURCES = ("frame_pointer", "scan")


def hexaddr(value):
    """0x-prefixed lowercase hex, or None."""
    return None if value is None else "0x%x" % value


def padded_address(value, arch):
    """A frame address as GDB and the CLI print it, padded to the target's pointer width: 16
    digits, 8 on i386 (a value that does not fit keeps all its digits). `arch` is an
    ehbt.Arch or its name."""
    if isinstance(arch, str):
        from . import Arch

        arch = Arch.from_name(arch)
    narrow = arch is not None and arch.info.address_size == 4 and value <= 0xFFFFFFFF
    return ("0x%08x" if narrow else "0x%016x") % value


def _symbol(frame, symbol_of):
    """(name, target start) of the symbol covering a frame, or None. `symbol_of(frame)`, when
    given, is asked only where the engine knows no symbol (a debugger's own symbol tables)."""
    sym = frame.symbolize()
    if sym:
        return sym[0], sym[1]
    return symbol_of(frame) if symbol_of is not None else None


def frame_record(frame, index, symbol_of=None):
    """One frame as the JSON format writes it."""
    module = frame.module
    sym = _symbol(frame, symbol_of)
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
    """One module: where the target maps it, which file was used, and its build-id (and
    whether the file's build-id is the one the target records, as the engine decided)."""
    return {
        "path": module.path,
        "file": module.file or None,
        "base": hexaddr(module.start),
        "bias": hexaddr(module.bias),
        "build_id": module.build_id or None,
        # None when either build-id is unknown: a match cannot be claimed or denied.
        "build_id_match": module.build_id_match,
    }


def signal_record(number, code=None, address=None):
    """The signal object, or None when there was no signal. `code` None (unknown: no
    siginfo) stays null; nothing is made up."""
    if not number:
        return None
    from . import signal_name

    return {"number": int(number), "name": signal_name(int(number)),
            "code": None if code is None else int(code), "address": hexaddr(address)}


def warning_record(warning):
    """One entry of "warnings": an ehbt.Warning's as_dict(), or a plain message string as a
    warning of kind "other"."""
    as_dict = getattr(warning, "as_dict", None)
    if callable(as_dict):
        return dict(as_dict())
    return {"kind": "other", "message": str(warning), "path": None, "option": None}


def thread_record(tid, backtrace, crashing=False, name=None, symbol_of=None):
    """One thread with its frames and why its walk stopped. `name` is kept for the triage
    tool's store; the debugger front ends leave it out, as the CLI does."""
    record = {
        "tid": int(tid),
        "crashing": bool(crashing),
        "stop_reason": backtrace.stop,
        "stop_detail": backtrace.detail,
        "frames": [frame_record(f, i, symbol_of) for i, f in enumerate(backtrace.frames)],
    }
    if name:
        record["name"] = name
    return record


def document(arch, threads, modules=(), executable=None, core=None, signal=None, pid=None,
             warnings=None, **extra):
    """The whole document. `threads` are thread_record()s; `modules` Module objects.

    A live process is named by "pid" (and has no "core" key), a core by "core", as the CLI
    writes them. `warnings` (a list of ehbt.Warning or str) adds the "warnings" list."""
    doc = {"format": FORMAT}
    if pid:
        doc["pid"] = int(pid)
    else:
        doc["core"] = core
    doc.update({
        "arch": str(arch),
        "executable": executable,
        "signal": signal,
        "modules": [module_record(m) for m in modules],
        "threads": list(threads),
    })
    if warnings is not None:
        doc["warnings"] = [warning_record(w) for w in warnings]
    doc.update(extra)
    return doc


def target_signal(target):
    """The signal record of an ehbt.Target, or None."""
    sig = target.signal
    if sig is None:
        return None
    return signal_record(sig.number, sig.code, sig.address)


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
    live = core is None and not target.path and target.pid
    return document(
        target.arch, records, modules=target.modules, executable=target.executable or None,
        core=core if core is not None else (target.path or None),
        signal=target_signal(target), pid=target.pid if live else None,
        warnings=list(getattr(target, "warnings", [])))


def dumps(doc):
    """The document as JSON text, the way the debugger front ends print it: one compact line
    (a pager cannot stop it halfway, and a script reads it with one readline)."""
    return json.dumps(doc, separators=(",", ":"))


# ---- text ---------------------------------------------------------------------------------

# Signal codes by name (<signal.h>, Linux): those every signal can carry, then per signal.
_ANY_CODE = {0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER", -3: "SI_MESGQ",
             -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL"}
_SIGNAL_CODES = {
    11: ("SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR", "SEGV_ACCADI",
         "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR"),
    7: ("BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR", "BUS_MCEERR_AO"),
    4: ("ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG",
        "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"),
    8: ("FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES",
        "FPE_FLTINV", "FPE_FLTSUB"),
    5: ("TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT"),
    17: ("CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED",
         "CLD_CONTINUED"),
}


def describe_signal(signal):
    """A signal record as the CLI's text says it: "SIGSEGV, SEGV_MAPERR at 0x0"."""
    text = signal["name"] or "SIG%d" % signal["number"]
    code = signal.get("code")
    if code is not None:
        names = _SIGNAL_CODES.get(signal["number"], ())
        name = _ANY_CODE.get(code) or (names[code - 1] if 0 < code <= len(names) else None)
        text += ", " + (name or "code %d" % code)
    if signal.get("address") is not None:
        text += " at " + signal["address"]
    return text


def thread_header(tid, crashing=False, signal=None, name=None):
    """``Thread 4242 "name" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):`` as the CLI writes it."""
    text = "Thread %d" % tid
    if name:
        text += ' "%s"' % name
    if crashing and signal is not None:
        text += " (crashed: %s)" % describe_signal(signal)
    return text + ":"


def frame_line(frame, index, symbol_of=None):
    """A frame in GDB's bt look: ``#3  0x000055d4... in check () from /opt/app/bin/server``;
    ``#2  <signal handler called>`` for a signal trampoline."""
    number = "#%-3d" % index
    if not number.endswith(" "):
        number += " "
    if frame.signal_trampoline:
        text = number + "<signal handler called>"
    else:
        sym = _symbol(frame, symbol_of)
        regs = getattr(frame, "regs", None)
        text = number + "%s in %s ()" % (padded_address(frame.pc, regs.arch if regs else None),
                                         sym[0] if sym else "??")
        module = frame.module
        if module is not None:
            text += " from " + module.path
    if frame.source in _GUESSED_SOURCES:
        text += " [%s]" % frame.source
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
    """The closing line of a walk that did not reach the outermost frame, else None:
    ``Backtrace stopped: memory_fault: <detail>`` (``max_frames`` too, as the CLI says)."""
    if backtrace.stop == "outermost":
        return None
    reason = "Backtrace stopped: " + backtrace.stop
    if backtrace.detail:
        reason += ": " + backtrace.detail
    return reason


def format_text(backtrace, full=False, regnames=None, symbol_of=None):
    """The whole backtrace as bt-like text (a list of lines)."""
    lines = []
    for i, frame in enumerate(backtrace.frames):
        lines.append(frame_line(frame, i, symbol_of))
        if full:
            lines.append(frame_detail(frame, regnames))
    end = stop_line(backtrace)
    if end:
        lines.append(end)
    return lines
