#!/usr/bin/env bash
# The full test suite on a fresh Debian 12 machine: dependencies, build, fixture cores, ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build="${EHBT_BUILD:-build}"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
