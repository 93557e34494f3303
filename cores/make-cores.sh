#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the fixture programs, crashes them into cores/out/<arch>/<name>.core and writes the
# expected frames next to them (<name>.expected.json). Usage: make-cores.sh [x86_64|aarch64|s390x|i386|all]...
# Extra options go to make_cores.py (--only NAME,... ; -j N). See cores/README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ulimit -c unlimited
exec /usr/bin/python3 "$here/make_cores.py" "${@:-x86_64}"
