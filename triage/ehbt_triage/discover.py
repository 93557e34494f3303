# SPDX-License-Identifier: Apache-2.0
"""Which files to analyse: the PATH arguments, directories searched recursively.

A file is a core when it starts with an ELF header whose e_type is ET_CORE (4), read in the
byte order the header declares. Inside a directory, anything else (executables, JSON, text)
is skipped with a note. A file named explicitly on the command line that is not a core is
not skipped silently: it becomes a failed entry ("not an ELF core: ..."), because the user
asked for it.
"""

import os
import struct

ET_CORE = 4
_ELF_MAGIC = b"\x7fELF"


def elf_kind(path):
    """(True, '') for an ELF core, else (False, why not)."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError as e:
        return False, "unreadable: %s" % (e.strerror or e)
    if len(head) < 18:
        return False, "not an ELF core: %d bytes only" % len(head)
    if head[:4] != _ELF_MAGIC:
        return False, "not an ELF core: no ELF magic"
    order = {1: "<", 2: ">"}.get(head[5])
    if order is None:
        return False, "not an ELF core: bad EI_DATA %d" % head[5]
    (e_type,) = struct.unpack(order + "H", head[16:18])
    if e_type != ET_CORE:
        return False, "not an ELF core: e_type %d" % e_type
    return True, ""


class Discovery:
    """cores: [path] in a stable order; rejected: [(path, reason)] named explicitly but not
    cores; skipped: [(path, reason)] inside directories; missing: [path] that do not exist."""

    def __init__(self):
        self.cores = []
        self.rejected = []
        self.skipped = []
        self.missing = []


def discover(paths):
    found = Discovery()
    seen = set()

    def add(path, explicit):
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        ok, why = elf_kind(path)
        if ok:
            found.cores.append(path)
        elif explicit:
            found.rejected.append((path, why))
        else:
            found.skipped.append((path, why))

    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p, onerror=lambda e: found.skipped.append(
                    (e.filename, "unreadable directory: %s" % e.strerror))):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if os.path.isfile(full):  # symlinked files too; realpath dedupes
                        add(full, explicit=False)
        elif os.path.exists(p):
            add(p, explicit=True)
        else:
            found.missing.append(p)
    return found
