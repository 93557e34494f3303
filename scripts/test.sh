#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The full test suite on a fresh Debian 12 machine: dependencies, build, fixture cores of all
# architectures, ctest (unit + integration), then the robustness suite
# (sanitized unit tests and the fuzzers). EHBT_SKIP_ROBUSTNESS=1 stops after ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build="${EHBT_BUILD:-build}"
# The fixture cores of all three architectures, before any test reads them.
bash cores/make-cores.sh all
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
if [ "${EHBT_SKIP_ROBUSTNESS:-0}" != 1 ]; then
  bash scripts/robustness.sh
fi
