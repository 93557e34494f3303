# SPDX-License-Identifier: Apache-2.0
"""systemd-coredump spool names: ``core.COMM.UID.BOOTID.PID.USEC[.zst|.xz|.lz4]``.

systemd-coredump writes COMM, UID, PID and USEC through its filename escape (every ``.``,
``/`` and space, a backslash and bytes outside printable ASCII become ``\\xNN``), so a literal
dot never appears inside a field it wrote. The name is still read from the right -- suffix,
USEC, PID, a 32-hex-digit BOOTID, UID -- so that COMM is whatever is left between ``core.`` and
UID, even when a hand-copied spool holds a name with dots in COMM. USEC is microseconds since
the epoch (systemd appends six zeros to the kernel's seconds).

A name that does not have exactly this shape yields None: its fields stay null, never guessed.
"""

import re

DEFAULT_DIR = "/var/lib/systemd/coredump"

_NAME = re.compile(r"core\.(?P<comm>.+)\.(?P<uid>[0-9]+)\.(?P<boot_id>[0-9a-f]{32})"
                   r"\.(?P<pid>[0-9]+)\.(?P<usec>[0-9]+)(?:\.(?P<ext>zst|xz|lz4))?")
_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")
# Larger would be after the year 9999: not a time systemd wrote.
_MAX_USEC = 253402300800 * 1000000


def unescape(text):
    """systemd's ``\\xNN`` escapes undone; the bytes read as UTF-8 (bad bytes replaced)."""
    raw = _ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), text.encode("utf-8",
                                                                         "surrogateescape"))
    return raw.decode("utf-8", "replace")


def parse_name(basename):
    """{"process_name", "uid", "boot_id", "pid", "core_time" (seconds, float), "compression"}
    of a systemd-coredump file name, or None when the name is not one."""
    m = _NAME.fullmatch(basename)
    if not m:
        return None
    usec = int(m.group("usec"))
    if usec > _MAX_USEC:
        return None
    return {"process_name": unescape(m.group("comm")), "uid": int(m.group("uid")),
            "boot_id": m.group("boot_id"), "pid": int(m.group("pid")),
            "core_time": usec / 1e6, "compression": {"zst": "zstd"}.get(m.group("ext"),
                                                                        m.group("ext"))}


def escape(name):
    """COMM as systemd-coredump writes it into a file name (for fixtures and tests)."""
    out = []
    for b in name.encode("utf-8"):
        c = chr(b)
        if c in "./ \\" or b < 0x20 or b >= 0x7f:
            out.append("\\x%02x" % b)
        else:
            out.append(c)
    return "".join(out)
