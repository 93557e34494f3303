# SPDX-License-Identifier: Apache-2.0
"""A systemd-coredump spool from the fixture cores (cores/out/<arch>/<name>.core).

systemd-coredump stores a core as /var/lib/systemd/coredump/core.COMM.UID.BOOTID.PID.USEC
followed by .zst, .xz or .lz4 when it compressed it (zstd on current distributions, xz and
lz4 on older ones; none with Compress=no). COMM goes through its file-name escape ('.', '/',
space, backslash and non-ASCII bytes as \\xNN); BOOTID is the boot id without dashes; USEC is
the kernel's %t (seconds) with six zeros appended. This script writes such names with the
compression command-line tools, and spool.json describing each file: what the name encodes
(the process name, uid, boot id, pid -- the crashing process's main thread as GDB listed
it -- and the time), which fixture core it holds, and how it is compressed.

Also in the spool: the chain core both plain and as .zst (one core, two files: triage must
count it once), a process name with a dot and a slash, and a core under a name that is not
systemd's (triaged with its name fields null). Core times are one or more days apart, so that
per-day trends have something to show; the files' mtimes are set far from them, so that a
reader using the mtime is caught.
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
TOOLS = {"zstd": (["zstd", "-q", "-c", "-T1"], ".zst"), "xz": (["xz", "-c", "-T1"], ".xz"),
         "lz4": (["lz4", "-q", "-c"], ".lz4"), None: (None, "")}
DAY = 86400
BASE = 1796083200  # 2026-12-01 00:00 UTC: the core times count back from here
MTIME = 1000000000  # 2001-09-09: every file's mtime, never a core time

# (arch, fixture name, process name as the kernel reports it, compression, days back)
PLAN = [("x86_64", "chain", "chain", "zstd", 0),
        ("x86_64", "chain", "chain", None, 0),  # the same core uncompressed (dedup)
        ("x86_64", "noreturn", "noreturn", "xz", 1),
        ("x86_64", "threads", "threads", "lz4", 2),
        ("x86_64", "terminate", "terminate", None, 2),
        ("x86_64", "overflow", "my.app/v2", "zstd", 3),
        ("aarch64", "chain", "chain", "zstd", 4),
        ("s390x", "noreturn", "noreturn", "xz", 5)]
UNNAMED = ("x86_64", "sighandler", "zstd")  # stored as crash-sighandler.core.zst


def escape(name):
    out = []
    for b in name.encode("utf-8"):
        c = chr(b)
        out.append("\\x%02x" % b if c in "./ \\" or b < 0x20 or b >= 0x7f else c)
    return "".join(out)


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip().replace("-", "")


def write(src, dest, fmt):
    cmd, _ = TOOLS[fmt]
    if cmd is None:
        shutil.copyfile(src, dest)
    else:
        with open(dest, "wb") as out:
            subprocess.run(cmd + [src], stdout=out, check=True)
    os.utime(dest, (MTIME, MTIME))


def main(argv):
    dest = argv[0] if argv else os.path.join(OUT, "spool")
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    boot, uid = boot_id(), os.getuid()
    manifest = {}
    for n, (arch, name, comm, fmt, days) in enumerate(PLAN):
        core = os.path.join(OUT, arch, name + ".core")
        expected = os.path.join(OUT, arch, name + ".expected.json")
        if not (os.path.exists(core) and os.path.exists(expected)):
            sys.stderr.write("make-spool: skipping %s/%s (run make-cores.sh %s)\n"
                             % (arch, name, arch))
            continue
        with open(expected) as f:
            pid = min(t["tid"] for t in json.load(f)["threads"])  # the main thread's tid
        usec = (BASE - days * DAY + 3600 + n) * 1000000
        fname = "core.%s.%d.%s.%d.%d%s" % (escape(comm), uid, boot, pid, usec, TOOLS[fmt][1])
        write(core, os.path.join(dest, fname), fmt)
        manifest[fname] = {"arch": arch, "fixture": name, "process_name": comm, "uid": uid,
                           "boot_id": boot, "pid": pid, "core_time": usec / 1e6,
                           "compression": fmt}
    arch, name, fmt = UNNAMED
    core = os.path.join(OUT, arch, name + ".core")
    if os.path.exists(core):
        fname = "crash-%s.core%s" % (name, TOOLS[fmt][1])
        write(core, os.path.join(dest, fname), fmt)
        manifest[fname] = {"arch": arch, "fixture": name, "process_name": None, "uid": None,
                           "boot_id": None, "pid": None, "core_time": None, "compression": fmt}
    with open(os.path.join(dest, "spool.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("spool: %d cores in %s" % (len(manifest), dest))


if __name__ == "__main__":
    main(sys.argv[1:])
