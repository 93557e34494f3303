"""The content hash that identifies a core ("seen before"): SHA-256 of its sparse form.

A core of a process with many threads is mostly holes: a CPython core with 16 threads is
140 MB long and 4 MB on disk. Hashing every byte costs ~1 s per core, 50x the unwinding.
So the hash covers the content in a canonical form that does not depend on how the file is
stored, and that can be read from the data extents alone:

    sha256( b"ehbt-sparse-sha256/1 <size>\\n"
            + for every 64 KiB block (offset, bytes) that is not all zeros, in file order:
                  <offset as 8 bytes little-endian> + <the block's bytes> )

The last block is shorter when the size is not a multiple of 64 KiB. Equal content gives an
equal hash whether the file is sparse or not (`cp --sparse=never` copies match), and any
change of a byte or of the size changes it. It is NOT `sha256sum`'s value.
"""

import errno
import hashlib
import os
import struct

BLOCK = 1 << 16
_CHUNK_BLOCKS = 16  # read 1 MiB at a time
_ZERO = bytes(BLOCK)
PREFIX = b"ehbt-sparse-sha256/1"


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


def sparse_sha256(path):
    """The hex digest described above."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        h.update(b"%s %d\n" % (PREFIX, size))
        next_block = 0  # first offset not yet hashed: extents sharing a block hash it once
        for start, end in _data_extents(fd, size):
            pos = max(start - start % BLOCK, next_block)
            stop = min(size, -(-end // BLOCK) * BLOCK)  # the extent's last block, whole
            while pos < stop:
                f.seek(pos)
                chunk = f.read(min(_CHUNK_BLOCKS * BLOCK, stop - pos))
                if not chunk:
                    break
                for i in range(0, len(chunk), BLOCK):
                    block = chunk[i:i + BLOCK]
                    if block != _ZERO[:len(block)]:
                        h.update(struct.pack("<Q", pos + i))
                        h.update(block)
                pos += len(chunk)
            next_block = max(next_block, pos)
    return h.hexdigest()
