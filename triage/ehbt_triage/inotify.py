# SPDX-License-Identifier: Apache-2.0
"""Linux inotify through ctypes on libc: what `ehbt-triage watch` needs (inotify_init1,
inotify_add_watch, inotify_rm_watch and the event records read from the descriptor), without
a package from outside the standard library.

The descriptor is non-blocking and close-on-exec (never inherited by a worker's tools); the
caller polls it (forked.wait takes it as a file descriptor) and calls read_events() when it is
readable. Each event is (wd, mask, cookie, name): name is the entry's name inside the watched
directory (bytes decoded with the file-system encoding, '' for an event on the directory
itself).
"""

import ctypes
import errno
import os
import struct

# <sys/inotify.h>
IN_ACCESS = 0x00000001
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_CLOSE_NOWRITE = 0x00000010
IN_OPEN = 0x00000020
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

IN_CLOEXEC = 0o2000000
IN_NONBLOCK = 0o4000

_EVENT = struct.Struct("iIII")  # struct inotify_event without its name


class Inotify:
    def __init__(self):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.inotify_init1.argtypes = [ctypes.c_int]
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, "inotify_init1: %s" % os.strerror(e))
        self.fd = fd

    def fileno(self):
        return self.fd

    def add_watch(self, path, mask):
        """The watch descriptor of `path` (the same one again for a path already watched)."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
        return wd

    def rm_watch(self, wd):
        if self._libc.inotify_rm_watch(self.fd, wd) < 0:
            return ctypes.get_errno()
        return 0

    def read_events(self, size=1 << 16):
        """Every event queued now ([] when none)."""
        out = []
        while True:
            try:
                data = os.read(self.fd, size)
            except BlockingIOError:
                return out
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                raise
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, cookie, length = _EVENT.unpack_from(data, pos)
                pos += _EVENT.size
                name = data[pos:pos + length].split(b"\0", 1)[0]
                pos += length
                out.append((wd, mask, cookie, os.fsdecode(name)))
            if len(data) < size - 4096:  # a short read: the queue is empty now
                return out

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
