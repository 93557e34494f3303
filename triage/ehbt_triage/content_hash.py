# SPDX-License-Identifier: Apache-2.0
"""The content key that identifies a core ("seen before"): SHA-256 of its sparse form.

A core of a process with many threads is mostly holes: a CPython core with 16 threads is
140 MB long and 4 MB on disk. Hashing every byte costs ~1 s per core, 50x the unwinding.
So the hash covers the content in a canonical form that does not depend on how the file is
stored, and that can be read from the data extents alone:

    sha256( b"ehbt-sparse-sha256/<version> <size>\\n"
            + for every block (offset, bytes) that is not all zeros, in file order:
                  <offset as 8 bytes little-endian> + <the block's bytes> )

Blocks are 4 KiB in version 2 and 64 KiB in version 1; the last block is shorter when the
size is not a multiple. Equal content gives an equal hash whether the file is sparse or not
(`cp --sparse=never` copies match), and any change of a byte or of the size changes it. It is
NOT `sha256sum`'s value.

Version 2 hashes only the pages that hold data (a 16-thread CPython core: 3.9 MB, where
version 1's 64 KiB blocks hash 6.6 MB; 3.4 ms instead of 5.3). The two versions of one content
differ, so a store keeps the version it was made with (store.py: meta ``content_key``): a store
of version-1 keys, made before version 2 existed, goes on getting version-1 keys.

The engine computes it (``ehbt.content_key``: C++, OpenSSL's SHA-256, the GIL released) when
the ehbt package is importable; the Python code below is the same definition for the CLI
fallback (and the reference the tests hold the engine to). That fallback is a real mode, not
a leftover: a build without the Python module (-DEHBT_PYTHON=OFF) still installs ehbt-triage,
which then analyses with the ``ehbt`` binary (engine.py) and keys cores here.
"""

import errno
import os
import struct

KEY_VERSION = 2  # what a new store uses
BLOCKS = {1: 1 << 16, 2: 1 << 12}  # version -> block size
_CHUNK = 1 << 20  # read 1 MiB at a time: whole blocks of either version
_OFFSET = struct.Struct("<Q")


def prefix(version):
    return b"ehbt-sparse-sha256/%d" % version


def _data_extents(fd, size):
    """[(start, end)] of the file's data (SEEK_DATA/SEEK_HOLE); the whole file when the
    filesystem cannot tell."""
    extents = []
    pos = 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after pos
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            extents.append((start, min(end, size)))
            pos = end
    except (OSError, AttributeError):
        return [(0, size)]
    return extents


def _touched_runs(extents, size, block):
    """[(start, end)]: maximal runs of whole blocks (the last one may be short) that some
    data extent touches, in file order."""
    runs = []
    for start, end in extents:
        lo = start - start % block
        hi = min(size, -(-end // block) * block)
        if runs and lo <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], hi))
        elif hi > lo:
            runs.append((lo, hi))
    return runs


QUIET_NS = 1_000_000_000  # a file changed this recently is not given an identity


def file_identity(st, now_ns=None):
    """"dev:ino:size:mtime_ns:ctime_ns" of an os.stat result: what lets a later run skip the
    hash of a core it stored (same path and identity as recorded: the same inode, unchanged).

    Why it proves that: any write to the file, a truncation, a chmod or a rename sets its
    ctime to the current time, which no caller can choose; another file at the path has
    another inode, or else (the inode number reused after a delete) a ctime of its creation.
    Timestamps are coarse (a kernel tick), so a change in the same tick as the stat recorded
    could keep the ctime: with `now_ns` (when the stat was taken, before the file was hashed)
    a file changed less than QUIET_NS before it gets no identity (None), and every later
    change lands at least that much after the recorded ctime."""
    if now_ns is not None and now_ns - st.st_ctime_ns < QUIET_NS:
        return None
    return "%d:%d:%d:%d:%d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                               st.st_ctime_ns)


def sparse_sha256(path, version=KEY_VERSION):
    """The hex digest described above: by the engine when it is importable, else by
    python_sparse_sha256. Raises OSError, or ValueError for an unknown version."""
    if version not in BLOCKS:
        raise ValueError("no content key version %r" % (version,))
    engine_key = _engine_key()
    if engine_key is not None:
        return engine_key(os.fspath(path), version=version)
    return python_sparse_sha256(path, version)


def start_key_job(path, version, then):
    """The key computed on a native thread of the engine's (ehbt.ContentKeyJob): then(digest,
    error) is called there once it is known, with the GIL held; the job's wait() returns after
    that. None when the engine cannot (no package, or one without jobs): then the caller
    computes the key itself. A worker hashes a core this way while it analyses it, without
    Python's threading module (about 2 ms to import in a fresh worker)."""
    if version not in BLOCKS:
        raise ValueError("no content key version %r" % (version,))
    if _engine_key() is None:
        return None
    try:
        from ehbt import ContentKeyJob
    except ImportError:  # a package from before jobs
        return None
    return ContentKeyJob(os.fspath(path), then, version=version)


_ENGINE_KEY = []  # [ehbt.content_key or None], once looked up


def _engine_key():
    if not _ENGINE_KEY:
        try:
            from ehbt import content_key

            # A package from before versioned keys has no `version`: not usable.
            if "version" not in (content_key.__doc__ or "").split("\n", 1)[0]:
                content_key = None
        except Exception:  # no package, an older one, or a broken extension
            content_key = None
        _ENGINE_KEY.append(content_key)
    return _ENGINE_KEY[0]


def python_sparse_sha256(path, version=KEY_VERSION, length=None):
    """The hex digest described above, in Python; with `length`, the digest the file's first
    `length` bytes would have as a file of their own (None when the file is shorter): whether
    a core stored before is the beginning of this one (run.Run: a core taken while it was
    still being written).

    Only the data extents are read: the parts of a touched block that lie in a hole are zeros
    by definition and are filled in, not read (reading a hole makes the kernel allocate and
    zero page-cache pages, which cost as much as the hash itself on many-thread cores).
    Everything happens in one reusable 1 MiB buffer (os.preadv into it, blocks compared with
    zeros in place by bytearray.startswith, memoryview slices hashed): no allocation or copy
    per chunk."""
    import hashlib  # only here: loading OpenSSL costs every run that does not need it

    h = hashlib.sha256()
    # The buffer is reused across calls: a fresh 1 MiB object is mmap()ed by malloc and
    # page-faulted in every time (on a VM that costs as much as hashing it).
    buf = _spare_buffers.pop() if _spare_buffers else bytearray(_CHUNK)
    try:
        return _hash_into(path, h, buf, version, length)
    finally:
        _spare_buffers.append(buf)


_spare_buffers = []  # list.pop/append are atomic: concurrent callers get distinct buffers
_ZEROS = memoryview(bytes(_CHUNK))  # slices of a memoryview are not copies


def _hash_into(path, h, buf, version, length=None):
    block = BLOCKS[version]
    zero_block = bytes(block)
    view = memoryview(buf)
    zeros = _ZEROS
    pack = _OFFSET.pack
    # O_NONBLOCK: a path swapped for a FIFO since discovery must not block this worker.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb", buffering=0) as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        if length is not None:
            if length > size:
                return None
            size = length
        h.update(b"%s %d\n" % (prefix(version), size))
        extents = _data_extents(fd, size)
        e = 0  # first extent that may still overlap the chunk
        for run_lo, run_hi in _touched_runs(extents, size, block):
            for lo in range(run_lo, run_hi, len(buf)):
                hi = min(run_hi, lo + len(buf))
                filled = lo  # bytes of the chunk before this offset are in buf
                while e < len(extents) and extents[e][1] <= lo:
                    e += 1
                k = e
                while k < len(extents) and extents[k][0] < hi:
                    a, b = max(extents[k][0], lo), min(extents[k][1], hi)
                    if a > filled:
                        view[filled - lo:a - lo] = zeros[:a - filled]
                    while a < b:  # a short read is retried; none at all is end of file
                        got = os.preadv(fd, [view[a - lo:b - lo]], a)
                        if got <= 0:
                            break
                        a += got
                    filled = max(filled, a)
                    if extents[k][1] > hi:
                        break  # continues into the next chunk
                    k += 1
                if hi > filled:
                    view[filled - lo:hi - lo] = zeros[:hi - filled]
                for i in range(0, hi - lo, block):
                    n = min(block, hi - lo - i)
                    if not buf.startswith(zero_block[:n] if n < block else zero_block, i, i + n):
                        h.update(pack(lo + i))
                        h.update(view[i:i + n])
    return h.hexdigest()
