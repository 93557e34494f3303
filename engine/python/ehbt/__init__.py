# SPDX-License-Identifier: Apache-2.0
"""ehbt: backtraces from .eh_frame for cores and live processes.

The engine's API comes from the extension module ``ehbt._ehbt`` (re-exported here), the
backtrace report included: ``ehbt.Report`` / ``ehbt.target_report`` render the text and the
``ehbt-backtrace/1`` document exactly as the ``ehbt`` CLI prints them, and the names they use
(``describe_signal``, ``signal_code_name``, ``register_name``, ``general_registers``,
``Arch.from_name`` for debuggers' architecture names) come from the same C++ tables.

The debugger plugins (``ehbt.frontend``) and ehbt-triage print what ``ehbt.Report`` renders;
no Python module keeps a format, a signal table or a register table of its own.

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
    ContentKeyJob,
    Error,
    Frame,
    Image,
    ImageStore,
    Limits,
    Module,
    ModuleSet,
    RegisterSet,
    Report,
    ReportFrame,
    ReportThread,
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
    describe_signal,
    general_registers,
    open_core,
    padded_address,
    register_aliases,
    register_name,
    signal_code_name,
    signal_has_fault_address,
    signal_name,
    target_report,
)

__all__ = [
    "FRAME_SOURCES", "STOP_REASONS", "Arch", "ArchInfo", "Backtrace", "ContentKeyJob", "Error",
    "Frame", "Image", "ImageStore", "Limits", "Module", "ModuleSet", "RegisterSet", "Report", "ReportFrame",
    "ReportThread", "Segment", "Signal", "StepResult", "Symbol", "Target", "Thread",
    "UnwindOptions", "Unwinder", "attach_process", "content_key", "describe_signal",
    "general_registers", "open_core", "padded_address", "register_aliases", "register_name",
    "signal_code_name", "signal_has_fault_address", "signal_name", "target_report",
]
# ehbt.Warning (a target's warnings) is left out of __all__: a star import must not shadow
# the builtin Warning class.

FORMAT = "ehbt-backtrace/1"


def unwind(regs, memory, modules=None, options=None, limits=None):
    """One-call walk: ``Unwinder(limits).unwind(regs, memory, modules, options)``."""
    return Unwinder(limits).unwind(regs, memory, modules, options)


from ._version import __version__  # noqa: E402,F401
