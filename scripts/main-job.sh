#!/usr/bin/env bash
# The main job: dependencies, build, generate the sample cores, and backtrace them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build="${EHBT_BUILD:-build}"
if [ -x cores/make-cores.sh ]; then
  bash cores/make-cores.sh x86_64
  for core in cores/out/x86_64/*.core; do
    [ -e "$core" ] || continue
    echo "== $core"
    "$build/engine/tools/ehbt" core "$core" || true
  done
fi
