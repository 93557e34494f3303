# SPDX-License-Identifier: Apache-2.0
"""Crash signatures: which frames of the crashing thread name a crash, and how they are spelled.

The rule (kept in one place so the report, the store and the docs agree):

1. The crashing thread is the one marked ``crashing`` in the ehbt-backtrace/1 document, else
   the first thread.
2. Every frame gets a label: its symbol (without an ``@VERSION``/``@@VERSION`` suffix, so
   ``__libc_start_main@@GLIBC_2.34`` reads ``__libc_start_main``) when the engine found one, else
   ``<module basename>+0x<module_offset>`` (an offset in the module's own ELF address space,
   so the label does not move with ASLR), else ``<unknown>`` for a pc outside every module
   (``0x0`` .. ``0xfff`` are kept as they are: a jump through a null pointer is stable).
3. From the top (frame 0), the leading run of frames whose label matches the skip list is
   dropped (see skiplist.txt for how a pattern matches). Only that leading run: a skip-listed
   frame further down stays. If every frame matches, none is dropped.
4. The next ``top`` labels (default 5) are joined with `` | ``.
5. Unless the signal is SIGABRT (the skipped frames already say "abort"), the signal name is
   put in front, followed by a space: ``SIGSEGV@0x0`` when the fault address lies in the
   null page (< 4096), else the plain name (``SIGSEGV``, ``SIGBUS``, ...). No signal: nothing.

Each frame also has a stable key ``<build-id>+0x<module_offset>`` (the module's basename when
it has no build-id) that identifies the instruction across builds' file names and ASLR.
"""

import os
import re

DEFAULT_TOP = 5
NULL_PAGE = 4096
UNKNOWN = "<unknown>"
NO_FRAMES = "<no frames>"
SEPARATOR = " | "
_SKIPLIST_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skiplist.txt")


def load_skiplist(path=_SKIPLIST_FILE):
    """The patterns of a skip-list file: one regex per line, '#' comments and blanks ignored."""
    patterns = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if text and not text.startswith("#"):
                patterns.append(text)
    return patterns


def compile_patterns(patterns):
    """re objects; raises re.error naming the bad pattern."""
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as e:
            raise re.error("bad skip pattern %r: %s" % (p, e)) from None
    return compiled


def _hex(value):
    """int from the document's "0x..." strings (None stays None)."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return int(str(value), 16)


def strip_version(symbol):
    """``pthread_kill@@GLIBC_2.34`` -> ``pthread_kill`` (a leading '@' is kept as it is).
    ``getppid@plt`` stays: a crash in the PLT stub is not a crash in the function."""
    if symbol.endswith("@plt"):
        return symbol
    at = symbol.find("@", 1)
    return symbol[:at] if at > 0 else symbol


def bare_name(symbol):
    """The symbol without a trailing C++ parameter list / qualifiers and without @VERSION:
    ``ns::f(int) const`` -> ``ns::f``; ``raise@@GLIBC_2.2.5`` -> ``raise``."""
    text = strip_version(symbol).rstrip()
    for qual in (" const", " volatile", " &&", " &"):
        while text.endswith(qual):
            text = text[: -len(qual)].rstrip()
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            if text[i] == ")":
                depth += 1
            elif text[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:  # "(anonymous namespace)" alone is a name, not a parameter list
                        return text[:i]
                    break
    return text


def module_names(doc):
    """{module path: build-id or None} from the document's module list."""
    return {m.get("path"): m.get("build_id") for m in doc.get("modules") or []}


def frame_label(frame):
    """The frame as the signature spells it (rule 2)."""
    symbol = frame.get("symbol")
    if symbol:
        return strip_version(symbol)
    module = frame.get("module")
    offset = _hex(frame.get("module_offset"))
    if module and offset is not None:
        return "%s+0x%x" % (os.path.basename(module), offset)
    pc = _hex(frame.get("pc"))
    if pc is not None and pc < NULL_PAGE:
        return "0x%x" % pc
    return UNKNOWN


def frame_key(frame, build_ids):
    """The stable per-frame key ``build_id+0xOFFSET`` (basename when there is no build-id)."""
    module = frame.get("module")
    offset = _hex(frame.get("module_offset"))
    if not module or offset is None:
        return None
    bid = build_ids.get(module) or os.path.basename(module)
    return "%s+0x%x" % (bid, offset)


class Signer:
    """Computes signatures with one skip list and one frame count."""

    def __init__(self, top=DEFAULT_TOP, extra_skip=(), use_default=True):
        if top < 1:
            raise ValueError("--top must be at least 1")
        self.top = top
        patterns = (load_skiplist() if use_default else []) + list(extra_skip)
        self.patterns = compile_patterns(patterns)

    def skipped(self, label):
        """True when a pattern matches the label (whole label, or its bare name)."""
        candidates = {label, bare_name(label)}
        return any(p.fullmatch(c) for p in self.patterns for c in candidates)

    def first_kept(self, labels):
        """Index of the first label after the leading skip-listed run (0 when all match)."""
        for i, label in enumerate(labels):
            if not self.skipped(label):
                return i
        return 0

    def frames_part(self, frames):
        labels = [frame_label(f) for f in frames]
        if not labels:
            return NO_FRAMES
        start = self.first_kept(labels)
        return SEPARATOR.join(labels[start:start + self.top])

    def sign(self, doc):
        """The signature of an ehbt-backtrace/1 document."""
        thread = crashing_thread(doc)
        frames = thread.get("frames", []) if thread else []
        return signal_prefix(doc.get("signal")) + self.frames_part(frames)


def crashing_thread(doc):
    """The thread marked crashing, else the first, else None."""
    threads = doc.get("threads") or []
    for t in threads:
        if t.get("crashing"):
            return t
    return threads[0] if threads else None


def signal_prefix(signal):
    """'SIGSEGV@0x0 ', 'SIGBUS ', or '' for SIGABRT and for no signal (rule 5)."""
    if not signal:
        return ""
    name = signal.get("name") or "SIG%s" % signal.get("number")
    if name == "SIGABRT":
        return ""
    addr = _hex(signal.get("address"))
    if addr is not None and addr < NULL_PAGE and name in ("SIGSEGV", "SIGBUS"):
        return "%s@0x0 " % name
    return name + " "
