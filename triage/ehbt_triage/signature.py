# SPDX-License-Identifier: Apache-2.0
"""Crash signatures: which frames of the crashing thread name a crash, and how they are spelled.

The rule (kept in one place so the report, the store and the docs agree):

1. The crashing thread is the one marked ``crashing`` in the ehbt-backtrace/1 document, else
   the first thread.
2. Every frame gets a label: its symbol when the engine found one -- without an
   ``@VERSION``/``@@VERSION`` suffix (``__libc_start_main@@GLIBC_2.34`` reads
   ``__libc_start_main``; ``NAME@plt`` stays) and without the suffixes compilers give their
   copies of a function (``.cold``, ``.constprop.N``, ``.isra.N``, ``.part.N``,
   ``.lto_priv.N``, ``.clone.N``, ``.llvm.N``, C++'s `` [clone .cold]``, and Go's
   ``.abi0``/``.abiinternal`` wrappers), so
   ``parse.constprop.0.isra.0`` reads ``parse`` -- else ``<module basename>+0x<module_offset>``
   (an offset in the module's own ELF address space, so the label does not move with ASLR),
   else ``<unknown>`` for a pc outside every module (``0x0`` .. ``0xfff`` are kept as they
   are: a jump through a null pointer is stable).
3. From the top (frame 0), the leading run of crash-reporting frames is dropped: frames whose
   label matches the skip list's [crash-reporting] patterns, and, between them, frames without
   a symbol in a runtime library (libc, libpthread, ld.so, libstdc++, libgcc_s) or in the
   module of a skip-listed frame of the same run -- inside ``pthread_kill`` or ``abort``
   where the library has no symbol for its internal function -- and signal trampolines (a
   frame whose caller was found through its signal frame: Go's handler re-raising under qemu,
   whose restorer page is in no module). The run ends at its last
   skip-listed frame: an unnamed frame that no skip-listed frame follows stays. A skip-listed
   frame further down stays. If every frame matches, none is dropped.
4. Frames that start a process or thread (the [process-start] patterns: ``_start``,
   ``__libc_start_main``, ``start_thread``, ``clone3`` ...) end the stack: they and the frames
   below them are dropped (unless nothing would be left). So are the frames below ``main``:
   its caller is the C runtime's start code, also where libc has no symbol for it.
5. The next ``top`` labels (default 5) are joined with `` | ``. When none of them comes from a
   symbol, the signature is *unreliable*: module offsets say little across builds and none of
   them names the crash, so it is written ``?EXE/ARCH: label | label`` (EXE the executable's
   basename, or ``?`` when unknown; a frame outside every module as ``<unknown>@0xPC``) and
   marked unreliable in the store, the JSONL and the report -- two crashes of different
   programs or architectures never share it.
6. Unless the signal is SIGABRT (the skipped frames already say "abort"), the signal name is
   put in front, followed by a space: ``SIGSEGV sent`` when a process sent it (si_code <= 0:
   ``kill``, ``tgkill``, ``sigqueue``; its siginfo holds the sender's pid, not an address, so
   no address is read and two senders share a bucket), ``SIGSEGV@0x0`` when the fault address
   lies in the null page (< 4096), else the plain name (``SIGSEGV``, ``SIGBUS``, ...). No
   signal (a live process, a gcore snapshot): nothing.

Signature version 2 (SIGNATURE_VERSION; docs/triage.md): the calls inlined at a frame's pc
(the document's ``inlined``, from debug info) are frames of their own, innermost first and
before the frame they were inlined into, as GDB numbers them and as Socorro signs them; rules
2-5 then apply to that list (an inlined call's label is its function's name). Version 1
(stores made before versions existed, which keep it) uses the physical frames only. Without
debug info versions 1 and 2 give the same signature.

Signature version 3: labels also drop the parts of a name that a build, not the code, decides
(rule 2): Rust's legacy hash element (``rust_inline::main::h140949989dbd9146`` reads
``rust_inline::main``; it hashes the crate's metadata, which changes with the compiler and
the dependency versions) and cgo's per-package prefix (``_cgo_3c1e6f0a8b2d_Cfunc_cfun1`` reads
``_cgo_Cfunc_cfun1``, ``_cgoexp_<hex>_`` likewise; cgo hashes the package's file names and
contents into it, so one crash rebuilt elsewhere or after an unrelated edit signed
differently). Otherwise it equals version 2.

Each frame also has a stable key ``<build-id>+0x<module_offset>`` (the module's basename when
it has no build-id) that identifies the instruction across builds' file names and ASLR.
"""

import os
import re
from functools import lru_cache
from operator import methodcaller

from .skipmatch import SkipMatcher

# The signature format: 2 counts inlined calls as frames, 1 does not; 3 also leaves out of a
# label the hashes a build puts into Rust and cgo names. A store records the version its
# buckets were made with and keeps it (schema.SIGNATURE_VERSION_SQL).
SIGNATURE_VERSION = 3
SIGNATURE_VERSIONS = (1, 2, 3)
DEFAULT_TOP = 5
NULL_PAGE = 4096
UNKNOWN = "<unknown>"
NO_FRAMES = "<no frames>"
SEPARATOR = " | "
_MEMO_CAP = 4096  # labels whose skip-list answers a Signer remembers
_SKIPLIST_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skiplist.txt")


CRASH_REPORTING = "crash-reporting"
PROCESS_START = "process-start"
_RUNTIME_MODULE = re.compile(r"(libc|libpthread|libstdc\+\+|libgcc_s|ld-linux[-.a-z0-9_]*|ld|"
                             r"libc\.musl-[a-z0-9_]+|ld-musl-[a-z0-9_]+)([-.].*)?\.so(\.[0-9.]+)?")
_COMPILER_SUFFIX = re.compile(
    r"(?:\.(?:cold|constprop|isra|part|lto_priv|clone|llvm|localalias|specialized|abi0|"
    r"abiinternal)"
    r"(?:\.[0-9]+)*)+$")
_CLONE_SUFFIX = re.compile(r"(?: \[clone \.[^\]]*\])+$")
# Version 3: the hash element ending a legacy-mangled Rust name, and cgo's 12-digit package
# hash after `_cgo_`/`_cgoexp_` (at the start or after the Go package's dot).
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_CGO_HASH = re.compile(r"(^|\.)(_cgo(?:exp)?_)[0-9a-f]{12}_")


def load_skiplist(path=_SKIPLIST_FILE, section=CRASH_REPORTING):
    """The patterns of one section of a skip-list file: one regex per line, '#' comments and
    blanks ignored; ``[NAME]`` starts section NAME (lines before any header belong to
    [crash-reporting])."""
    patterns = []
    current = CRASH_REPORTING
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text.startswith("[") and text.endswith("]"):
                current = text[1:-1].strip()
            elif current == section:
                patterns.append(text)
    return patterns


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


# normalise and bare_name are asked the same symbols core after core (one build's functions):
# each answer is remembered (up to _MEMO_CAP), not made again by its regexes -- half the
# signing time of a small fixture core (35 -> 18 us).
@lru_cache(maxsize=_MEMO_CAP)
def normalise(symbol, version=SIGNATURE_VERSION):
    """The symbol as a signature spells it: no @VERSION, no compiler copy suffix
    (``f.constprop.0.isra.0``, ``f.cold``, ``ns::f(int) [clone .cold]`` -> ``f``/``ns::f(int)``);
    from version 3 no Rust hash element and no cgo package hash."""
    text = strip_version(symbol)
    if text.endswith("@plt"):
        return text
    text = _CLONE_SUFFIX.sub("", text)
    stripped = _COMPILER_SUFFIX.sub("", text) or text
    if version >= 3:
        stripped = _CGO_HASH.sub(r"\1\2", _RUST_HASH.sub("", stripped)) or stripped
    return stripped


@lru_cache(maxsize=_MEMO_CAP)
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


def frame_label(frame, version=SIGNATURE_VERSION):
    """The frame as the signature spells it (rule 2) in signature version `version`."""
    symbol = frame.get("symbol")
    if symbol:
        return normalise(symbol, version)
    module = frame.get("module")
    offset = _hex(frame.get("module_offset"))
    if module and offset is not None:
        return "%s+0x%x" % (os.path.basename(module), offset)
    pc = _hex(frame.get("pc"))
    if pc is not None and pc < NULL_PAGE:
        return "0x%x" % pc
    return UNKNOWN


_INLINED = methodcaller("get", "inlined")


def with_inlined(frames):
    """The frames as GDB shows them: before each frame, the calls inlined at its pc
    (innermost first), each as a frame dict of its own named by the inlined function, at the
    frame's pc and module offset, with ``inlined_into`` set to the frame's symbol. Frames
    without inlined calls are the same objects."""
    if not any(map(_INLINED, frames)):  # f.get("inlined") of each, without a Python loop
        return frames
    out = []
    for f in frames:
        for call in f.get("inlined") or ():
            out.append({"symbol": call.get("function") or None, "module": f.get("module"),
                        "module_offset": f.get("module_offset"), "pc": f.get("pc"),
                        "location": call.get("location"), "inlined_into": f.get("symbol"),
                        "index": f.get("index", f.get("idx"))})
        out.append(f)
    return out


class _Labels:
    """frame_label of each frame, made on first use: the sequence the rules index, iterate
    and slice like the list [frame_label(f) for f in frames]."""

    __slots__ = ("_frames", "_made", "_version")

    def __init__(self, frames, version):
        self._frames = frames
        self._made = [None] * len(frames)
        self._version = version

    def __len__(self):
        return len(self._frames)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self._frames)))]
        label = self._made[i]
        if label is None:
            label = self._made[i] = frame_label(self._frames[i], self._version)
        return label

    def __iter__(self):
        for i in range(len(self._frames)):
            yield self[i]


def frame_key(frame, build_ids):
    """The stable per-frame key ``build_id+0xOFFSET`` (basename when there is no build-id)."""
    module = frame.get("module")
    offset = _hex(frame.get("module_offset"))
    if not module or offset is None:
        return None
    bid = build_ids.get(module) or os.path.basename(module)
    return "%s+0x%x" % (bid, offset)


def _unknown_pc(frame):
    pc = _hex(frame.get("pc"))
    return "%s@0x%x" % (UNKNOWN, pc) if pc is not None else UNKNOWN


def _module_base(frame):
    module = frame.get("module") if frame else None
    return os.path.basename(module) if module else None


class Signer:
    """Computes signatures with one skip list and one frame count."""

    def __init__(self, top=DEFAULT_TOP, extra_skip=(), use_default=True,
                 version=SIGNATURE_VERSION):
        if top < 1:
            raise ValueError("--top must be at least 1")
        if version not in SIGNATURE_VERSIONS:
            raise ValueError("unknown signature version %r" % (version,))
        self.top = top
        # The store's signature version (run.py sets it from the store it writes to).
        self.version = version
        # The shipped patterns are known to compile (a test compiles each one); the user's
        # --skip patterns are compiled one by one, so that a bad one is named.
        shipped = load_skiplist() if use_default else []
        self.patterns = SkipMatcher(shipped + list(extra_skip), checked=shipped)
        shipped = load_skiplist(section=PROCESS_START) if use_default else []
        self.start_patterns = SkipMatcher(shipped, checked=shipped)
        # label -> answer: a batch's cores share most of their labels. Bounded by _MEMO_CAP.
        self._skip_memo, self._start_memo = {}, {}

    def __getstate__(self):
        # Pickled without what it remembered (a dask run sends the Signer with every task,
        # and helper.py finds a helper by the pickle's bytes).
        state = dict(self.__dict__)
        state["_skip_memo"], state["_start_memo"] = {}, {}
        return state

    @staticmethod
    def _matches(matcher, memo, label):
        """Whether a pattern fullmatches the label or its bare name (remembered)."""
        hit = memo.get(label)
        if hit is None:
            hit = matcher.fullmatch(label)
            if not hit:
                bare = bare_name(label)
                hit = bare != label and matcher.fullmatch(bare)
            if len(memo) >= _MEMO_CAP:
                memo.clear()
            memo[label] = hit
        return hit

    def skipped(self, label):
        """True when a crash-reporting pattern matches the label (whole label, or its bare
        name)."""
        return self._matches(self.patterns, self._skip_memo, label)

    def process_start(self, label):
        return self._matches(self.start_patterns, self._start_memo, label)

    def first_kept(self, labels, frames=None):
        """Index of the first label after the leading crash-reporting run (0 when all match).
        With `frames` (the frames the labels belong to), unnamed frames of a runtime library
        or of a skip-listed frame's module may sit inside the run (rule 3)."""
        last = -1
        skip_modules = set()
        for i, label in enumerate(labels):
            frame = frames[i] if frames is not None and i < len(frames) else None
            if self.skipped(label):
                last = i
                if _module_base(frame):
                    skip_modules.add(_module_base(frame))
                continue
            if (frame is not None and i + 1 < len(frames)
                    and frames[i + 1].get("source") == "signal"
                    and self._skip_module_follows(labels, frames, i) is not None):
                # The signal trampoline (the frame a sigreturn step leaves) between a handler
                # that re-raises and the re-raise: Go's runtime under qemu, whose restorer page
                # is in no module. Part of the run when skip-listed frames go on after it.
                continue
            if frame is not None and not frame.get("symbol") and _module_base(frame):
                base = _module_base(frame)
                later = self._skip_module_follows(labels, frames, i)
                if later and (_RUNTIME_MODULE.fullmatch(base) or base in skip_modules
                              or base == later):
                    continue  # inside the reporting machinery; kept if nothing skipped follows
            break
        start = last + 1
        return 0 if start >= len(labels) else start

    def _skip_module_follows(self, labels, frames, i):
        """The module basename of the next skip-listed frame after i in the leading run of
        skip-listed or unnamed frames ("" when it has no module), else None."""
        for j in range(i + 1, len(labels)):
            if self.skipped(labels[j]):
                return _module_base(frames[j]) or ""
            if frames[j].get("symbol"):
                return None
        return None

    def chosen(self, frames):
        """(labels, frames) the signature is made of (rules 2-5, before joining).

        Labels are made as the rules reach them (_Labels): the rules look at the leading
        reporting run and the `top` frames after it, never further -- a frame below those
        cannot change the signature (an end found there would leave `top` frames anyway). A
        stack overflow's 935 frames cost ~12 labels instead of 935 (most of a worker's
        Python time on such a core)."""
        labels = _Labels(frames, self.version)
        start = self.first_kept(labels, frames)
        end = len(labels)
        for i in range(start, min(len(labels), start + self.top)):
            if self.process_start(labels[i]):
                end = i
                break
            if bare_name(labels[i]) == "main":
                end = i + 1  # main's caller is the C runtime's start code, named or not
                break
        if end == start:  # the crash is in the start code itself: keep what there is
            end = len(labels)
        stop = min(end, start + self.top)
        return labels[start:stop], frames[start:stop]

    def signed_frames(self, frames):
        """The frames the rules apply to in this signature version: with the inlined calls
        as frames from version 2 on."""
        return with_inlined(frames) if self.version >= 2 else frames

    def frames_part(self, frames, executable=None, arch=None):
        return self._frames_part(frames, executable, arch)[0]

    def _frames_part(self, frames, executable, arch):
        if not frames:
            return NO_FRAMES, True
        labels, picked = self.chosen(self.signed_frames(frames))
        if any(f.get("symbol") for f in picked):
            return SEPARATOR.join(labels), False
        # Nothing names the crash: the program, its architecture, and where each pc lies --
        # an absolute pc for a frame outside every module (unstable under ASLR, but two
        # different crashes must not share a bucket because neither could be named).
        exact = [_unknown_pc(f) if label == UNKNOWN else label
                 for label, f in zip(labels, picked)]
        exe = os.path.basename(executable) if executable else "?"
        where = "%s/%s" % (exe, arch) if arch else exe
        return "?%s: %s" % (where, SEPARATOR.join(exact)), True

    def sign_with_trust(self, doc):
        """(signature, unreliable) of an ehbt-backtrace/1 document: unreliable when no frame
        of the signature has a symbol (rule 5)."""
        thread = crashing_thread(doc)
        frames = thread.get("frames", []) if thread else []
        text, unreliable = self._frames_part(frames, doc.get("executable"), doc.get("arch"))
        return signal_prefix(doc.get("signal")) + text, unreliable

    def sign(self, doc):
        """The signature of an ehbt-backtrace/1 document."""
        return self.sign_with_trust(doc)[0]


COMPLETE_STOPS = ("outermost", "max_frames")


def is_partial(stop_reason):
    """A crashing thread whose walk ended before the outermost frame (or the frame cap)."""
    return stop_reason is not None and stop_reason not in COMPLETE_STOPS


def missing_modules(doc):
    """Paths of the modules the engine could not find a file for, and the engine's warnings
    about missing or mismatched files: what makes a signature less than it could be."""
    # "[vdso]" and the like are mapped by the kernel and never have a file.
    missing = [m.get("path") for m in doc.get("modules") or []
               if not m.get("file") and not (m.get("path") or "[").startswith("[")]
    for w in doc.get("warnings") or []:
        kind = w.get("kind") if isinstance(w, dict) else None
        if kind and kind.startswith(("missing", "mismatch")) and w.get("path"):
            if w["path"] not in missing:
                missing.append(w["path"])
    return missing


def crashing_thread(doc):
    """The thread marked crashing, else the first, else None."""
    threads = doc.get("threads") or []
    for t in threads:
        if t.get("crashing"):
            return t
    return threads[0] if threads else None


def signal_prefix(signal):
    """'SIGSEGV@0x0 ', 'SIGSEGV sent ', 'SIGBUS ', or '' for SIGABRT and for no signal
    (rule 6)."""
    if not signal:
        return ""
    name = signal.get("name") or "SIG%s" % signal.get("number")
    if name == "SIGABRT":
        return ""
    code = signal.get("code")
    # SI_TIMER (-2) and SI_SIGIO (-5) are queued by the kernel, not sent by a process.
    if signal.get("sender") is not None or (isinstance(code, int) and code <= 0
                                             and code not in (-2, -5)):
        # Sent by a process: documents made before "sender" existed still carry the sender's
        # pid as "address"; the code says it is none.
        return name + " sent "
    addr = _hex(signal.get("address"))
    if addr is not None and addr < NULL_PAGE and name in ("SIGSEGV", "SIGBUS"):
        return "%s@0x0 " % name
    return name + " "
