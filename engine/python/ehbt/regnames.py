# SPDX-License-Identifier: Apache-2.0
"""Deprecated: kept for the plugins until they call ehbt.Report.

Debugger register names <-> DWARF register numbers, and debuggers' architecture names. The
tables are the engine's (``ehbt/report.hpp``: ``general_registers``, ``register_name``,
``arch_from_alias``), bound as ``ehbt.general_registers``, ``ehbt.register_name`` and
``ehbt.Arch.from_name``; these functions only keep the plugins' calls working.
"""

from . import _ehbt


def engine_arch(debugger_name):
    """The engine's architecture name for a debugger's ("i386:x86-64" -> "x86_64"), or None."""
    try:
        return str(_ehbt.Arch.from_name(str(debugger_name)))
    except ValueError:
        return None


def general_registers(arch):
    """{name: DWARF number} of the registers read and restored for `arch` ("x86_64", ...)."""
    return _ehbt.general_registers(str(arch))[0]


def pc_name(arch):
    """The debugger's name of the program counter ("rip", "eip", "pc", "pswa")."""
    return _ehbt.general_registers(str(arch))[1]


def pc_pseudo_names(arch):
    """GDB's pseudo registers that hold the program counter besides pc_name(arch): on s390x
    GDB unwinds "pc" (a pseudo register over pswa), so an unwinder supplies both."""
    return ("pc",) if str(arch) == "s390x" else ()


def sp_name(arch):
    """The debugger's name of the stack pointer ("rsp", "esp", "sp", "r15")."""
    return _ehbt.general_registers(str(arch))[2]


def dwarf_names(arch):
    """{DWARF number: name}, the inverse of general_registers(arch)."""
    return {num: name for name, num in general_registers(arch).items()}
