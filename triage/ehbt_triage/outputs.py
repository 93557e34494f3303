# SPDX-License-Identifier: Apache-2.0
"""Checks an output path (--html, --jsonl) before any work starts, without creating it: a
report that cannot be written should fail the run in its first second, not after the batch.
"""

import os
import stat


def check_output(path):
    """None when `path` can be written as a regular file, else why not (in words)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            return "directory %s does not exist" % parent
        if not os.access(parent, os.W_OK | os.X_OK):
            return "directory %s is not writable" % parent
        return None
    except OSError as e:
        return e.strerror or str(e)
    if not stat.S_ISREG(st.st_mode):
        # Opening a FIFO for writing would block until a reader came; a directory cannot be
        # written; a device is not a report.
        return "exists and is not a regular file"
    if not os.access(path, os.W_OK):
        return "not writable"
    return None
