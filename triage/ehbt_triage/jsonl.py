# SPDX-License-Identifier: Apache-2.0
"""--jsonl FILE: one JSON object per core of the run, in the order the cores finished.

    {"core": path, "sha256": hex, "status": "ok"|"failed"|"seen_before",
     "executable": str|null, "signal": {"number", "name", "code", "address"}|null,
     "signature": str|null, "bucket": int|null,
     "crashing_thread": {"tid": int, "frames": [ehbt-backtrace/1 frames]}|null,
     "stop_reason": str|null, "error": str|null,
     "partial": bool, "unreliable": bool, "missing_modules": [path],
     "warnings": [{"kind", "message", ...}], "core_time": float|null,
     "compression": "zstd"|"xz"|"lz4"|"gzip"|null, "process_name": str|null,
     "uid": int|null, "boot_id": str|null, "pid": int|null}

partial: the crashing thread's walk stopped before its outermost frame. unreliable: no frame
of the signature is named. The last four come from a systemd-coredump file name (null for
other names); core_time is that name's time, else the file's mtime.

`signal` is the ehbt-backtrace/1 signal object. A core seen before gets what the database
kept for it (its frames there carry the stored columns). Each line is flushed as it is
written, so the file is usable even if the run is stopped.
"""

import json


class JsonlWriter:
    def __init__(self, path, append=False):
        # append: `watch` adds to the file across restarts (and reopens it on SIGHUP).
        self.f = open(path, "a" if append else "w", encoding="utf-8")

    def write(self, obj):
        self.f.write(json.dumps(obj, sort_keys=True) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


EXTRA_KEYS = ("core_time", "compression", "process_name", "uid", "boot_id", "pid")


def record(core, sha256=None, status="ok", executable=None, signal=None, signature=None,
           bucket=None, tid=None, frames=None, stop_reason=None, error=None, info=None,
           unreliable=False, missing_modules=(), warnings=()):
    """One line; `info`: the core's info dict (its EXTRA_KEYS are copied, null when absent)."""
    from .signature import is_partial

    thread = None if frames is None else {"tid": tid, "frames": frames}
    rec = {"core": core, "sha256": sha256, "status": status, "executable": executable,
           "signal": signal, "signature": signature, "bucket": bucket,
           "crashing_thread": thread, "stop_reason": stop_reason, "error": error,
           "partial": status != "failed" and is_partial(stop_reason),
           "unreliable": bool(unreliable), "missing_modules": list(missing_modules or ()),
           "warnings": list(warnings or ())}
    for key in EXTRA_KEYS:
        rec[key] = (info or {}).get(key)
    return rec
