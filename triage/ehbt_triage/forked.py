# SPDX-License-Identifier: Apache-2.0
"""Forked children and the pipes that carry pickled messages to and from them.

What workers.py needs of multiprocessing (a forked Process with a sentinel, a duplex Pipe,
connection.wait) in ~100 lines: importing multiprocessing and multiprocessing.connection
(tempfile, subprocess, shutil, socket ...) cost ~30 ms of every ehbt-triage run, a tenth of a
12-core batch.

Messages are marshal'ed (the interpreter's own format for its code objects: built in, so it
costs no import, and it loads the result dicts of tuples, lists and strings faster than pickle).
Anything marshal cannot write (an object of some other class) goes as a pickle, marked by its
first byte, so what may be sent is what multiprocessing allowed.

A Child's sentinel is the read end of a pipe whose write end only the child holds (as in
multiprocessing's fork start method): it becomes readable when the child exits, however it
exits. The parent closes the child's ends right after fork, so later children never hold them.
"""

import marshal
import os
import select
import signal
import struct
import sys

_LENGTH = struct.Struct("!Q")
_MARSHAL, _PICKLE = b"M", b"P"  # the first byte of a message: how the rest is encoded


class Channel:
    """One end of a pair of pipes: send(obj) / recv() of pickled objects, poll(), close().
    recv raises EOFError when the other end has gone; send raises OSError (BrokenPipeError)."""

    def __init__(self, read_fd, write_fd):
        self._r, self._w = read_fd, write_fd

    def fileno(self):
        return self._r

    def send(self, obj):
        try:
            data = _MARSHAL + marshal.dumps(obj)
        except ValueError:  # not a plain type (marshal says "unmarshallable object")
            import pickle

            data = _PICKLE + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_LENGTH.pack(len(data)) + data)
        while view:
            view = view[os.write(self._w, view):]

    def recv(self):
        (n,) = _LENGTH.unpack(self._read(_LENGTH.size))
        data = self._read(n)
        if data[:1] == _MARSHAL:
            return marshal.loads(memoryview(data)[1:])
        import pickle

        return pickle.loads(memoryview(data)[1:])

    def _read(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = os.readv(self._r, [view[got:]])
            if k == 0:
                raise EOFError("the other end has gone")
            got += k
        return buf

    def poll(self, timeout=0.0):
        """Whether something (a message, or the end) can be read without blocking."""
        return bool(wait([self._r], timeout))

    def close(self):
        for fd in (self._r, self._w):
            if fd is not None:
                os.close(fd)
        self._r = self._w = None


def wait(handles, timeout=None):
    """The handles (Channels or file descriptors) that are readable within `timeout`
    seconds (None: no limit), like multiprocessing.connection.wait."""
    poller = select.poll()
    by_fd = {}
    for h in handles:
        fd = h if isinstance(h, int) else h.fileno()
        by_fd[fd] = h
        poller.register(fd, select.POLLIN)
    ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    return [by_fd[fd] for fd, _ in poller.poll(ms)]


class Child:
    """target(channel, *args) run in a forked child; its exit code is 0 when target returns,
    1 when it raised (the traceback goes to stderr), -N when signal N killed it."""

    def __init__(self, target, args=()):
        down_r, down_w = os.pipe()  # parent -> child
        up_r, up_w = os.pipe()  # child -> parent
        sentinel_r, sentinel_w = os.pipe()  # (pipes are not inherited by programs run later)
        self.exitcode = None
        self.pid = os.fork()
        if self.pid == 0:  # the child
            os.close(down_w)
            os.close(up_r)
            os.close(sentinel_r)
            code = 1
            try:
                sys.stdin.close()  # a worker never reads the terminal (as multiprocessing)
                sys.stdin = open(os.devnull)
                target(Channel(down_r, up_w), *args)
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:
                        pass
                os._exit(code)
        os.close(down_r)
        os.close(up_w)
        os.close(sentinel_w)
        self.conn = Channel(up_r, down_w)
        self.sentinel = sentinel_r

    def is_alive(self):
        if self.exitcode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid == self.pid:
                self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode is None

    def kill(self):
        if self.exitcode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def join(self, timeout=None):
        """Waits up to `timeout` seconds for the child to exit (and reaps it)."""
        if self.exitcode is None and wait([self.sentinel], timeout):
            try:
                _, status = os.waitpid(self.pid, 0)
                self.exitcode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.exitcode = 0
        return self.exitcode

    def close(self):
        """Closes the parent's ends (after join or kill)."""
        self.conn.close()
        if self.sentinel is not None:
            os.close(self.sentinel)
            self.sentinel = None
