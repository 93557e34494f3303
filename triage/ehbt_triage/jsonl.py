# SPDX-License-Identifier: Apache-2.0
"""--jsonl FILE: one JSON object per core of the run, in the order the cores finished.

    {"core": path, "sha256": hex, "status": "ok"|"failed"|"seen_before",
     "executable": str|null, "signal": {"number", "name", "code", "address"}|null,
     "signature": str|null, "bucket": int|null,
     "crashing_thread": {"tid": int, "frames": [ehbt-backtrace/1 frames]}|null,
     "stop_reason": str|null, "error": str|null}

`signal` is the ehbt-backtrace/1 signal object. A core seen before gets what the database
kept for it (its frames there carry the stored columns). Each line is flushed as it is
written, so the file is usable even if the run is stopped.
"""

import json


class JsonlWriter:
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")

    def write(self, obj):
        self.f.write(json.dumps(obj, sort_keys=True) + "\n")
        self.f.flush()

    def close(self):
        self.f.close()


def record(core, sha256=None, status="ok", executable=None, signal=None, signature=None,
           bucket=None, tid=None, frames=None, stop_reason=None, error=None):
    thread = None if frames is None else {"tid": tid, "frames": frames}
    return {"core": core, "sha256": sha256, "status": status, "executable": executable,
            "signal": signal, "signature": signature, "bucket": bucket,
            "crashing_thread": thread, "stop_reason": stop_reason, "error": error}
