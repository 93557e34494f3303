# SPDX-License-Identifier: Apache-2.0
"""Prints the directory, relative to PREFIX, where Python packages installed under PREFIX are
imported from by this interpreter (ehbt's CMake install runs it with /usr/bin/python3).

Debian's python3 searches PREFIX/lib/python3/dist-packages for PREFIX=/usr but
/usr/local/lib/python3.X/dist-packages for /usr/local; site.getsitepackages() lists exactly
the directories it searches. For a prefix it does not search at all (/opt/ehbt, a test
directory) the answer is lib/python3/dist-packages, where ehbt's own scripts look first.

Usage: python3 python_site_dir.py PREFIX
"""
import os
import site
import sys

DEFAULT = os.path.join("lib", "python3", "dist-packages")


def site_dir(prefix):
    prefix = os.path.normpath(prefix)
    mine = [os.path.relpath(d, prefix) for d in site.getsitepackages()
            if os.path.normpath(d).startswith(prefix + os.sep)]
    if DEFAULT in mine or not mine:
        return DEFAULT
    return mine[0]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python_site_dir.py PREFIX")
    print(site_dir(sys.argv[1]))
