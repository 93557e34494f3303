# SPDX-License-Identifier: Apache-2.0
"""Deprecated: kept for the plugins until they call ehbt.Report.

The report (text, ``ehbt-backtrace/1``, signal and register names) is the engine's, in C++
(``ehbt/report.hpp``), bound as ``ehbt.Report`` and ``ehbt.target_report``. The functions here
keep the signatures the GDB and LLDB plugins call and compute everything through that
binding: no table, no name and no layout of their own.
"""

import json

from . import _ehbt

FORMAT = "ehbt-backtrace/1"

# Stop reasons after which a walk counts as complete (the CLI's exit status 0).
COMPLETE_STOPS = _ehbt.STOP_REASONS[:2]  # ("outermost", "max_frames")


def hexaddr(value):
    """0x-prefixed lowercase hex (the document's spelling of an address), or None."""
    return None if value is None else "0x%x" % value


def padded_address(value, arch):
    """A frame address as GDB and the CLI print it (ehbt.padded_address)."""
    return _ehbt.padded_address(value, arch)


def _backtrace_arch(backtrace):
    frames = backtrace.frames
    return frames[0].regs.arch if frames else "x86_64"


def _address(signal):
    address = signal.get("address")
    return int(address, 16) if isinstance(address, str) else address


def _sender_args(sender):
    """set_signal's sender_pid/sender_uid from a record's "sender" ({"pid", "uid"} or None)."""
    if not sender:
        return {}
    return {"sender_pid": sender["pid"], "sender_uid": sender["uid"]}


def _report(arch="x86_64", signal=None, **header):
    report = _ehbt.Report(arch, **header)
    if signal is not None:
        report.set_signal(signal["number"], signal.get("code"), _address(signal),
                          **_sender_args(signal.get("sender")))
    return report


def signal_record(number, code=None, address=None, sender=None):
    """The signal object of the document, or None when there was no signal. `sender`: the
    {"pid", "uid"} of a process that sent it (kept only where the code says one did)."""
    if not number:
        return None
    report = _ehbt.Report("x86_64")
    report.set_signal(int(number), None if code is None else int(code), address,
                      **_sender_args(sender))
    return report.to_dict()["signal"]


def target_signal(target):
    """The signal record of an ehbt.Target, or None."""
    sig = target.signal
    if sig is None:
        return None
    sender = {"pid": sig.sender.pid, "uid": sig.sender.uid} if sig.sender else None
    return signal_record(sig.number, sig.code, sig.address, sender)


def thread_record(tid, backtrace, crashing=False, name=None, symbol_of=None):
    """One thread of the document (ehbt.Report.add_thread). `name`, when given, is kept under
    "name" (the CLI's document has no such key)."""
    report = _ehbt.Report(_backtrace_arch(backtrace))
    report.add_thread(int(tid), backtrace, crashing=bool(crashing), symbol_of=symbol_of)
    record = report.to_dict()["threads"][0]
    if name:
        record["name"] = name
    return record


def document(arch, threads, modules=(), executable=None, core=None, signal=None, pid=None,
             warnings=None, **extra):
    """The whole document around thread_record()s: a live process is named by "pid", a core
    by "core" (ehbt.Report's JSON, keys in the CLI's order)."""
    report = _report(arch, signal, core=None if pid else core, pid=pid or None,
                     executable=executable)
    report.set_modules(list(modules))
    for w in warnings or ():
        report.add_warning(w)
    doc = report.to_dict()
    doc["threads"] = list(threads)
    doc.update(extra)
    return doc


def target_document(target, threads="crashing", options=None, limits=None, core=None):
    """The document for an ehbt.Target: ehbt.target_report(...).to_dict()."""
    return _ehbt.target_report(target, threads, options, limits, core).to_dict()


def dumps(doc):
    """A document as the debugger front ends print it: one compact line (the separators of
    ehbt.Report.json(compact=True))."""
    return json.dumps(doc, separators=(",", ":"))


def describe_signal(signal):
    """A signal record as the text says it: "SIGSEGV, SEGV_MAPERR at 0x0"."""
    return _ehbt.describe_signal(signal["number"], signal.get("code"), _address(signal),
                                 **_sender_args(signal.get("sender")))


def thread_header(tid, crashing=False, signal=None, name=None):
    """``Thread 4242 "name" (crashed: SIGSEGV, SEGV_MAPERR at 0x0):``"""
    report = _report(signal=signal)
    report.add_thread(int(tid), None, crashing=bool(crashing), name=name or "")
    return report.threads[0].header()


def stop_line(backtrace):
    """``Backtrace stopped: memory_fault: <detail>``, or None after an outermost frame."""
    report = _ehbt.Report(_backtrace_arch(backtrace))
    report.add_thread(0, backtrace)
    return report.threads[0].stop_line()


def format_text(backtrace, full=False, regnames=None, symbol_of=None):
    """The frame lines (and, full, each frame's detail lines) and the stop line of one walk, as
    a list of lines. The registers shown by `full` are the engine's general registers (the
    names `regnames` held)."""
    report = _ehbt.Report(_backtrace_arch(backtrace))
    report.add_thread(0, backtrace, symbol_of=symbol_of)
    return report.threads[0].text(header=False, full=full).splitlines()
