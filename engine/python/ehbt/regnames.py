# SPDX-License-Identifier: Apache-2.0
"""Debugger register names <-> DWARF register numbers, per architecture.

The DWARF numbers come from each psABI's register mapping (x86-64 psABI 3.6.2, i386 psABI
2.5 "DWARF Register Number Mapping", AAPCS64
DWARF for the Arm 64-bit Architecture, s390x ELF ABI supplement); the names are the ones GDB
and LLDB use. Only the general-purpose registers the unwinder needs are listed: floating-point
registers are not read or restored through this table.
"""

# name -> DWARF number; the program counter is not a DWARF column (RegisterSet.pc).
_X86_64 = {
    "rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
    **{"r%d" % n: n for n in range(8, 16)},
}
_I386 = {"eax": 0, "ecx": 1, "edx": 2, "ebx": 3, "esp": 4, "ebp": 5, "esi": 6, "edi": 7}
_AARCH64 = {**{"x%d" % n: n for n in range(31)}, "sp": 31}
_S390X = {"r%d" % n: n for n in range(16)}

_TABLES = {
    "x86_64": (_X86_64, "rip", "rsp"),
    "i386": (_I386, "eip", "esp"),
    "aarch64": (_AARCH64, "pc", "sp"),
    "s390x": (_S390X, "pswa", "r15"),
}

# Architecture names as debuggers spell them -> the engine's names.
_DEBUGGER_ARCH = {
    "i386:x86-64": "x86_64",
    "x86-64": "x86_64",
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "i386": "i386",
    "i486": "i386",
    "i586": "i386",
    "i686": "i386",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "s390:64-bit": "s390x",
    "s390x": "s390x",
}


def engine_arch(debugger_name):
    """The engine's architecture name for a debugger's ("i386:x86-64" -> "x86_64"), or None."""
    name = str(debugger_name).lower()
    if name in _DEBUGGER_ARCH:
        return _DEBUGGER_ARCH[name]
    if name.startswith("aarch64") or name.startswith("arm64"):
        return "aarch64"
    if name.startswith("s390"):
        return "s390x"
    if "x86-64" in name or "x86_64" in name:
        return "x86_64"
    if name.startswith("i386") or name.startswith("i686"):  # GDB's "i386:intel"; LLDB triples
        return "i386"
    return None


def general_registers(arch):
    """{name: DWARF number} of the registers read and restored for `arch` ("x86_64", ...)."""
    return dict(_TABLES[str(arch)][0])


def pc_name(arch):
    """The debugger's name of the program counter ("rip", "eip", "pc", "pswa")."""
    return _TABLES[str(arch)][1]


def pc_pseudo_names(arch):
    """GDB's pseudo registers that hold the program counter besides pc_name(arch): on s390x
    GDB unwinds "pc" (a pseudo register over pswa), so an unwinder supplies both."""
    return ("pc",) if str(arch) == "s390x" else ()


def sp_name(arch):
    """The debugger's name of the stack pointer ("rsp", "esp", "sp", "r15")."""
    return _TABLES[str(arch)][2]


def dwarf_names(arch):
    """{DWARF number: name}, the inverse of general_registers(arch)."""
    return {num: name for name, num in _TABLES[str(arch)][0].items()}
