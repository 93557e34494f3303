# SPDX-License-Identifier: Apache-2.0
"""Which files to analyse: the PATH arguments, directories searched recursively.

A file is a core when it starts with an ELF header whose e_type is ET_CORE (4), read in the
byte order the header declares. Inside a directory, anything else (executables, JSON, text)
is skipped with a note. A file named explicitly on the command line that is not a core is
not skipped silently: it becomes a failed entry ("not an ELF core: ..."), because the user
asked for it.

A minidump (a file starting with "MDMP": Crashpad, Breakpad, LLDB) is taken as a core too,
wherever it lies (Crashpad's database keeps them as completed/<uuid>.dmp, its .meta files
beside them are skipped as any other non-core file): the engine reads it like one.

A file compressed with zstd, xz, lz4 or gzip (told by its first bytes, as the engine tells
them) is taken as a core too: whether it holds one is known once it is decompressed (by the
worker, plain_core.py), and a compressed file that does not is a failed input.

A spool is not a tidy place, and the reader must never stall on it: everything is looked at
with lstat/stat first and only regular files are ever opened (a FIFO would block open() until
a writer came, a device could be a tape or a terminal). FIFOs, sockets, devices, dangling
symlinks, unreadable files and bzip2-compressed files (a format neither the engine nor
systemd-coredump uses) are failed inputs wherever they are found -- listed with their reason,
exit status 1 -- because each is something a user expected to be triaged, or a sign that the
spool is broken.
"""

import os
import stat
import struct

from .plain_core import compression_of

ET_CORE = 4
_ELF_MAGIC = b"\x7fELF"

_BZIP2 = b"BZh"
_MINIDUMP_MAGIC = b"MDMP"


def special_kind(mode):
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_head(path, size):
    """The first `size` bytes of a regular file. O_NONBLOCK is a safety net for the window
    between stat and open (the path replaced by a FIFO): such an open returns at once."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file any more")
        return os.read(fd, size)
    finally:
        os.close(fd)


def elf_kind(path):
    """(True, '' or the compression format) for an ELF core or a compressed file, else
    (False, why not)."""
    try:
        st = os.stat(path)
    except OSError as e:
        if os.path.islink(path):
            return False, "dangling symlink to %s" % os.readlink(path)
        return False, "unreadable: %s" % (e.strerror or e)
    special = special_kind(st.st_mode)
    if special:
        return False, "%s, not opened" % special
    try:
        head = read_head(path, 18)
    except OSError as e:
        return False, "unreadable: %s" % (e.strerror or e)
    fmt = compression_of(head)
    if fmt:
        return True, fmt
    if head.startswith(_MINIDUMP_MAGIC):
        return True, ""
    if head.startswith(_BZIP2):
        return False, "compressed core (bzip2): not a format ehbt reads; decompress it first"
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


def _is_plain_non_core(why):
    """A readable regular file that simply is not a core (skipped inside directories)."""
    return why.startswith("not an ELF core")


class Discovery:
    """cores: [path] in a stable order; rejected: [(path, reason)] failed inputs (named
    explicitly but not cores, or unusable wherever found); skipped: [(path, reason)] readable
    non-core files inside directories; missing: [path] named but not existing at all."""

    def __init__(self):
        self.cores = []
        self.compression = {}  # core path -> format, for compressed ones
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
            if why:
                found.compression[path] = why
        elif explicit or not _is_plain_non_core(why):
            found.rejected.append((path, why))
        else:
            found.skipped.append((path, why))

    def walk_error(e):
        found.rejected.append((e.filename, "unreadable directory: %s" % e.strerror))

    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p, onerror=walk_error):
                dirs.sort()
                # os.walk lists symlinks to directories among dirs without following them.
                for name in sorted(files):
                    add(os.path.join(root, name), explicit=False)
        elif os.path.lexists(p):
            add(p, explicit=True)
        else:
            found.missing.append(p)
    return found
