#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds ehbt into build/ (or $EHBT_BUILD). Extra args go to cmake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${EHBT_BUILD:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHBT_PYTHON=ON \
  -DPython3_EXECUTABLE=/usr/bin/python3 "$@"
cmake --build "$build" -j"$(nproc)"
