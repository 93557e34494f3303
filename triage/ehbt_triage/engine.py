# SPDX-License-Identifier: Apache-2.0
"""The one adapter between ehbt-triage and the engine: a core in, an ehbt-backtrace/1 dict out.

In-process (``import ehbt``) is preferred: a worker process keeps one ``ehbt.ImageStore`` for
its whole life, so every library of a batch of cores from one build is parsed once per worker
(images are keyed by path + build-id inside the store). Only when the package cannot be
imported does this run the ``ehbt`` CLI (``ehbt core CORE --json --all-threads``) instead.

EHBT_TRIAGE_ENGINE=python|cli forces one of the two (tests use it); EHBT_BIN names the CLI.
"""

import os
import sys

# json, shutil, subprocess, ctypes and signal are imported where the CLI fallback uses them:
# the in-process path does not need them, and every run pays for what it imports at start.


class AnalysisError(Exception):
    """The core is unusable: one line saying why (the engine's own words where it has them)."""


def reason_without_core(message, paths):
    """The engine's words on why a core is unusable, as the reason of a failed core: its first
    line, without the "ehbt: " the CLI puts first or the "CORE: " the engine starts with (the
    core's path is beside the reason wherever a reason is shown)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if text.startswith("ehbt: "):
        text = text[len("ehbt: "):]
    for p in sorted(set(paths), key=len, reverse=True):
        if p and text.startswith(p + ": "):
            text = text[len(p) + 2:]
            break
    return text or "unusable core"


_ehbt = None  # the imported package, once imported
_store = None  # the worker's ehbt.ImageStore, shared by every core it analyses
_store_caps = {}  # its ImageStore(max_images=..., max_bytes=...) arguments
_import_error = None


def _import_package():
    """The ehbt package, or None (and the reason kept in _import_error)."""
    global _ehbt, _import_error
    if _ehbt is None and _import_error is None:
        try:
            import ehbt  # noqa: WPS433 (optional dependency)

            if not hasattr(ehbt, "target_report"):
                raise ImportError("the ehbt package has no report layer (too old)")
            _ehbt = ehbt
        except Exception as e:  # ImportError, or a broken extension
            _import_error = "%s: %s" % (type(e).__name__, e)
    return _ehbt


def package():
    """The ehbt package when it can be imported, else None (the CLI fallback)."""
    return _import_package()


def mode():
    """'python' or 'cli': which path analyze_core takes in this process."""
    forced = os.environ.get("EHBT_TRIAGE_ENGINE", "auto")
    if forced == "cli":
        return "cli"
    if _import_package() is not None:
        return "python"
    if forced == "python":
        raise AnalysisError("the ehbt Python package is not importable (%s)" % _import_error)
    return "cli"


def describe():
    """One line for the report: which engine is used and how."""
    m = mode()
    if m == "python":
        return "ehbt Python package (in-process, shared ImageStore) from %s" % os.path.dirname(
            _ehbt.__file__)
    reason = " (package unavailable: %s)" % _import_error if _import_error else ""
    return "ehbt CLI %s%s" % (find_cli() or "(not found)", reason)


def store_size():
    """How many images the worker's store holds (None in CLI mode)."""
    return len(_store) if _store is not None else None


def set_store_caps(max_images=None, max_bytes=None):
    """Bounds the worker's image store: a least-recently-used cache of at most `max_images`
    images and `max_bytes` bytes of their files (None: the engine's default, Limits'
    max_stored_images and max_stored_image_bytes). A resident `watch` sees new binaries for
    weeks (every upgrade brings new builds): past a cap the image used longest ago is let go,
    and the images the cores of the moment need stay parsed. A store made earlier is dropped,
    the next core makes one with these caps."""
    global _store, _store_caps
    _store_caps = {k: v for k, v in (("max_images", max_images), ("max_bytes", max_bytes))
                   if v is not None}
    _store = None


def analyze_core(path, sysroots, exe=None, timeout=None, debug_dirs=(), debuginfod=False,
                 name=None):
    """The ehbt-backtrace/1 document of the core at `path`, every thread unwound, with the
    engine's warnings (``warnings``: [{"kind", "message", ...}]).

    `name` is the core as the user named it, when `path` is a plain copy of it (a
    decompressed core): the document's "core" and any error say `name`. Raises AnalysisError
    when the core cannot be used at all. `timeout` bounds the CLI fallback; the in-process
    path is bounded by the worker's caller, which kills it.
    """
    name = name or path
    try:
        if mode() == "python":
            doc = _analyze_in_process(path, list(sysroots), exe, list(debug_dirs), debuginfod)
        else:
            doc = _analyze_with_cli(path, list(sysroots), exe, timeout, list(debug_dirs),
                                    debuginfod)
    except AnalysisError as e:
        text = reason_without_core(str(e), (path, name))
        raise AnalysisError(text.replace(path, name)) from None
    doc["core"] = name
    return doc


def _analyze_in_process(path, sysroots, exe, debug_dirs, debuginfod):
    global _store
    ehbt = _ehbt
    if _store is None:
        _store = ehbt.ImageStore(**_store_caps)
    extra = {}
    if debug_dirs:
        extra["debug_dirs"] = debug_dirs
    if debuginfod:
        extra["debuginfod"] = True
    try:
        target = ehbt.open_core(path, sysroots, exe or "", store=_store, **extra)
    except ehbt.Error as e:
        raise AnalysisError(str(e) or "unusable core") from None
    try:
        # The engine's own report, as `ehbt core --json --all-threads` writes it: every thread
        # unwound and every frame named in C++ without the GIL, then built as a dict from the
        # report layer's document events (no JSON text in between).
        return ehbt.target_report(target, threads="all", core=path).to_dict()
    finally:
        target.close()


def find_cli():
    """The ehbt binary: $EHBT_BIN, beside this tool when installed, in a build tree named by
    PYTHONPATH (<build>/engine/python -> <build>/engine/tools/ehbt), then PATH."""
    env = os.environ.get("EHBT_BIN")
    if env:
        return env
    candidates = []
    here = os.path.dirname(os.path.abspath(sys.argv[0] or "."))
    candidates.append(os.path.join(here, "ehbt"))
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            build = os.path.dirname(os.path.dirname(os.path.abspath(entry)))
            candidates.append(os.path.join(build, "engine", "tools", "ehbt"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    import shutil

    return shutil.which("ehbt")


def _die_with_parent_fn():
    """For the CLI child: a preexec_fn that makes it die when the worker dies (a worker killed
    at its deadline must not leave an ehbt process running). Built before the fork, so the
    child only calls prctl and imports nothing."""
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    return die_with_parent


def _analyze_with_cli(path, sysroots, exe, timeout, debug_dirs=(), debuginfod=False):
    import json
    import subprocess

    cli = find_cli()
    if not cli:
        raise AnalysisError("no ehbt binary was found (set EHBT_BIN)")
    cmd = [cli, "core", path, "--json", "--all-threads"]
    for s in sysroots:
        cmd += ["--sysroot", s]
    for d in debug_dirs:
        cmd += ["--debug-dir", d]
    if debuginfod:
        cmd.append("--debuginfod")
    if exe:
        cmd += ["--exe", exe]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=timeout,
                              preexec_fn=_die_with_parent_fn())
    except subprocess.TimeoutExpired:
        raise AnalysisError("timed out after %gs" % timeout) from None
    except OSError as e:
        raise AnalysisError("cannot run %s: %s" % (cli, e)) from None
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode < 0:
        raise AnalysisError("ehbt CLI killed by signal %d" % -proc.returncode)
    if proc.returncode not in (0, 1):
        raise AnalysisError(err[-1] if err else "ehbt exited %d" % proc.returncode)
    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        raise AnalysisError("ehbt printed no JSON document (%s)" % e) from None
    if not isinstance(doc, dict) or doc.get("format") != "ehbt-backtrace/1":
        raise AnalysisError("ehbt printed an unexpected document")
    # The same document as the in-process path: the CLI's JSON carries the warnings.
    doc.setdefault("warnings", [])
    return doc
