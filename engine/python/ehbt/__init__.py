# SPDX-License-Identifier: Apache-2.0
"""ehbt: backtraces from .eh_frame for cores and live processes.

The engine's API comes from the extension module ``ehbt._ehbt`` (re-exported here); the
package adds pure-Python helpers shared by the GDB and LLDB plugins and the triage tool:

- ``ehbt.report``: the ``ehbt-backtrace/1`` JSON document and bt-style text;
- ``ehbt.regnames``: debugger register names <-> DWARF register numbers per architecture.

Memory given to ``Unwinder.unwind`` is a callable ``read(addr, size) -> bytes``: a raised
exception, ``None`` or a short result is a fault (the walk stops with ``memory_fault``),
never a crash.
"""

from ._ehbt import (  # noqa: F401  (re-exported API)
    FRAME_SOURCES,
    STOP_REASONS,
    Arch,
    ArchInfo,
    Backtrace,
    Error,
    Frame,
    Image,
    ImageStore,
    Limits,
    Module,
    ModuleSet,
    RegisterSet,
    Segment,
    Signal,
    StepResult,
    Symbol,
    Target,
    Thread,
    UnwindOptions,
    Unwinder,
    Warning,
    attach_process,
    content_key,
    open_core,
    signal_name,
)

__all__ = [
    "FRAME_SOURCES", "STOP_REASONS", "Arch", "ArchInfo", "Backtrace", "Error", "Frame", "Image",
    "ImageStore", "Limits", "Module", "ModuleSet", "RegisterSet", "Segment", "Signal",
    "StepResult", "Symbol", "Target", "Thread", "UnwindOptions", "Unwinder", "attach_process",
    "content_key", "open_core", "signal_name",
]
# ehbt.Warning (a target's warnings) is left out of __all__: a star import must not shadow
# the builtin Warning class.

FORMAT = "ehbt-backtrace/1"


def unwind(regs, memory, modules=None, options=None, limits=None):
    """One-call walk: ``Unwinder(limits).unwind(regs, memory, modules, options)``."""
    return Unwinder(limits).unwind(regs, memory, modules, options)


from . import regnames, report  # noqa: E402,F401  (pure-Python helpers, after the API)
from ._version import __version__  # noqa: E402,F401
