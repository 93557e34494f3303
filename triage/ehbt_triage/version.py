# SPDX-License-Identifier: Apache-2.0
"""The version ehbt-triage reports: the project's, which lives in the top-level CMakeLists.txt
(``project(ehbt VERSION X.Y.Z ...)``).

Installed, CMake has written it into ``_version.py`` beside this file (see
triage/CMakeLists.txt); run from the source tree, it is read from CMakeLists.txt itself, so
the two can never disagree.
"""

import os

_cached = None


def version():
    global _cached
    if _cached is None:
        _cached = _find()
    return _cached


def _find():
    try:
        from ._version import VERSION  # written at configure time, installed with the package

        return VERSION
    except ImportError:
        pass
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    try:
        import re  # only here: an installed package never needs it

        with open(top) as f:
            m = re.search(r"project\(\s*ehbt\s+VERSION\s+([0-9][0-9.]*)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return "unknown"
