#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes cores/out/spool/: a systemd-coredump spool built from the fixture cores (run
# make-cores.sh first), named and compressed as systemd-coredump does. Usage:
# make-spool.sh [OUTDIR]. See cores/README.md ("A systemd-coredump spool").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec /usr/bin/python3 "$here/make_spool.py" "$@"
