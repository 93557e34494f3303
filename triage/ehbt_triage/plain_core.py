# SPDX-License-Identifier: Apache-2.0
"""A compressed core (zstd, xz, lz4, gzip; told by its first bytes) as a plain one, once.

The content key of a core (content_hash.sparse_sha256) must be the key of the *decompressed*
core, so that a core and its .zst copy are one core. The engine decompresses a compressed
core itself, but into an anonymous file the Python binding does not hand out; asking it to
open the core and hashing the content separately would decompress every core twice. So the
worker decompresses it once, here, into an anonymous sparse temporary file (zero 64 KiB
blocks are seeked over, not written), hashes that file, and gives the engine the plain file
(``/proc/PID/fd/N``), which it maps without decompressing again.

The decompressors are the formats' own command-line tools (``zstd``, ``xz``, ``lz4``,
``gzip`` -- the ones systemd-coredump's formats come from), streaming into this process; the
same caps as the engine's apply (ehbt.Limits: logical size, data written, decoder memory).
The file disappears when it is closed, or with the worker when it is killed (it is never
linked into a directory).
"""

import os
import re

# The temporary file is written in blocks of this size; all-zero ones are seeked over (holes).
# The content key does not depend on it: holes and written zeros hash alike.
BLOCK = 1 << 16

# shutil, subprocess and tempfile are imported where a compressed core needs them: a batch of
# plain cores does not, and every run pays at start for what it imports.

# Magic numbers: the one table in ehbt-triage (discover.py uses it to accept a file as a core
# candidate). The engine tells formats by the same bytes (engine/src/core/compression.hpp),
# but the Python binding exposes no detection function to call instead.
FORMATS = ((b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"),
           (b"\x04\x22\x4d\x18", "lz4"), (b"\x1f\x8b", "gzip"))
_TOOLS = {"zstd": ["zstd", "-d", "-c", "-q"], "xz": ["xz", "-d", "-c", "-q", "-T1"],
          "lz4": ["lz4", "-d", "-c", "-q"], "gzip": ["gzip", "-d", "-c", "-q"]}
_RESERVE = 64 << 20  # free space left in the temporary directory, as the engine leaves it
_ZERO = bytes(BLOCK)


class DecompressError(Exception):
    """One line: why the compressed core could not be made plain."""


def compression_of(head):
    """'zstd', 'xz', 'lz4', 'gzip' or None for the first bytes of a file."""
    for magic, name in FORMATS:
        if head.startswith(magic):
            return name
    return None


def _caps():
    """(max logical bytes, max data bytes or 0, decoder memory) from the engine's Limits."""
    try:
        import ehbt

        limits = ehbt.Limits()
        return (limits.max_decompressed_bytes, limits.max_decompressed_disk_bytes,
                limits.max_decompressor_memory)
    except Exception:  # CLI mode: the engine's documented defaults
        return 1 << 40, 0, 512 << 20


def tool_available(fmt):
    import shutil

    return shutil.which(_TOOLS[fmt][0]) is not None


class PlainCore:
    """``path``: a file the engine can open as a plain ELF core (the input itself when it is
    not compressed); ``compression``: the format or None. Close it when done."""

    def __init__(self, path):
        self.original = path
        self.path = path
        self.compression = None
        self._file = None
        with open(path, "rb", buffering=0) as f:
            fmt = compression_of(f.read(6))
        if fmt is None:
            return
        self.compression = fmt
        if not tool_available(fmt):
            # The engine can still read it; only the content key is then the compressed
            # file's (a plain copy of the same core is not recognised as the same).
            self.keyed_compressed = True
            return
        import tempfile

        self._file = tempfile.TemporaryFile(prefix="ehbt-triage-core-")
        try:
            _decompress(path, fmt, self._file)
        except BaseException:
            self.close()
            raise
        # A path any process of this user can open while the file is open here (the CLI
        # fallback runs `ehbt` as a child).
        self.path = "/proc/%d/fd/%d" % (os.getpid(), self._file.fileno())

    keyed_compressed = False

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _decompress(path, fmt, out):
    import shutil
    import subprocess
    import tempfile

    max_bytes, max_disk, memory = _caps()
    cmd = list(_TOOLS[fmt])
    if fmt in ("zstd", "xz"):
        cmd.append("--memory=%d" % memory if fmt == "zstd" else "--memlimit=%d" % memory)
    try:
        free = shutil.disk_usage(os.path.dirname(os.path.realpath(
            "/proc/self/fd/%d" % out.fileno()))).free
    except OSError:
        free = None
    disk_cap = free - _RESERVE if free is not None else None
    if max_disk:
        disk_cap = max_disk if disk_cap is None else min(disk_cap, max_disk)
    with open(path, "rb") as src:
        try:
            proc = subprocess.Popen(cmd, stdin=src, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except OSError as e:
            raise DecompressError("cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
    size = written = 0
    fd = out.fileno()
    # One reused 1 MiB buffer, filled from the pipe and written out block by block at its
    # offset: no copy per block, and zero blocks are compared in place and never written.
    buf = bytearray(16 * BLOCK)
    view = memoryview(buf)
    try:
        eof = False
        while not eof:
            fill = 0
            while fill < len(buf):
                got = proc.stdout.readinto(view[fill:])
                if not got:
                    eof = True
                    break
                fill += got
            if size + fill > max_bytes:
                raise DecompressError("%s core larger than %d bytes decompressed "
                                      "(Limits.max_decompressed_bytes)" % (fmt, max_bytes))
            for off in range(0, fill, BLOCK):
                n = min(BLOCK, fill - off)
                if buf.startswith(_ZERO if n == BLOCK else _ZERO[:n], off, off + n):
                    continue
                if disk_cap is not None and written + n > disk_cap:
                    raise DecompressError("%s core needs more than %d bytes of data on disk "
                                          "in %s" % (fmt, disk_cap, tempfile.gettempdir()))
                os.pwrite(fd, view[off:off + n], size + off)
                written += n
            size += fill
        err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
        code = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if code != 0:
        why = tool_message(err) or "%s exited %d" % (cmd[0], code)
        raise DecompressError("corrupt or truncated %s stream: %s (%d bytes decompressed)"
                              % (fmt, why, size))
    os.ftruncate(fd, size)  # a trailing hole has no data to write


def tool_message(lines):
    """What a decompressor's last stderr line says, without who says it about what: the
    tools prefix their name and a name for stdin ("xz: (stdin): ", "gzip: stdin: ",
    zstd's "/*stdin*\\ : Read error (39) : ", lz4's "Error 68 : "), and the reason of a
    failed core is one line the user reads beside the core's path. '' for no message."""
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return ""
    parts = [p for p in re.split(r"\s*:\s+", lines[-1]) if p]
    while len(parts) > 1 and re.fullmatch(r"ERROR_\w+", parts[-1]):
        parts.pop()  # lz4's symbolic name after its words ("Decompression error : ERROR_...")
    text = parts[-1] if parts else lines[-1]
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text
